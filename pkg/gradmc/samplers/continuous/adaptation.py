"""Vanishing adaptation for history-based kernels (KMC Alg. 1 line 1; KAMH Sec. 4.2; Roberts & Rosenthal 2007).

KMC and KAMH build their proposals from the chain history. Adapting at every step would break
pi-invariance; stopping adaptation is exact but freezes what was learned. The KMC paper (Sec. 3) instead
adapts with a probability a_t that vanishes, lim a_t = 0, while sum_t a_t = inf (adaptation never stops
entirely). We use a_t = (t + 1)^-decay with 0 < decay <= 1 (decay 1/2: the paper's example
a_t = 1 / sqrt(t + 1)); the expected number of adaptations in T steps is about T^(1 - decay) / (1 - decay).

Between two adaptations the kernel is fixed, so every step is an exact pi-invariant MH transition.
"""

from __future__ import annotations

import math

import torch

__all__ = ["adaptation_probability", "should_adapt"]


def adaptation_probability(t: int, decay: float = 0.5) -> float:
    """a_t = (t + 1)^-decay for step t >= 0 (a_0 = 1).

    Raises:
        ValueError: t < 0 or decay not in (0, 1] (decay > 1 would make sum a_t finite: adaptation would
            stop for good after finitely many steps, which is exact but no longer "vanishing").
    """
    if int(t) != t or t < 0:
        raise ValueError(f"step t must be an integer >= 0, got {t!r}")
    if not (isinstance(decay, (int, float)) and 0.0 < decay <= 1.0 and math.isfinite(decay)):
        raise ValueError(f"decay must be in (0, 1] so that sum_t a_t diverges, got {decay!r}")
    return float((t + 1) ** -decay)


def should_adapt(t: int, generator: torch.Generator, decay: float = 0.5) -> bool:
    """Draw u ~ U[0, 1) from ``generator`` (one CPU draw) and return u < a_t (Alg. 1, line 1)."""
    u = float(torch.rand((), generator=generator, device=generator.device))
    return u < adaptation_probability(t, decay)
