"""Unnormalised log-densities ``log_prob(x) -> (C,)``, differentiable in x."""

from gradmc.targets.abc_skew_normal import ABCSkewNormalPosterior, SkewNormalSimulator
from gradmc.targets.continuous import Banana, Gaussian, random_gamma_gaussian
from gradmc.targets.fhmm import FactorialHMM, FHMMPosterior
from gradmc.targets.gp_classification import GPClassificationPosterior
from gradmc.targets.ising import THETA_CRITICAL, DenseIsing, ErdosRenyiIsing, LatticeIsing
from gradmc.targets.potts import LatticePotts, Potts
from gradmc.targets.rbm import RBM

__all__ = [
    "RBM",
    "LatticeIsing",
    "DenseIsing",
    "ErdosRenyiIsing",
    "THETA_CRITICAL",
    "Potts",
    "LatticePotts",
    "FactorialHMM",
    "FHMMPosterior",
    "Gaussian",
    "Banana",
    "random_gamma_gaussian",
    "GPClassificationPosterior",
    "ABCSkewNormalPosterior",
    "SkewNormalSimulator",
]
