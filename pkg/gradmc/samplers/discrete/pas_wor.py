"""Path auxiliary sampler WITHOUT replacement, binary states: the form of PAS that DISCS (Goshvadi et al.
2023, the ``PAFSNoReplacement`` sampler) runs, beside the with-replacement path of :mod:`.pas`.

Proposal. With l = (1 - 2x) * grad f(x) / T the proposal logits at x (T = 2, the locally balanced
sqrt weight, as in :mod:`.pas`), draw an ORDERED sequence of L DISTINCT sites i_1, ..., i_L from
softmax(l) without replacement: i_j from the softmax of l over the sites not drawn yet,

    q_x(i_1..i_L) = prod_j exp(l_{i_j}) / (S - sum_{k<j} exp(l_{i_k})),   S = sum_i exp(l_i),

and flip all L of them: x' = x with bits i_1..i_L flipped (Hamming distance exactly L). Every site of the
path is still at its start value when it is drawn, so each draw's logits are the start's: this is the
path of :mod:`.pas` with a drawn site's weight set to 0 instead of flipped back.

Acceptance. The auxiliary variable is the ordered sequence; the reverse move draws the reversed sequence
i_L, ..., i_1 from x' with the logits l' = (1 - 2x') * grad f(x') / T there, which flips the same sites
back. (x, i_1..i_L) -> (x', i_L..i_1) is an involution, so Metropolis-Hastings on (state, sequence) with

    log alpha = f(x') - f(x) + log q_{x'}(i_L..i_1) - log q_x(i_1..i_L)

satisfies detailed balance, and so does the marginal kernel on x (tests: the exact one-step matrix from
:meth:`PASWithoutReplacement.transition_probabilities`, which enumerates every ordered sequence, is
stationary and reversible). With L = 1 it is GWG at temperature 2. DISCS scores the reverse sequence the
same way (its ``ll_y2x``: the reversed indices, renormalised without replacement, at y).

Computation. One float64 CDF of the start's weights w = exp(l - m) (m the row maximum) per step; draw j
inverts it at u_j times the remaining mass S - sum_{k<j} w_{i_k}, in index order, with one
``searchsorted`` per segment between the drawn sites (the CDF of the remaining sites is the start's minus
the weights drawn before each index). The forward density comes from the draw's own normalisers, the
reverse one from the weights at x' at the L sites and their sum. Rows where the remaining mass falls
below :data:`~gradmc.samplers.discrete.pas.CANCELLATION_TOL` of S (a drawn site held nearly all of it),
or where rounding gives no index or a repeated one, are redrawn and scored by the reference functions
(:func:`reference_draw_wor`, :func:`reference_log_wor_probability`: the definition, O(C L D)), which map
the same uniforms to the same sites in exact arithmetic, so the switch does not bias the draw.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import torch

import gradmc.core.streams as streams
from gradmc.core.incremental import RowChoice, bind_state, current_evaluation, eval_flips, select
from gradmc.sampler_catalog import register_sampler
from gradmc.samplers.base import (
    Info,
    _invert,
    check_current_gradient,
    count_nonfinite,
    exp_below_max,
    metropolis_hastings_accept,
)
from gradmc.samplers.discrete.gwg import FlipProposal, GradientFlipMH, GWGState, flip_proposal
from gradmc.samplers.discrete.pas import CANCELLATION_TOL, PathFields, invert_shifted

__all__ = ["PASWithoutReplacement", "reference_draw_wor", "reference_log_wor_probability", "flip_sites"]


def flip_sites(x: torch.Tensor, sites: torch.Tensor) -> torch.Tensor:
    """x (C, D) binary with the bits ``sites`` (C, L) int64, distinct within a row, flipped: a new (C, D)."""
    return x.scatter(1, sites, 1.0 - x.gather(1, sites))


def reference_log_wor_probability(logits: torch.Tensor, sites: torch.Tensor) -> torch.Tensor:
    """log q(i_1..i_L) of an ordered draw without replacement from softmax(logits), by its definition:
    draw j's log-softmax over the sites not drawn before it (earlier sites masked to -inf). O(C L D).

    Args:
        logits: (C, D); sites: (C, L) int64, distinct within a row, in draw order.

    Returns:
        (C,) log probability in logits' dtype.
    """
    rows = torch.arange(logits.shape[0], device=logits.device)
    masked = logits.clone()
    total = torch.zeros(logits.shape[0], dtype=logits.dtype, device=logits.device)
    for j in range(sites.shape[1]):
        site = sites[:, j]
        total = total + masked[rows, site] - torch.logsumexp(masked, -1)
        masked[rows, site] = -torch.inf
    return total


def reference_draw_wor(logits: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """The draw of :meth:`PASWithoutReplacement.draw_sites` by its definition, from given uniforms: draw j
    inverts the float64 CDF, in index order, of the softmax of the logits with the sites drawn before masked
    out, at u[:, j] (as :func:`~gradmc.samplers.base.sample_categorical` does with its own uniform). O(C L D).

    Args:
        logits: (C, D); u: (C, L) float64 uniforms in [0, 1), L <= D.

    Returns:
        (C, L) int64 distinct sites in draw order.
    """
    rows = torch.arange(logits.shape[0], device=logits.device)
    masked = logits.clone()
    sites = []
    for j in range(u.shape[1]):
        weights = exp_below_max(masked, masked.amax(-1, keepdim=True))  # a drawn site: weight 0
        cdf = weights.cumsum(-1, dtype=torch.float64)
        total = cdf[:, -1:].contiguous()
        idx = _invert(cdf, u[:, j:j + 1] * total, total).squeeze(1)
        masked[rows, idx] = -torch.inf
        sites.append(idx)
    return torch.stack(sites, 1)


def _repeats(sites: torch.Tensor) -> torch.Tensor:
    """(C,) bool: some site appears twice in the row of (C, L) ``sites``."""
    return (sites[:, :, None] == sites[:, None, :]).sum((1, 2)) > sites.shape[1]


def _log_wor(proposal: FlipProposal, sites: torch.Tensor) -> torch.Tensor:
    """:func:`reference_log_wor_probability` of the proposal's logits in O(C D + C L): with its row maxima m and
    weights w = exp(l - m) (:func:`~gradmc.samplers.discrete.gwg.flip_proposal`), S = sum_i w_i in float64,
    draw j's normaliser is m + log(S - sum_{k<j} w_{i_k}). Rows whose remaining mass falls below
    CANCELLATION_TOL of S are recomputed by the reference.

    Args:
        proposal: at the sequence's start, logits (C, D); sites: (C, L) int64, distinct within a row, in draw
            order.

    Returns:
        (C,) float64 log probability.
    """
    logits, top, weights = proposal.logits, proposal.top, proposal.weights
    total = weights.sum(-1, keepdim=True, dtype=torch.float64)  # (C, 1)
    drawn = weights.gather(1, sites).to(torch.float64)  # (C, L)
    remaining = total - (drawn.cumsum(1) - drawn)  # the mass left before each draw
    chosen = logits.gather(1, sites).to(torch.float64)
    log_prob = (chosen - top.to(torch.float64)).sum(1) - remaining.log().sum(1)
    bad = (remaining < CANCELLATION_TOL * total).any(1)
    if bad.any():
        rows = bad.nonzero().squeeze(1)
        log_prob[rows] = reference_log_wor_probability(logits[rows].double(), sites[rows])
    return log_prob


def _fast_log_wor(logits: torch.Tensor, sites: torch.Tensor) -> torch.Tensor:
    """:func:`_log_wor` of (C, D) logits (temperature already applied): (C,) float64."""
    return _log_wor(flip_proposal(logits, 1.0), sites)


def _draw_wor(proposal: FlipProposal, u: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The draw of :func:`reference_draw_wor` from the same uniforms, and its log-probability, in
    O(C D + C L^2 log D) (module docstring, "Computation"). Draw j's CDF over the sites not drawn yet is the
    start's float64 CDF minus, from each drawn site on, that site's weight, inverted at u_j times the remaining
    mass by :func:`~gradmc.samplers.discrete.pas.invert_shifted` (one ``searchsorted`` per segment between
    the drawn sites). With L = 1 this is GWG's
    draw (:func:`~gradmc.samplers.base.draw_from_weights`) with the same uniform, on rows of at most
    :data:`~gradmc.samplers.base.BLOCKED_DRAW_MIN` entries (GWG inverts longer ones in two levels, which rounds
    differently at the intervals' boundaries).

    Args:
        proposal: the :class:`~gradmc.samplers.discrete.gwg.FlipProposal` at the start, logits (C, D);
        u: (C, L) float64 uniforms, L <= D.

    Returns:
        sites (C, L) int64, distinct in a row; log_prob (C,) float64, log q(sites) from the draw's normalisers.
    """
    logits, top, weights = proposal.logits, proposal.top, proposal.weights
    C, D = logits.shape
    L = u.shape[1]
    cdf = weights.cumsum(-1, dtype=torch.float64)
    total = cdf[:, -1:].contiguous()  # (C, 1)
    draws = [_invert(cdf, u[:, :1] * total, total)]  # (C, 1) each
    norms = [total]
    if L > 1:
        drawn = weights.gather(1, draws[0]).to(torch.float64)  # the drawn sites' weights, in draw order
        zeros, ends = torch.zeros_like(draws[0]), torch.full_like(draws[0], D)
    for j in range(1, L):
        slots = torch.cat(draws, 1)  # (C, j)
        norm = total - drawn.sum(1, keepdim=True)
        norms.append(norm)
        raw = invert_shifted(cdf, u[:, j:j + 1] * norm, slots, drawn.neg(), zeros, ends)  # (C, 1), D: none
        draws.append(raw)
        if j < L - 1:
            drawn = torch.cat([drawn, weights.gather(1, raw.clamp(max=D - 1)).to(torch.float64)], 1)
    sites = torch.cat(draws, 1)
    norms = torch.cat(norms, 1)
    chosen = logits.gather(1, sites.clamp(max=D - 1)).to(torch.float64)
    log_prob = (chosen - top.to(torch.float64)).sum(1) - norms.log().sum(1)
    if L > 1:
        bad = (norms < CANCELLATION_TOL * total).any(1) | (sites == D).any(1) | _repeats(sites)
        if bad.any():
            rows = bad.nonzero().squeeze(1)
            sites[rows] = reference_draw_wor(logits[rows], u[rows])
            log_prob[rows] = reference_log_wor_probability(logits[rows].double(), sites[rows])
    return sites, log_prob


def _fast_draw_wor(logits: torch.Tensor, u: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`_draw_wor` from (C, D) logits (temperature already applied)."""
    return _draw_wor(flip_proposal(logits, 1.0), u)


@register_sampler("PAS-{path_length}-wor", family="later", colour="orange", order=60, examples=("PAS-3-wor",),
                  in_groups=False,
                  adapt=("path_length", "int"),
                  doc="PAS with the path drawn without replacement (as DISCS runs it), L distinct flips")
@dataclass(frozen=True)
class PASWithoutReplacement(PathFields, GradientFlipMH):
    """Path auxiliary sampler with the path's L sites drawn WITHOUT replacement, binary states (C, D): DISCS's
    form of PAS (module docstring: the proposal, the acceptance ratio and its derivation).

    Args:
        path_length: L >= 1, the number of distinct sites flipped per proposal (at most D).
        temperature: T > 0 of the proposal softmax((1 - 2x) grad f(x) / T); 2 is the locally balanced weight.

    Cost per step: ONE function+gradient evaluation, at x' (energy_evals = grad_evals = 1; 2 when x is
    evaluated too, as GWG), and O(C D) elementwise work beyond it. Info.sites_changed is L when accepted.

    Raises:
        ValueError: path_length not an int >= 1, or temperature <= 0; at ``step``, path_length > D.
    """

    @property
    def name(self) -> str:
        """"PAS-L-wor" (as :func:`~gradmc.samplers.discrete.make_sampler` takes it)."""
        return f"PAS-{self.path_length}-wor"

    @staticmethod
    def adapt_upper(dim: int) -> int:
        """The largest path length on ``dim`` bits, the upper bound of ``adapt`` (:mod:`gradmc.samplers.adaptation`):
        L distinct flips need L <= D."""
        return dim

    def _check_length(self, dim: int) -> None:
        if self.path_length > dim:
            raise ValueError(f"{self.name} flips {self.path_length} distinct bits, but the states have only "
                             f"{dim}: choose path_length <= {dim}")

    def log_path_probability(self, logits: torch.Tensor, sites: torch.Tensor) -> torch.Tensor:
        """log q(i_1..i_L): the ordered draw without replacement of ``sites`` (C, L) int64 from softmax(logits),
        logits (C, D) at the draw's start; (C,) in logits' dtype (O(C D + C L), float64 inside; rows where the
        remaining mass cancels are computed by :func:`reference_log_wor_probability`)."""
        return _fast_log_wor(logits, sites).to(logits.dtype)

    def log_acceptance(self, x: torch.Tensor, sites: torch.Tensor, f_x: torch.Tensor, grad_x: torch.Tensor,
                       f_new: torch.Tensor, grad_new: torch.Tensor) -> torch.Tensor:
        """log alpha = f(x') - f(x) + log q_{x'}(i_L..i_1) - log q_x(i_1..i_L) (module docstring).

        Args:
            x: (C, D) start; sites: (C, L) the ordered distinct sites; f_x, f_new: (C,) f at x and
                x' = x with ``sites`` flipped; grad_x, grad_new: (C, D) grad f at x and x'.

        Returns:
            (C,) log acceptance ratio.
        """
        log_fwd = self.log_path_probability(self.proposal_logits(x, grad_x), sites)
        log_rev = self.log_path_probability(self.proposal_logits(flip_sites(x, sites), grad_new), sites.flip(1))
        return f_new - f_x + log_rev - log_fwd

    def draw_sites(self, x: torch.Tensor, grad: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        """Draw L distinct sites per chain, in order, from softmax((1 - 2x) grad / T) without replacement.

        One (C, L) float64 uniform draw from ``generator``; draw j inverts the CDF of the sites not drawn yet
        at u[:, j] (:func:`reference_draw_wor` by definition). With L = 1 this is GWG's draw from the same
        generator state (D <= :data:`~gradmc.samplers.base.BLOCKED_DRAW_MIN`, see :func:`_draw_wor`).

        Args:
            x: (C, D) start; grad: (C, D) grad f(x).

        Returns:
            (C, L) int64.

        Raises:
            ValueError: path_length > D.
        """
        self._check_length(x.shape[1])
        u = streams.rand((x.shape[0], self.path_length), generator, device=x.device, dtype=torch.float64)
        return _fast_draw_wor(self.proposal_logits(x, grad), u)[0]

    def step(self, state: GWGState, log_prob, generator: torch.Generator) -> tuple[GWGState, Info]:
        """One transition for every chain: draw L distinct sites, flip them, accept or reject.

        Returns the new state and per-chain Info (sites_changed = L where accepted, else 0).

        Raises:
            ValueError: path_length > D.
            NonFiniteError: f(x) or grad f(x) NaN/inf at a current state (a proposal of NaN/+inf f, or
                NaN gradient, is rejected instead).
        """
        x = state.x  # (C, D)
        self._check_length(x.shape[1])
        ev, key, billed = current_evaluation(state, log_prob, x, grad=True)
        check_current_gradient(self.name, state, ev.log_prob, ev.grad)
        fwd = state.proposal  # the last step's proposal at x (its reverse one where it moved), as GWG keeps it
        if fwd is None or ev is not state.cache or fwd.temperature != self.temperature:
            fwd = flip_proposal(self.proposal_logits(x, ev.grad), self.temperature)
        u = streams.rand((x.shape[0], self.path_length), generator, device=x.device, dtype=torch.float64)
        sites, log_fwd = _draw_wor(fwd, u)  # as draw_sites; (C, L), (C,)
        x_new = flip_sites(x, sites)
        ev_new = eval_flips(log_prob, x, ev, sites, torch.ones_like(sites, dtype=torch.bool), grad=True)
        rev = flip_proposal(self.proposal_logits(x_new, ev_new.grad), self.temperature)
        if type(self).log_acceptance is PASWithoutReplacement.log_acceptance:  # the forward term from the draw
            log_rev = _log_wor(rev, sites.flip(1))
            log_alpha = ev_new.log_prob - ev.log_prob + (log_rev - log_fwd).to(ev_new.log_prob.dtype)
        else:  # a subclass redefines the acceptance ratio
            log_alpha = self.log_acceptance(x, sites, ev.log_prob, ev.grad, ev_new.log_prob, ev_new.grad)
        accepted, acceptance_prob = metropolis_hastings_accept(log_alpha, generator, ev_new.log_prob)
        choose = RowChoice(accepted)  # the rejected rows found once for the state, evaluation and proposal
        out = select(choose, ev_new, ev)
        kept = None
        if key is not None:
            kept = FlipProposal(self.temperature, *(choose(a, b) for a, b in zip(rev[1:], fwd[1:], strict=True)))
        evals = 1 + billed
        info = Info(acceptance_prob=acceptance_prob, accepted=accepted,
                    sites_changed=accepted.long() * self.path_length, energy_evals=evals, grad_evals=evals,
                    nonfinite_proposals=count_nonfinite(ev_new.log_prob, log_alpha))
        return bind_state(GWGState(x=choose(x_new, x), log_prob=out.log_prob, num_steps=state.num_steps + 1,
                                   cache=out if key is not None else None, cache_key=key, proposal=kept)), info

    def sequences(self, dim: int) -> torch.Tensor:
        """Every ordered sequence of L distinct sites of ``dim``, (D! / (D - L)!, L) int64, for the enumeration
        (:meth:`~gradmc.samplers.discrete.pas.PathFields.transition_probabilities`).

        Raises:
            ValueError: path_length > dim.
        """
        self._check_length(dim)
        return torch.tensor(list(itertools.permutations(range(dim), self.path_length)), dtype=torch.long)

    def end_point(self, x: torch.Tensor, sites: torch.Tensor) -> torch.Tensor:
        """x (N, D) with the sites (N, L) flipped: :func:`flip_sites`."""
        return flip_sites(x, sites)

    def log_forward(self, logits: torch.Tensor, sites: torch.Tensor) -> torch.Tensor:
        """log q_x(sequence), (N,): :meth:`log_path_probability`."""
        return self.log_path_probability(logits, sites)
