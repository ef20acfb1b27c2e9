"""Gradient samplers on the continuous relaxation of binary targets (GWG paper Sec. 5, Fig. 2, Appendix C).

R-MALA and R-HMC are exact MCMC kernels on z in R^D with target N(z; 0, I) p(1[z > 0]); D-SVGD is a
particle method. All report the bits x = 1[z > 0] (``state.x`` or ``Sampler.bits(state)``).
Start them from bits with ``sampler.init(x, log_prob, generator)`` (z = ``z_from_bits(x, generator)``, the
paper's initialisation), or from a given relaxed state with ``sampler.init_from_z(x, log_prob, z)``.
"""

from gradmc.samplers.relaxed.dsvgd import DSVGD, DSVGDState
from gradmc.samplers.relaxed.rhmc import RHMC
from gradmc.samplers.relaxed.rmala import RMALA
from gradmc.samplers.relaxed.surrogate import (
    RelaxedState,
    bits_from_z,
    relaxed_log_prob,
    surrogate_log_prob,
    surrogate_log_prob_and_grad,
    z_from_bits,
)

__all__ = [
    "DSVGD",
    "DSVGDState",
    "RHMC",
    "RMALA",
    "RelaxedState",
    "bits_from_z",
    "relaxed_log_prob",
    "surrogate_log_prob",
    "surrogate_log_prob_and_grad",
    "z_from_bits",
]
