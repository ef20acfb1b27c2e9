"""States for a tighter deterministic lower bound on log Z: a low-temperature search for an EBM's modes.

:func:`gradmc.evaluation.ais.log_z_lower_bound` holds for ANY set of distinct states, and is tight only if the
set holds the states that carry the model's mass. A model trained with a poorly mixing sampler (the equal-time
Gibbs-1 EBM of GWG Table 2) can put its mass on states far from the data and the replay buffer, where AIS never
arrives (its estimate of log Z then comes out tens of nats too low, and the log-likelihood too high). This module
climbs from the best known states with GWG (Grathwohl et al. 2021, Alg. 1) on the tempered target f(x) / T,
T < 1, and returns every state it visits, so the bound can count them. The search never changes what the bound
means: it only adds states, and more states can only raise the bound (and lower the hard upper bound on the
test log-likelihood, mean f(x_test) - bound).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

__all__ = ["search_modes"]


def _compact(x: torch.Tensor) -> torch.Tensor:
    """(C, D) binary floats -> bool; (C, D, K) one-hot floats -> (C, D) level indices (int64), on x's device."""
    return x.detach().argmax(-1) if x.dim() == 3 else x.detach().bool()


def search_modes(log_f: Callable[[torch.Tensor], torch.Tensor], start: torch.Tensor, sampler, steps: int,
                 temperature: float, generator: torch.Generator | None = None) -> torch.Tensor:
    """Every state visited by ``sampler`` on the tempered target f(x) / temperature, started at ``start``.

    Args:
        log_f: unnormalised log-density f, (C, ...) -> (C,), differentiable in x for gradient-based samplers.
        start: (C, D) binary or (C, D, K) one-hot float states, one chain each (e.g. the highest-f known states).
        sampler: a discrete kernel with ``init(x, log_prob)`` and ``step(state, log_prob, generator)`` (GWG; the
            categorical GWG for one-hot states).
        steps: sampler steps (>= 0; 0 returns ``start``).
        temperature: T > 0 (finite); T < 1 sharpens the target towards its modes, T = 1 samples the model.
        generator: random generator of the sampler.

    Returns:
        The states, start included, in visit order, on ``start``'s device, duplicates kept
        (:func:`gradmc.evaluation.ais.log_z_lower_bound` drops them): ((steps + 1) * C, D) bool for binary
        states; ((steps + 1) * C, D) int64 level indices for one-hot states (compact: the one-hot rows of a
        256-level search would take K times the memory).

    Raises:
        ValueError: steps < 0 or not an integer, temperature not a finite number > 0, no start states, or a
            non-finite f value at the last states (the model returned NaN / inf; the bound then checks every
            state it counts).
    """
    if int(steps) != steps or steps < 0:
        raise ValueError(f"steps must be an integer >= 0, got {steps!r}")
    if not (isinstance(temperature, (int, float)) and math.isfinite(temperature) and temperature > 0):
        raise ValueError(f"temperature must be a finite number > 0, got {temperature!r}")
    if start.shape[0] < 1:
        raise ValueError("search_modes needs at least one start state")
    scale = 1.0 / float(temperature)

    def tempered(x: torch.Tensor) -> torch.Tensor:
        return log_f(x) * scale

    visited = [_compact(start)]
    if steps == 0:
        return visited[0]
    with torch.enable_grad():
        state = sampler.init(start.detach().clone(), tempered)
        for _ in range(int(steps)):
            state, _ = sampler.step(state, tempered, generator)
            visited.append(_compact(state.x))
    with torch.no_grad():
        last = log_f(state.x.detach())
    if not bool(torch.isfinite(last).all()):
        raise ValueError(f"search_modes: {int((~torch.isfinite(last)).sum())} non-finite f values at the last states")
    return torch.cat(visited)
