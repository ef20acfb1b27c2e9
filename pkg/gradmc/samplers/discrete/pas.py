"""Path auxiliary sampler, PAS (Sun, Dai, Xia & Ramamurthy, "Path auxiliary proposal for MCMC in
discrete space", ICLR 2022), binary states.

The proposal is a walk x = y_0 -> y_1 -> ... -> y_L = x' of L single-bit flips i_1..i_L. Every step uses
the locally balanced weight g(t) = sqrt(t) of the first-order estimate of the change in f made at the
path's START x (one gradient for the whole path):

    q_x(i | y) = softmax_i((1 - 2 y) * grad f(x) / T),   T = 2 (sqrt(exp(.)) = exp(. / 2)),

i.e. the estimate grad f(x)^T (y' - y) of f(y') - f(y) for y' = y with bit i flipped; the flip
direction (1 - 2 y) is that of the CURRENT point of the path y = y_{j-1}, so a bit flipped earlier on
the path has weight exp(-d_i(x) / T) of being flipped back. Indices are drawn with replacement: an
index may repeat, and an index drawn twice is flipped back (x' flips the indices drawn an odd number of
times). The auxiliary variable is the path; the reverse path flips i_L, ..., i_1 from x' back to x,
scored with the gradient at the END point x':

    log alpha = f(x') - f(x) + sum_j log q_{x'}(i_j | y_j) - sum_j log q_x(i_j | y_{j-1}).

(x, path) -> (x', reversed path) is an involution, so this is Metropolis-Hastings on (state, path) and
the marginal kernel on x satisfies detailed balance. With L = 1 it is GWG at temperature 2 exactly.

Where the definition comes from: the paper's gradient-based path proposal (first-order Taylor
expansion at the current state x, reused along the path; reverse path with the expansion at y) as the
authors implement it for binary states in their released code ("MSPathCorrectSampler" / "PathAuxiliary
FastSampler" of ha0ransun/Path-Auxiliary-Sampler: logits (1 - 2 y_{j-1}) * grad f(x) / 2 per step, with
replacement, reverse logits (1 - 2 y_j) * grad f(x') / 2). The paper's own PDF text was not reachable
from this project's search tool, so the equations above are checked against that code, not quoted.
Path length: here a fixed L = R (the hyper-parameter ``path_length``). The authors' code draws
L ~ Uniform{1, ..., 2R - 1} per step (mean R); that mixture of the fixed-L kernels (each exact) is not
implemented here. :class:`~gradmc.samplers.adaptation.Adapted` can tune R during burn-in instead.
DISCS (Goshvadi et al. 2023) instead samples the path WITHOUT replacement and adapts R toward an
acceptance rate of 0.574 (see :mod:`gradmc.samplers.adaptation`); that variant is not implemented here.

Categorical PAS (the authors' code has one: one-hot logits grad_{d,k} - <grad_d, y_d>) is not
implemented; only binary states.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import torch

from gradmc.core.gradients import log_prob_and_grad
from gradmc.core.incremental import bind_state, current_evaluation, eval_flips, select
from gradmc.sampler_catalog import register_sampler
from gradmc.samplers.base import (
    Info,
    acceptance_probability,
    check_current_gradient,
    log_normaliser,
    metropolis_hastings_accept,
    sample_categorical,
)
from gradmc.samplers.discrete.flips import distinct_draws
from gradmc.samplers.discrete.gwg import GradientFlipMH, GWGState

__all__ = ["PAS", "path_signs", "path_end"]


def path_signs(sites: torch.Tensor, dim: int, dtype: torch.dtype) -> torch.Tensor:
    """Flip-direction signs along a path, relative to its start: s_j = (1 - 2 y_j) / (1 - 2 y_0).

    Args:
        sites: (C, L) int64 indices i_1..i_L of the path (repeats allowed); dim: D.

    Returns:
        (C, L + 1, D) in ``dtype``: s_0 = 1, and s_j is s_{j-1} with the sign of entry i_j flipped,
        so the logits (1 - 2 y_j) * g / T of point y_j are s_j * (1 - 2 y_0) * g / T.
    """
    C, L = sites.shape
    hits = torch.zeros(C, L, dim, dtype=torch.long, device=sites.device)
    hits.scatter_(2, sites[..., None], 1)
    parity = torch.cat([torch.zeros(C, 1, dim, dtype=torch.long, device=sites.device), hits.cumsum(1) % 2], 1)
    return (1 - 2 * parity).to(dtype)


def path_end(x: torch.Tensor, sites: torch.Tensor) -> torch.Tensor:
    """The end point y_L of the path from x (..., D) through indices ``sites`` (..., L): the bits drawn
    an odd number of times flipped. Returns (..., D)."""
    counts = torch.zeros(*x.shape, dtype=torch.long, device=x.device).scatter_add_(-1, sites, torch.ones_like(sites))
    return torch.where(counts % 2 == 1, 1.0 - x, x)


@register_sampler("PAS-{path_length}", family="later", colour="darkorange", order=60, examples=("PAS-3",),
                  adapt=("path_length", "int"), doc="path auxiliary sampler (Sun et al., ICLR 2022), a path of L flips")
@dataclass(frozen=True)
class PAS(GradientFlipMH):
    """Path auxiliary sampler for binary states (C, D) (see the module docstring for the proposal and
    the acceptance ratio; ICLR 2022 paper, Sec. 3-4, binary gradient version).

    Args:
        path_length: R >= 1, the number of flips of the path (fixed).
        temperature: T > 0 of the per-step proposal softmax((1 - 2 y) grad f(x) / T); 2 is the paper's
            sqrt (locally balanced) weight.

    ``step`` and ``transition_probabilities`` share ``proposal_logits`` (inherited from GWG),
    :func:`path_signs`, :func:`path_end`, ``log_path_probability`` and ``log_acceptance``.

    Cost per step: ONE function+gradient evaluation, at x' (energy_evals = grad_evals = 1); f and grad f
    at x come from the state's cache, as in GWG (2 on the first step after ``init``, after a target
    change and at the periodic refresh). Info.sites_changed is the Hamming distance |x' - x| when
    accepted (<= L), else 0.

    Raises:
        ValueError: path_length not an int >= 1, or temperature <= 0.
    """

    path_length: int = 3
    temperature: float = 2.0

    def __post_init__(self):
        self._validate()
        if not (isinstance(self.path_length, int) and not isinstance(self.path_length, bool)
                and self.path_length >= 1):
            raise ValueError(f"PAS path_length must be an int >= 1, got {self.path_length!r}")

    @property
    def num_draws(self) -> int:
        """The path length R, the number of indices drawn per step."""
        return self.path_length

    @property
    def name(self) -> str:
        """"PAS-R" for path length R (as :func:`~gradmc.samplers.discrete.make_sampler` takes it)."""
        return f"PAS-{self.path_length}"

    def log_path_probability(self, logits: torch.Tensor, sites: torch.Tensor, reverse: bool) -> torch.Tensor:
        """log probability of the path through ``sites`` under per-step logits s_j * logits.

        Args:
            logits: (C, D) proposal logits AT THE PATH'S START x, (1 - 2x) * g / T, for the gradient g
                that scores the path (g = grad f(x) forward, grad f(x') for the reverse path).
            sites: (C, L) int64 indices i_1..i_L in forward order.
            reverse: False: sum_j log softmax(s_{j-1} * logits)[i_j] (forward path x -> x', step j leaves
                y_{j-1}); True: sum_j log softmax(s_j * logits)[i_j] (the reverse path x' -> x, whose
                step flipping i_j leaves y_j).

        Returns:
            (C,) log probability.
        """
        signs = path_signs(sites, logits.shape[-1], logits.dtype)  # (C, L + 1, D)
        step_logits = logits[:, None, :] * (signs[:, 1:] if reverse else signs[:, :-1])  # (C, L, D)
        chosen = step_logits.gather(2, sites[..., None]).squeeze(-1)  # (C, L)
        return (chosen - log_normaliser(step_logits)).sum(1)

    def log_acceptance(self, x: torch.Tensor, sites: torch.Tensor, f_x: torch.Tensor, grad_x: torch.Tensor,
                       f_new: torch.Tensor, grad_new: torch.Tensor) -> torch.Tensor:
        """log alpha = f(x') - f(x) + log q_{x'}(reverse path) - log q_x(path) (module docstring).

        Args:
            x: (C, D) start; sites: (C, L) the path; f_x, f_new: (C,) f at x and x'; grad_x, grad_new:
                (C, D) grad f at x and x'.

        Returns:
            (C,) log acceptance ratio.
        """
        log_fwd = self.log_path_probability(self.proposal_logits(x, grad_x), sites, reverse=False)
        log_rev = self.log_path_probability(self.proposal_logits(x, grad_new), sites, reverse=True)
        return f_new - f_x + log_rev - log_fwd

    def draw_path(self, x: torch.Tensor, grad: torch.Tensor, length: int, generator: torch.Generator) -> torch.Tensor:
        """Draw a path of ``length`` flips per chain, step j from softmax(s_{j-1} * (1 - 2x) grad / T).

        Args:
            x: (C, D) start; grad: (C, D) grad f(x).

        Returns:
            (C, L) int64 indices i_1..i_L.
        """
        logits = self.proposal_logits(x, grad)  # (C, D)
        rows = torch.arange(x.shape[0], device=x.device)
        signs = torch.ones_like(logits)
        sites = []
        for _ in range(length):
            idx = sample_categorical(logits * signs, generator)  # (C,)
            signs[rows, idx] = -signs[rows, idx]
            sites.append(idx)
        return torch.stack(sites, 1)

    def step(self, state: GWGState, log_prob, generator: torch.Generator) -> tuple[GWGState, Info]:
        """One PAS transition for every chain.

        Returns the new state and per-chain Info (sites_changed = Hamming distance moved).

        Raises:
            NonFiniteError: f(x) or grad f(x) NaN/inf at a current state (a proposal of NaN/+inf f, or
                NaN gradient, is rejected instead).
        """
        x = state.x  # (C, D)
        ev, key, billed = current_evaluation(state, log_prob, x, grad=True)
        check_current_gradient(self.name, state, ev.log_prob, ev.grad)
        sites = self.draw_path(x, ev.grad, self.path_length, generator)  # (C, L)
        x_new = path_end(x, sites)
        flipped = x_new != x
        sorted_sites, first = distinct_draws(sites)
        mask = first & flipped.gather(1, sorted_sites)  # each odd-count index once
        ev_new = eval_flips(log_prob, x, ev, sorted_sites, mask, grad=True)
        log_alpha = self.log_acceptance(x, sites, ev.log_prob, ev.grad, ev_new.log_prob, ev_new.grad)
        accepted, acceptance_prob = metropolis_hastings_accept(log_alpha, generator, ev_new.log_prob)
        x_out = torch.where(accepted[:, None], x_new, x)
        out = select(accepted, ev_new, ev)
        moved = torch.where(accepted, flipped.sum(1), torch.zeros_like(accepted, dtype=torch.long))
        evals = 1 + billed
        info = Info(acceptance_prob=acceptance_prob, accepted=accepted, sites_changed=moved,
                    energy_evals=evals, grad_evals=evals)
        return bind_state(GWGState(x=x_out, log_prob=out.log_prob, num_steps=state.num_steps + 1,
                                   cache=out if key is not None else None, cache_key=key)), info

    @torch.no_grad()
    def transition_probabilities(self, x: torch.Tensor, log_prob) -> tuple[torch.Tensor, torch.Tensor]:
        """Enumerate one step from each x: every path of R flips (D**R of them), then "stay".

        Args:
            x: (C, D) binary states.

        Returns:
            next_states: (C, M + 1, D), the end points of the M = D**R paths, then x itself;
            probs: (C, M + 1), q_x(path) min(1, alpha), then the rejected mass. Costs M + 1 target
            evaluations with gradients per row of x (meant for D <= 10, R <= 3).
        """
        C, D = x.shape
        f_x, grad_x = log_prob_and_grad(log_prob, x)
        paths = torch.tensor(list(itertools.product(range(D), repeat=self.path_length)), dtype=torch.long,
                             device=x.device)  # (M, R)
        M = paths.shape[0]
        xs, gs = x.repeat_interleave(M, 0), grad_x.repeat_interleave(M, 0)  # (C * M, D)
        sites = paths.repeat(C, 1)  # (C * M, R)
        x_new = path_end(xs, sites)
        f_new, grad_new = log_prob_and_grad(log_prob, x_new)
        log_alpha = self.log_acceptance(xs, sites, f_x.repeat_interleave(M), gs, f_new, grad_new)
        log_path = self.log_path_probability(self.proposal_logits(xs, gs), sites, reverse=False)
        move = (torch.exp(log_path) * acceptance_probability(log_alpha, f_new)).reshape(C, M)
        stay = 1.0 - move.sum(1, keepdim=True)
        return torch.cat([x_new.reshape(C, M, D), x[:, None, :]], 1), torch.cat([move, stay], 1)
