"""A sampler plugin as a researcher would write one, outside gradmc: a random-walk Metropolis kernel that flips
``num_flips`` distinct uniformly random bits per proposal (symmetric, so accepted with min(1, p(x') / p(x))).

It registers itself with :func:`gradmc.sampler_catalog.register_sampler`; the tests import it through
``GRADMC_SAMPLER_PLUGINS`` or a config's ``plugins:`` and show that it runs in the experiments, the bench, the
leaderboard's colours and the exactness check with no edit to gradmc. Like every kernel it draws through
:mod:`gradmc.core.streams`, whose ``generator`` may be one ``torch.Generator`` or one per block of chains.
``ToyBroken`` (no acceptance step) is the counter-example the exactness check must reject.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import torch

from gradmc.core import streams
from gradmc.sampler_catalog import register_sampler
from gradmc.samplers.base import Info


class ToyState(NamedTuple):
    x: torch.Tensor


def _proposal(x: torch.Tensor, num_flips: int, generator: torch.Generator) -> torch.Tensor:
    keys = streams.rand(x.shape, generator, device=x.device)
    flip = torch.zeros_like(x, dtype=torch.bool).scatter_(1, keys.topk(num_flips, dim=1).indices, True)
    return torch.where(flip, 1.0 - x, x)


@register_sampler("ToyMH-{num_flips}", colour="hotpink", examples=("ToyMH-1",), doc="toy random-walk MH plugin")
@dataclass(frozen=True)
class ToyMH:
    """Random-walk Metropolis with ``num_flips`` flips per proposal; x (C, D) floats in {0, 1}."""

    num_flips: int = 1

    def init(self, x: torch.Tensor, log_prob, generator: torch.Generator | None = None) -> ToyState:
        return ToyState(x.clone())

    def step(self, state: ToyState, log_prob, generator: torch.Generator) -> tuple[ToyState, Info]:
        x = state.x
        y = _proposal(x, self.num_flips, generator)
        with torch.no_grad():
            log_alpha = (log_prob(y) - log_prob(x)).clamp(max=0.0)
        accept = streams.rand(log_alpha.shape, generator, dtype=log_alpha.dtype).log() < log_alpha
        x_new = torch.where(accept[:, None], y, x)
        changed = (x_new != x).sum(dim=1)
        return ToyState(x_new), Info(log_alpha.exp(), accept, changed, energy_evals=2, grad_evals=0)


@register_sampler("ToyBroken", in_groups=False, doc="toy proposal accepted always: not pi-invariant")
@dataclass(frozen=True)
class ToyBroken(ToyMH):
    """Every proposal accepted (the acceptance step dropped): uniform random walk, not pi-invariant."""

    def step(self, state: ToyState, log_prob, generator: torch.Generator) -> tuple[ToyState, Info]:
        y = _proposal(state.x, self.num_flips, generator)
        ones = torch.ones(y.shape[0], dtype=y.dtype)
        changed = (y != state.x).sum(dim=1)
        return ToyState(y), Info(ones, ones.bool(), changed, energy_evals=0, grad_evals=0)
