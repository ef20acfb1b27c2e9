"""Multi-sample Gibbs-With-Gradients, GWG-N (GWG paper Appendix D.2, Eq. 27, Fig. 9).

Draw N indices i_1..i_N i.i.d. from q(. | x) = softmax(d(x) / T) WITH replacement; flip every distinct
drawn index once; accept with

    min(1, exp(f(x') - f(x)) prod_n q(i_n | x') / prod_n q(i_n | x))          (Eq. 27, density="draws")

The reverse move is the same draw sequence under q(. | x'): it flips the same set and returns to x, so
this is exact Metropolis-Hastings on (state, draws) -- see ``flips.py`` for the argument and for the
alternative ``density="set"`` (marginal probability of the flipped set, higher acceptance, same cost).
The paper uses N = 3 and N = 5; N = 1 is GWG.
"""

from __future__ import annotations

from dataclasses import dataclass

from gradmc.sampler_catalog import register_sampler
from gradmc.samplers.discrete.flips import DENSITIES
from gradmc.samplers.discrete.gwg import GradientFlipMH, GWGState

__all__ = ["GWGMulti", "GWGState"]


@register_sampler("GWG-{num_draws}", colour={"GWG-3": "tab:purple", "GWG-5": "tab:brown"}, order=31,
                  examples=("GWG-3",), doc="GWG with N draws per step (Appendix D.2)")
@dataclass(frozen=True)
class GWGMulti(GradientFlipMH):
    """GWG-N: N gradient-informed draws with replacement per step, one MH test.

    Args:
        num_draws: N >= 1 (the paper's GWG-3, GWG-5).
        temperature: T > 0 of q(i|x) = softmax(d(x) / T), 2 in the paper.
        density: "draws" (the paper's Eq. 27, default) or "set" (Rao-Blackwellised over the draws that
            give the same flipped set; costs 2**(N-1) extra terms per chain, no extra evaluations).

    Cost per step: 2 function+gradient evaluations (energy_evals=2, grad_evals=2), as GWG.
    Info.sites_changed is the number of distinct drawn indices (1..N) when accepted, else 0.

    Raises:
        ValueError: num_draws < 1, temperature <= 0 or an unknown density.
    """

    num_draws: int = 3
    temperature: float = 2.0
    density: str = "draws"

    def __post_init__(self):
        self._validate()
        if not (isinstance(self.num_draws, int) and self.num_draws >= 1):
            raise ValueError(f"GWGMulti num_draws must be an int >= 1, got {self.num_draws!r}")
        if self.density not in DENSITIES:
            raise ValueError(f"GWGMulti density must be one of {DENSITIES}, got {self.density!r}")
