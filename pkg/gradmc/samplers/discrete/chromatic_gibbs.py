"""Chromatic (graph-colouring) Gibbs sampling of pairwise binary models (Gonzalez et al. 2011, "Parallel
Gibbs sampling"; used for the true-model samples of GWG paper Fig. 6, Appendix F.2).

For log p(x) = x^T J x + b^T x (any pairwise binary model with zero diagonal, e.g. the Ising models of
:mod:`gradmc.targets`), f is affine in each bit given the others, so the exact conditional is

    p(x_i = 1 | x_rest) = sigmoid(f(x with x_i = 1) - f(x with x_i = 0)) = sigmoid(d f / d x_i),

and sites that share no coupling (J_ij = 0) are conditionally independent given all other sites. The sites
are coloured so that no two coupled sites share a colour (:func:`greedy_colouring`); one sweep draws the
sites of every colour class together from their exact conditionals, class after class. Each class update
is a block-Gibbs update (it leaves p invariant); a sweep, their product, does too, and is equal in law to
a systematic-scan Gibbs-1 sweep in colour order, at the cost of one gradient evaluation per class
instead of D. Like every systematic scan, a sweep is in general not reversible.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import torch

import gradmc.core.streams as streams
from gradmc.core.exact import enumerate_binary
from gradmc.core.gradients import log_prob_and_grad
from gradmc.core.validation import check_binary
from gradmc.samplers.base import Info

__all__ = ["ChromaticGibbs", "ChromaticGibbsState", "greedy_colouring", "colour_logits", "chromatic_gibbs"]


def greedy_colouring(J: torch.Tensor) -> list[torch.Tensor]:
    """Colour classes of the graph {(i, j): J_ij != 0}: no two coupled sites share a class.

    Greedy in site order (at most max degree + 1 classes; 2 for an even-sided periodic lattice).

    Args:
        J: (D, D) couplings (only the non-zero pattern is read).

    Returns:
        The classes, a list of int64 index tensors (sorted site indices), class 0 first; together they
        partition 0..D-1.
    """
    neighbours = [np.flatnonzero(row) for row in (J != 0).cpu().numpy()]
    colour = np.full(len(neighbours), -1)
    for i, nbrs in enumerate(neighbours):
        used = set(colour[nbrs].tolist())
        colour[i] = next(c for c in range(len(neighbours)) if c not in used)
    return [torch.from_numpy(np.flatnonzero(colour == c)) for c in range(colour.max() + 1)]


def colour_logits(target, x: torch.Tensor, sites: torch.Tensor) -> torch.Tensor:
    """log p(x_i = 1 | x_rest) - log p(x_i = 0 | x_rest) = d f / d x_i for each i in ``sites``.

    Exact when f is affine in each bit (pairwise models with zero diagonal).

    Args:
        target: log p, (C, D) -> (C,) (its closed-form ``log_prob_and_grad`` when it has one, else autograd).
        x: (C, D) binary states; sites: (S,) int64 site indices.

    Returns:
        (C, S) logits.
    """
    _, grad = log_prob_and_grad(target, x)
    return grad[:, sites]


@torch.no_grad()
def chromatic_gibbs(target, x: torch.Tensor, classes: list[torch.Tensor], num_sweeps: int,
                    generator: torch.Generator) -> torch.Tensor:
    """``num_sweeps`` chromatic Gibbs sweeps (module docstring) of the chains x.

    Per class: p = sigmoid(:func:`colour_logits`), u ~ U(0, 1) of p's shape from ``generator``, x_i = 1[u < p].

    Args:
        target: a pairwise binary log p (see :func:`colour_logits`); x: (C, D) binary states (not modified).
        classes: colour classes of the target's coupling graph (:func:`greedy_colouring`), on x's device.
        num_sweeps: sweeps, each over every class in order; generator: on x's device.

    Returns:
        (C, D) the new states.
    """
    x = x.clone()
    for _ in range(num_sweeps):
        for sites in classes:
            p = torch.sigmoid(colour_logits(target, x, sites))
            u = streams.rand(p.shape, generator, device=x.device, dtype=p.dtype)
            x[:, sites] = (u < p).to(x.dtype)
    return x


class ChromaticGibbsState(NamedTuple):
    """x: (C, D) state; num_steps: sweeps since ``init``."""

    x: torch.Tensor
    num_steps: int = 0


@dataclass(frozen=True, eq=False)
class ChromaticGibbs:
    """Chromatic Gibbs as a kernel: one :meth:`step` is one sweep over every colour class.

    Args:
        classes: colour classes (tuple of int64 index tensors) of the target's coupling graph, e.g.
            ``tuple(greedy_colouring(J))``; sites of one class must be uncoupled (else the kernel is wrong).

    Cost per step: one value+gradient evaluation per class (energy_evals = grad_evals = number of classes).
    """

    classes: tuple[torch.Tensor, ...]
    name = "Chromatic-Gibbs"

    def init(self, x: torch.Tensor, log_prob, generator: torch.Generator | None = None) -> ChromaticGibbsState:
        """Start chains at x (C, D) binary; ``generator`` is unused (a deterministic start).

        Raises:
            ValueError, TypeError: if x is not a (C, D) floating tensor of bits.
        """
        check_binary(x, check_values=True)
        return ChromaticGibbsState(x=x.clone(), num_steps=0)

    def step(self, state: ChromaticGibbsState, log_prob, generator: torch.Generator
             ) -> tuple[ChromaticGibbsState, Info]:
        """One sweep (:func:`chromatic_gibbs` with ``num_sweeps=1``). Every update is accepted."""
        classes = [c.to(state.x.device) for c in self.classes]
        x_new = chromatic_gibbs(log_prob, state.x, classes, 1, generator)
        C = x_new.shape[0]
        info = Info(acceptance_prob=torch.ones(C, dtype=x_new.dtype, device=x_new.device),
                    accepted=torch.ones(C, dtype=torch.bool, device=x_new.device),
                    sites_changed=(x_new != state.x).sum(-1), energy_evals=len(classes), grad_evals=len(classes))
        return ChromaticGibbsState(x=x_new, num_steps=state.num_steps + 1), info

    def transition_probabilities(self, x: torch.Tensor, log_prob, colour: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Enumerate the update of colour class ``colour`` from each x (for exact transition matrices).

        Args:
            x: (C, D) binary states; log_prob: the pairwise target; colour: index into ``classes``.

        Returns:
            next_states: (C, 2**S, D), every assignment of the S class sites (the rest of x kept);
            probs: (C, 2**S), the product of the sites' exact conditionals; rows sum to 1.
        """
        sites = self.classes[colour].to(x.device)
        S = sites.numel()
        p = torch.sigmoid(colour_logits(log_prob, x, sites))  # (C, S)
        values = enumerate_binary(S, x.dtype).to(x.device)  # (2**S, S)
        probs = torch.where(values[None].bool(), p[:, None], 1.0 - p[:, None]).prod(-1)  # (C, 2**S)
        next_states = x[:, None].repeat(1, values.shape[0], 1)
        next_states[:, :, sites] = values[None].expand(x.shape[0], -1, -1)
        return next_states, probs
