"""Exact block Gibbs for RBMs: h ~ p(h | x), then x ~ p(x | h) (GWG paper Appendix E).

The ground-truth sampler of the RBM experiments. It needs a structured target offering
``sample_hidden(x, generator)`` and ``sample_visible(h, generator)`` (e.g. ``gradmc.targets.RBM``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import torch

from gradmc.samplers.base import Info
from gradmc.targets.validation import check_binary

__all__ = ["RBMBlockGibbs", "RBMBlockGibbsState"]


class RBMBlockGibbsState(NamedTuple):
    """x: (C, D) visible state."""

    x: torch.Tensor


def _require_conditionals(target) -> None:
    if not (hasattr(target, "sample_hidden") and hasattr(target, "sample_visible")):
        raise TypeError(
            "block Gibbs needs an RBM-like target with sample_hidden(x, g) and sample_visible(h, g); "
            f"got {type(target).__name__}"
        )


@dataclass(frozen=True)
class RBMBlockGibbs:
    """Alternating exact conditional updates of an RBM's hidden and visible layers.

    Cost accounting: the two conditional passes are each one (C, D) x (D, H) matrix product, the
    cost of one energy evaluation; reported as energy_evals=2, grad_evals=0.
    """

    def init(self, x: torch.Tensor, log_prob) -> RBMBlockGibbsState:
        """Start chains at x (C, D) floats in {0, 1}; log_prob must be an RBM-like target."""
        _require_conditionals(log_prob)
        check_binary(x, check_values=True)
        return RBMBlockGibbsState(x=x.clone())

    def step(self, state: RBMBlockGibbsState, log_prob, generator: torch.Generator):
        """One sweep x -> h -> x'."""
        _require_conditionals(log_prob)
        with torch.no_grad():
            h = log_prob.sample_hidden(state.x, generator)  # (C, H)
            x_new = log_prob.sample_visible(h, generator)  # (C, D)
        C = x_new.shape[0]
        ones = torch.ones(C, dtype=x_new.dtype, device=x_new.device)
        info = Info(acceptance_prob=ones, accepted=torch.ones(C, dtype=torch.bool, device=x_new.device),
                    sites_changed=(x_new != state.x).sum(1), energy_evals=2, grad_evals=0)
        return RBMBlockGibbsState(x=x_new), info
