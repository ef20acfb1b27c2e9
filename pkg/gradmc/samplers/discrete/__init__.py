"""Discrete samplers of the GWG paper: binary states (C, D) floats in {0, 1}, categorical one-hot (C, D, K)."""

from gradmc.samplers.discrete.acs import ACS, ACSKernel
from gradmc.samplers.discrete.block_gibbs import RBMBlockGibbs
from gradmc.samplers.discrete.categorical_gibbs import CategoricalGibbs
from gradmc.samplers.discrete.chromatic_gibbs import ChromaticGibbs
from gradmc.samplers.discrete.factorised import (
    DLMC,
    DMALA,
    DULA,
    DLMCCategorical,
    DLMCEuler,
    DMALACategorical,
    DULACategorical,
)
from gradmc.samplers.discrete.gibbs import Gibbs
from gradmc.samplers.discrete.gwg import GWG
from gradmc.samplers.discrete.gwg_categorical import GWGCategorical
from gradmc.samplers.discrete.gwg_multi import GWGMulti
from gradmc.samplers.discrete.hamming_ball import BlockHammingBall, HammingBall
from gradmc.samplers.discrete.pas import PAS
from gradmc.samplers.discrete.pas_wor import PASWithoutReplacement
from gradmc.samplers.discrete.registry import CATEGORICAL_SAMPLERS, SAMPLERS, make_sampler
from gradmc.samplers.discrete.rwm import RandomWalkMetropolis

__all__ = [
    "GWG", "GWGMulti", "PAS", "PASWithoutReplacement", "GWGCategorical", "Gibbs", "CategoricalGibbs", "HammingBall",
    "BlockHammingBall",
    "RandomWalkMetropolis", "RBMBlockGibbs", "ChromaticGibbs",
    "DMALA", "DULA", "DLMC", "DLMCEuler", "DMALACategorical", "DULACategorical", "DLMCCategorical", "ACS", "ACSKernel",
    "SAMPLERS", "CATEGORICAL_SAMPLERS", "make_sampler",
]
