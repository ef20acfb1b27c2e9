"""Exact block Gibbs for RBMs: h ~ p(h | x), then x ~ p(x | h) (GWG paper Appendix E).

The ground-truth sampler of the RBM experiments. It needs a structured target offering
``sample_hidden(x, generator)`` and ``sample_visible(h, generator)`` (e.g. ``gradmc.targets.RBM``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import torch

from gradmc.core.validation import check_binary
from gradmc.sampler_catalog import register_sampler
from gradmc.samplers.base import Info, check_finite

__all__ = ["RBMBlockGibbs", "RBMBlockGibbsState"]


class RBMBlockGibbsState(NamedTuple):
    """x: (C, D) visible state; num_steps: steps taken since ``init`` (for error messages)."""

    x: torch.Tensor
    num_steps: int = 0


def _require_conditionals(target) -> None:
    if not (hasattr(target, "sample_hidden") and hasattr(target, "sample_visible")):
        raise TypeError(
            "block Gibbs needs an RBM-like target with sample_hidden(x, g) and sample_visible(h, g); "
            f"got {type(target).__name__}"
        )


@register_sampler("BlockGibbs", colour="black", order=40, in_groups=False,
                  doc="exact h | x, x | h alternation (RBM targets only)")
@dataclass(frozen=True)
class RBMBlockGibbs:
    """Alternating exact conditional updates of an RBM's hidden and visible layers.

    Cost accounting: the two conditional passes are each one (C, D) x (D, H) matrix product, the
    cost of one energy evaluation; reported as energy_evals=2, grad_evals=0.

    Non-finite values: ``init`` checks f(x) (one evaluation); a step checks nothing on its hot path,
    but a failed conditional draw (e.g. ``torch.bernoulli`` of NaN probabilities, from NaN weights) is
    reported as :class:`~gradmc.samplers.base.NonFiniteError` when the target offers ``hidden_probs`` and
    ``visible_probs`` to diagnose it.
    """

    name = "BlockGibbs"  # the registry's name (a class attribute, not a field)

    def init(self, x: torch.Tensor, log_prob, generator: torch.Generator | None = None) -> RBMBlockGibbsState:
        """Start chains at x (C, D) floats in {0, 1}; log_prob must be an RBM-like target.

        Raises:
            TypeError: the target lacks sample_hidden / sample_visible.
            NonFiniteError: f(x) is NaN or inf for some chain.
        """
        _require_conditionals(log_prob)
        check_binary(x, check_values=True)
        with torch.no_grad():
            check_finite(self.name, 0, ("log_prob at the current state", log_prob(x)))
        return RBMBlockGibbsState(x=x.clone())

    def step(self, state: RBMBlockGibbsState, log_prob, generator: torch.Generator):
        """One sweep x -> h -> x'.

        Raises:
            NonFiniteError: the draw failed on NaN/inf conditional probabilities (see the class).
        """
        _require_conditionals(log_prob)
        with torch.no_grad():
            h = None
            try:
                h = log_prob.sample_hidden(state.x, generator)  # (C, H)
                x_new = log_prob.sample_visible(h, generator)  # (C, D)
            except RuntimeError:
                self._diagnose(log_prob, state, h)
                raise
        C = x_new.shape[0]
        ones = torch.ones(C, dtype=x_new.dtype, device=x_new.device)
        info = Info(acceptance_prob=ones, accepted=torch.ones(C, dtype=torch.bool, device=x_new.device),
                    sites_changed=(x_new != state.x).sum(1), energy_evals=2, grad_evals=0)
        return RBMBlockGibbsState(x=x_new, num_steps=state.num_steps + 1), info

    def _diagnose(self, target, state: RBMBlockGibbsState, h: torch.Tensor | None) -> None:
        """After a failed draw: raise NonFiniteError if the conditional probabilities are not finite."""
        step = state.num_steps + 1
        if h is None and callable(getattr(target, "hidden_probs", None)):
            check_finite(self.name, step, ("conditional probabilities p(h | x)", target.hidden_probs(state.x)))
        if h is not None and callable(getattr(target, "visible_probs", None)):
            check_finite(self.name, step, ("conditional probabilities p(x | h)", target.visible_probs(h)))
