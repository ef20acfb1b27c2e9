"""Discrete samplers of the GWG paper (binary states (C, D) floats in {0, 1})."""

from gradmc.samplers.discrete.block_gibbs import RBMBlockGibbs
from gradmc.samplers.discrete.gibbs import Gibbs
from gradmc.samplers.discrete.gwg import GWG
from gradmc.samplers.discrete.registry import SAMPLERS, make_sampler

__all__ = ["GWG", "Gibbs", "RBMBlockGibbs", "SAMPLERS", "make_sampler"]
