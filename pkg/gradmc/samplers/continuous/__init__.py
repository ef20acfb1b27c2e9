"""Continuous-space kernels of the Kernel HMC paper (docs/EXPERIMENTS.md Part B, B0).

Kernel contract (every kernel here): a frozen dataclass with ``init(x, log_prob, generator=None) -> state``
(x: (C, d); generator: a torch.Generator or None, used only by kernels that draw at init, e.g. the first
pseudo-marginal estimate) and ``step(state, log_prob, generator) -> (state, Info)``. A kernel never changes
what it holds: adaptation builds a new kernel value (``dataclasses.replace``).
"""

from gradmc.samplers.continuous.adaptation import adaptation_probability, should_adapt
from gradmc.samplers.continuous.adaptive_metropolis import AdaptiveMetropolis, AMState
from gradmc.samplers.continuous.common import ContinuousState
from gradmc.samplers.continuous.habc import HABC, synthetic_log_likelihood
from gradmc.samplers.continuous.hmc import HMC
from gradmc.samplers.continuous.kamh import KAMH, gaussian_log_density, kamh_covariance
from gradmc.samplers.continuous.kmc import KMC, Surrogate
from gradmc.samplers.continuous.pseudo_marginal import GaussianRandomWalkProposal, PseudoMarginalMH
from gradmc.samplers.continuous.rwm import GaussianRandomWalkMetropolis, adapt_log_scale

__all__ = [
    "ContinuousState",
    "HMC",
    "KMC",
    "Surrogate",
    "GaussianRandomWalkMetropolis",
    "adapt_log_scale",
    "adaptation_probability",
    "should_adapt",
    "AdaptiveMetropolis",
    "AMState",
    "PseudoMarginalMH",
    "GaussianRandomWalkProposal",
    "KAMH",
    "kamh_covariance",
    "gaussian_log_density",
    "HABC",
    "synthetic_log_likelihood",
]
