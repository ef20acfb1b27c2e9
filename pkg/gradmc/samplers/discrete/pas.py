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
acceptance rate of 0.574 (see :mod:`gradmc.samplers.adaptation`); that variant is PAS-L-wor
(:mod:`gradmc.samplers.discrete.pas_wor`).

Computation (only; the kernel is the one defined above). Each point y_j of the path has the logits of the
start except at the <= L sites flipped an odd number of times so far, whose sign is flipped. So a step costs,
beyond the target's one evaluation, O(C D) like GWG's: the start's weights w = exp(l - m) (m the row
maximum), their float64 CDF and total S, inverted at one uniform per chain and step in index order, with
the CDF of point j the start's plus a step function at those <= L - 1 sites (one ``searchsorted`` over
the segments between them); the normaliser of point j is S - sum_{i in M_j} w_i + sum_{i in M_j}
exp(-l_i - m) (M_j the odd-count sites), so the forward path density comes from the draw, and the reverse
path, i.e. the path i_L, ..., i_1 from x' whose logits are (1 - 2x') grad f(x') / T, the same way from the
sum of its weights at x'; O(C L^2 log D) bookkeeping, with the pattern of repeated sites looked up in a
table. The result equals the definition (:func:`reference_draw_path`, :func:`reference_log_path_probability`,
O(C L D)) to rounding: where the subtraction loses precision (a flipped-back site held all but less than
CANCELLATION_TOL = 1e-6 of the mass; relative error otherwise below about (D + L) * 1.1e-10) or exp(-l_i - m)
could overflow, those rows are recomputed by the reference functions, which map the same uniforms to the
same path. With L = 1 the draw is GWG's, index for index, from the same generator state (on rows of at most
:data:`~gradmc.samplers.base.BLOCKED_DRAW_MIN` bits; GWG inverts longer ones in two levels, which rounds
differently at the intervals' boundaries).

Categorical PAS (the authors' code has one: one-hot logits grad_{d,k} - <grad_d, y_d>) is not
implemented; only binary states.
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass

import torch

import gradmc.core.streams as streams
from gradmc.core.gradients import log_prob_and_grad
from gradmc.core.incremental import RowChoice, bind_state, current_evaluation, eval_flips, select
from gradmc.sampler_catalog import register_sampler
from gradmc.samplers.base import (
    EXP_FLOOR,
    Info,
    _invert,
    acceptance_probability,
    check_current_gradient,
    count_nonfinite,
    exp_below_max,
    log_normaliser,
    metropolis_hastings_accept,
)
from gradmc.samplers.discrete.gwg import GradientFlipMH, GWGState

__all__ = ["PAS", "PathFields", "invert_shifted", "path_signs", "path_end", "reference_log_path_probability",
           "reference_draw_path"]

#: A row whose remaining base mass S - sum_{i in M_j} w_i falls below this fraction of S at some point of the path
#: (a flipped-back site held nearly all the mass) is recomputed by the reference functions: above it, the float64
#: cancellation error of the remaining mass, at most about (D + L) * 1.1e-16 * S, is below (D + L) * 1.1e-10 of it.
CANCELLATION_TOL = 1e-6
#: A row where a path site's flipped-back weight exp(-l_i - m) relative to the row maximum m would exceed exp(this)
#: (float64 overflow is at exp(709)) is recomputed by the reference functions.
FLIP_BACK_EXP_MAX = 600.0


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


def reference_log_path_probability(logits: torch.Tensor, sites: torch.Tensor, reverse: bool) -> torch.Tensor:
    """The path log-probability of :meth:`PAS.log_path_probability` by its definition: the (C, L + 1, D)
    signs of :func:`path_signs` and one log-normaliser per point of the path (O(C L D)). The fast method
    equals it to rounding and falls back to it on the rows where its own arithmetic would lose precision.

    Args:
        logits: (C, D) logits at the path's start; sites: (C, L) int64; reverse: as the method's.

    Returns:
        (C,) log probability in logits' dtype.
    """
    signs = path_signs(sites, logits.shape[-1], logits.dtype)  # (C, L + 1, D)
    step_logits = logits[:, None, :] * (signs[:, 1:] if reverse else signs[:, :-1])  # (C, L, D)
    chosen = step_logits.gather(2, sites[..., None]).squeeze(-1)  # (C, L)
    return (chosen - log_normaliser(step_logits)).sum(1)


def reference_draw_path(logits: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """The path draw of :meth:`PAS.draw_path` by its definition, from given uniforms: step j inverts the
    float64 CDF, in index order, of the full row softmax(s_{j-1} * logits) at u[:, j - 1] (as
    :func:`~gradmc.samplers.base.sample_categorical` does with its own uniform). O(C L D).

    Args:
        logits: (C, D) logits at the path's start; u: (C, L) float64 uniforms in [0, 1).

    Returns:
        (C, L) int64 indices i_1..i_L (the fast draw's indices from the same u, up to rounding at the
        boundaries of the CDF's intervals).
    """
    rows = torch.arange(logits.shape[0], device=logits.device)
    signs = torch.ones_like(logits)
    sites = []
    for j in range(u.shape[1]):
        step_logits = logits * signs
        weights = exp_below_max(step_logits, step_logits.amax(-1, keepdim=True))
        cdf = weights.cumsum(-1, dtype=torch.float64)
        total = cdf[:, -1:].contiguous()
        idx = _invert(cdf, u[:, j:j + 1] * total, total).squeeze(1)  # (C,)
        signs[rows, idx] = -signs[rows, idx]
        sites.append(idx)
    return torch.stack(sites, 1)


def _path_sets(sites: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Which path sites carry a flipped sign at each point of a path (by definition, O(C L^2)).

    Args:
        sites: (C, L) int64 indices p_0..p_{L-1} in path order.

    Returns:
        active: (C, L, L) bool, active[c, j, k] iff k < j, p_k is drawn an odd number of times among
        p_0..p_{j-1}, and k is its first occurrence: the True entries of active[c, j] are the set M_j of
        sites whose sign is flipped at the point step j leaves, each once;
        flipped: (C, L) bool, p_j in M_j (step j's own logit carries the flipped sign).
    """
    L = sites.shape[1]
    eq = sites[:, :, None] == sites[:, None, :]  # (C, k, k')
    earlier = torch.ones(L, L, dtype=torch.bool, device=sites.device).tril_(-1)  # k' < k
    before = eq & earlier  # p_k' == p_k for an earlier k'
    first = ~before.any(2)  # (C, L)
    # odd[c, k, j]: p_k drawn an odd number of times among p_0..p_{j-1}
    odd = torch.cat([torch.zeros_like(eq[:, :, :1]), eq[:, :, :-1].cumsum(2) % 2 == 1], 2)
    active = odd.transpose(1, 2) & first[:, None, :] & earlier  # (C, j, k)
    return active, before.sum(2) % 2 == 1


def _structure(sites: torch.Tensor) -> torch.Tensor:
    """All the path bookkeeping :class:`PAS` needs, by definition; (C, L) -> (C, L, 2 L + 4) float64 of
    0/1 (signs +-1), along the last dimension: [:L] forward sets M_j (:func:`_path_sets`); [L] the sign of
    step j's own logit in the forward path (-1 where flipped); [L + 1:2L + 1] and [2L + 1] the same for the
    reversed site order (the reverse path from the end point); [2L + 2] site k is drawn an odd number of
    times in all (flipped at the end point); [2L + 3] k is the first occurrence of its site."""
    active, flipped = _path_sets(sites)
    active_rev, flipped_rev = _path_sets(sites.flip(1))
    L = sites.shape[1]
    eq = sites[:, :, None] == sites[:, None, :]
    odd = eq.sum(2) % 2 == 1
    first = ~(eq & torch.ones(L, L, dtype=torch.bool, device=sites.device).tril_(-1)).any(2)
    sign, sign_rev = (1.0 - 2.0 * flipped.double())[..., None], (1.0 - 2.0 * flipped_rev.double())[..., None]
    return torch.cat([active.double(), sign, active_rev.double(), sign_rev, odd[..., None].double(),
                      first[..., None].double()], 2)


#: Paths up to this length look their structure up in a table over the 2 ** (L (L - 1) / 2) patterns of equal
#: sites (1024 for L = 5); longer ones compute it.
TABLE_MAX_LENGTH = 5


@functools.lru_cache(maxsize=16)
def _structure_table(length: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """The table of :func:`_structure` over the patterns of equal sites of a path of ``length``, and the
    (L, L) int64 weights 2 ** b of the pairs k' < k that index it (a pattern's code is the sum of the
    weights of its equal pairs)."""
    pairs = [(k, k2) for k in range(length) for k2 in range(k)]
    weights = torch.zeros(length, length, dtype=torch.long)
    for b, (k, k2) in enumerate(pairs):
        weights[k, k2] = 1 << b
    # a path with each pattern: site k is the earliest site it equals (transitive patterns; the others never occur)
    codes = range(1 << len(pairs))
    reps = torch.tensor([[min([k] + [k2 for b, (kk, k2) in enumerate(pairs) if kk == k and code >> b & 1])
                          for k in range(length)] for code in codes], dtype=torch.long)
    return _structure(reps).to(device), weights.to(device)


def _path_structure(sites: torch.Tensor) -> torch.Tensor:
    """:func:`_structure` of (C, L) sites, by table lookup for L <= TABLE_MAX_LENGTH."""
    L = sites.shape[1]
    if L > TABLE_MAX_LENGTH:
        return _structure(sites)
    table, weights = _structure_table(L, sites.device)
    code = ((sites[:, :, None] == sites[:, None, :]) * weights).sum((1, 2))  # (C,)
    return table[code]


def _flip_at(v: torch.Tensor, sites: torch.Tensor, odd: torch.Tensor, flip) -> torch.Tensor:
    """A copy of v (C, D) with flip(v) at the path's sites drawn an odd number of times (``odd`` (C, L)):
    the end point :func:`path_end` for flip = 1 - v, or s_L * v for flip = negation. (Repeated sites write
    the same value.)"""
    at = v.gather(1, sites)
    return v.scatter(1, sites, torch.where(odd, flip(at), at))


def _fast_log_path(logits: torch.Tensor, sites: torch.Tensor, active: torch.Tensor, sign: torch.Tensor) -> torch.Tensor:
    """sum_j log softmax(s_{j-1} * logits)[p_j] for the path p_1..p_L from the point of ``logits`` (the
    forward convention), in O(C D + C L^2): the normaliser of point j is m + log(S - sum_{i in M_j} w_i
    + sum_{i in M_j} exp(-l_i - m)) with w = exp(l - m), m the row maximum and S = sum_i w_i (float64).
    Rows where the remaining mass S - sum_{i in M_j} w_i is below CANCELLATION_TOL of S, or a flipped-back
    weight is beyond exp(FLIP_BACK_EXP_MAX), are recomputed by :func:`reference_log_path_probability`.

    Args:
        logits: (C, D); sites: (C, L) int64 in path order; active: (C, L, L) float64 0/1, the sets M_j;
        sign: (C, L) float64, the sign s_{j-1} at p_j (:func:`_structure`).

    Returns:
        (C,) float64 log probability.
    """
    top = logits.amax(-1, keepdim=True)  # (C, 1)
    weights = (logits - top).clamp_(min=EXP_FLOOR).exp_()  # as log_normaliser; gathered below, so consistent
    total = weights.sum(-1, keepdim=True, dtype=torch.float64)  # (C, 1)
    top = top.to(torch.float64)
    chosen = logits.gather(1, sites).to(torch.float64)  # (C, L)
    back_exp = (chosen + top).neg_()  # -l_i - m
    base_back = torch.stack([weights.gather(1, sites).to(torch.float64),
                             back_exp.clamp(max=FLIP_BACK_EXP_MAX).exp()], 2)  # (C, L, 2): w_i, exp(-l_i - m)
    removed, added = torch.bmm(active, base_back).unbind(2)  # (C, L) each
    remaining = total - removed
    log_prob = (chosen * sign - top - (remaining + added).log_()).sum(1)
    bad = ((remaining < CANCELLATION_TOL * total) | (back_exp > FLIP_BACK_EXP_MAX)).any(1)
    if bad.any():
        rows = bad.nonzero().squeeze(1)
        log_prob[rows] = reference_log_path_probability(logits[rows], sites[rows], False).to(log_prob.dtype)
    return log_prob


def invert_shifted(cdf: torch.Tensor, target: torch.Tensor, slots: torch.Tensor, shifts: torch.Tensor,
                   zeros: torch.Tensor, ends: torch.Tensor) -> torch.Tensor:
    """The first index whose CDF exceeds ``target``, for a CDF that is the float64 ``cdf`` (C, D) plus, from each
    site ``slots[:, k]`` on, the change ``shifts[:, k]``: between two consecutive sites (sorted) it is ``cdf``
    shifted by the changes before, so one ``searchsorted`` per segment finds the segment's first index above the
    target, and the first segment's is the answer (the CDF is nondecreasing).

    Args:
        cdf: (C, D) float64; target: (C, 1) float64; slots: (C, J) int64 sites in any order (-1: no site, an
            empty segment); shifts: (C, J) float64 in slot order; zeros, ends: (C, 1) int64 0 and D.

    Returns:
        (C, 1) int64, D where no index exceeds the target (by rounding).
    """
    if slots.shape[1] == 1:
        ordered = slots
    else:
        ordered, order = slots.sort(1)
        shifts = shifts.gather(1, order)
    bounds = torch.cat([zeros, ordered, ends], 1)  # segment s covers [bounds_s, bounds_{s+1})
    cand = torch.searchsorted(cdf, torch.cat([target, target - shifts.cumsum(1)], 1), right=True)
    cand = torch.maximum(cand, bounds[:, :-1])
    return cand.masked_fill_(cand >= bounds[:, 1:], cdf.shape[1]).min(1, keepdim=True).values


def _fast_draw_path(logits: torch.Tensor, u: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The draw of :func:`reference_draw_path` from the same uniforms, and the drawn path's forward
    log-probability, in O(C D + C L^2 log D).

    Every point of the path has the start's weights w = exp(l - m) except at the <= L - 1 sites of M_j
    (flipped an odd number of times so far), whose weight is exp(-l_i - m). So the CDF of point j, in
    index order, is the start's float64 CDF plus a step function that changes only at those sites: between
    two consecutive sites of M_j (sorted) it is the start's CDF shifted by the accumulated weight changes,
    and one ``searchsorted`` per such segment finds the first index whose CDF exceeds u_j times the
    normaliser. For L = 1 this is :func:`~gradmc.samplers.base.sample_categorical` with the same uniform
    (same weights, CDF and inversion, so the same index). Rows where the remaining mass loses precision
    (see :data:`CANCELLATION_TOL`), a flipped-back weight would overflow, or no segment holds the target by
    rounding are redrawn (and scored) by the reference functions, which map u to the same path in exact
    arithmetic: the switch does not bias the draw.

    Args:
        logits: (C, D); u: (C, L) float64 uniforms.

    Returns:
        sites (C, L) int64; log_prob (C,) float64, sum_j log softmax(s_{j-1} * logits)[i_j] (as
        :meth:`PAS.log_path_probability` with reverse=False, from the normalisers the draw inverted).
    """
    C, D = logits.shape
    L = u.shape[1]
    top = logits.amax(-1, keepdim=True)
    weights = exp_below_max(logits, top)  # (C, D), as sample_categorical
    cdf = weights.cumsum(-1, dtype=torch.float64)
    total = cdf[:, -1:].contiguous()  # (C, 1)
    new = _invert(cdf, u[:, :1] * total, total)  # (C, 1)
    top = top.to(torch.float64)
    chosen = logits.gather(1, new).to(torch.float64)
    if L == 1:
        return new, (chosen - top - total.log()).squeeze(1)
    base = weights.gather(1, new).to(torch.float64)  # w_i, as in the CDF
    back_exp = (chosen + top).neg_()  # -l_i - m
    draws, terms, norms, remains = [new], [chosen - top], [total], []
    # one slot per draw: its site (-1 for a repeat of an earlier slot's site), base weight w_i, the weight change
    # exp(-l_i - m) - w_i when its sign is flipped, and whether its site is in M now (never for a repeat)
    slots, active = new, torch.ones_like(new, dtype=torch.bool)
    change = back_exp.clamp(max=FLIP_BACK_EXP_MAX).exp_().sub_(base)
    high = back_exp
    zeros, ends = torch.zeros_like(new), torch.full_like(new, D)
    for j in range(1, L):
        delta = change * active
        removed = (base * active).sum(1, keepdim=True)
        norm = total + delta.sum(1, keepdim=True)  # the normaliser of point j, relative to exp(m)
        norms.append(norm)
        remains.append(total - removed)
        raw = invert_shifted(cdf, u[:, j:j + 1] * norm, slots, delta, zeros, ends)  # (C, 1), D: none
        draws.append(raw)
        new = raw.clamp(max=D - 1)
        match = slots == new  # (C, j)
        chosen = logits.gather(1, new).to(torch.float64)
        new_exp = (chosen + top).neg_()  # the step's log-weight is l_i - m, or -l_i - m if i is in M
        terms.append(torch.where((match & active).any(1, keepdim=True), new_exp, chosen - top))
        if j < L - 1:
            repeat = match.any(1, keepdim=True)  # a repeat gets a slot of site -1 (never matched, empty segment)
            active = torch.cat([active ^ match, ~repeat], 1)  # the matched site leaves or re-enters M
            slots = torch.cat([slots, new.masked_fill(repeat, -1)], 1)
            new_base = weights.gather(1, new).to(torch.float64)
            base = torch.cat([base, new_base], 1)
            change = torch.cat([change, new_exp.clamp(max=FLIP_BACK_EXP_MAX).exp_().sub_(new_base)], 1)
            high = torch.maximum(high, new_exp)
    sites = torch.cat(draws, 1)
    log_prob = torch.cat(terms, 1).sum(1) - torch.cat(norms, 1).log_().sum(1)
    bad = ((torch.cat(remains, 1) < CANCELLATION_TOL * total).any(1) | (sites == D).any(1)
           | (high > FLIP_BACK_EXP_MAX).squeeze(1))
    if bad.any():
        rows = bad.nonzero().squeeze(1)
        sites[rows] = reference_draw_path(logits[rows], u[rows])
        log_prob[rows] = reference_log_path_probability(logits[rows], sites[rows], False).to(log_prob.dtype)
    return sites, log_prob


@dataclass(frozen=True)
class PathFields:
    """The fields of the path auxiliary kernels (:class:`PAS`, :class:`~.pas_wor.PASWithoutReplacement`), checked at
    construction: ``path_length`` L >= 1, the flips per proposal, and ``temperature`` T > 0 of the proposal
    softmax((1 - 2 y) grad f(x) / T) (2: the locally balanced sqrt weight).

    Raises:
        ValueError: path_length not an int >= 1, or temperature <= 0.
    """

    path_length: int = 3
    temperature: float = 2.0

    def __post_init__(self):
        self._validate()
        if not (isinstance(self.path_length, int) and not isinstance(self.path_length, bool)
                and self.path_length >= 1):
            raise ValueError(f"{type(self).__name__} path_length must be an int >= 1, got {self.path_length!r}")

    @property
    def num_draws(self) -> int:
        """The path length L, the number of indices drawn per step."""
        return self.path_length

    @torch.no_grad()
    def transition_probabilities(self, x: torch.Tensor, log_prob) -> tuple[torch.Tensor, torch.Tensor]:
        """Enumerate one step from each x: every sequence of sites the proposal can draw (the kernel's
        ``sequences``: D**L paths for PAS, D! / (D - L)! ordered distinct sites for PAS-L-wor), then "stay".
        The sequence density (``log_forward``) and the acceptance (``log_acceptance``) are the ones ``step``
        uses.

        Args:
            x: (C, D) binary states.

        Returns:
            next_states: (C, M + 1, D), the end points of the M sequences, then x itself;
            probs: (C, M + 1), q_x(sequence) min(1, alpha), then the rejected mass. Costs M + 1 target
            evaluations with gradients per row of x (meant for D <= 10, L <= 3).
        """
        C, D = x.shape
        paths = self.sequences(D).to(x.device)  # (M, L)
        f_x, grad_x = log_prob_and_grad(log_prob, x)
        M = paths.shape[0]
        xs, gs = x.repeat_interleave(M, 0), grad_x.repeat_interleave(M, 0)  # (C * M, D)
        sites = paths.repeat(C, 1)  # (C * M, L)
        x_new = self.end_point(xs, sites)
        f_new, grad_new = log_prob_and_grad(log_prob, x_new)
        log_alpha = self.log_acceptance(xs, sites, f_x.repeat_interleave(M), gs, f_new, grad_new)
        log_path = self.log_forward(self.proposal_logits(xs, gs), sites)
        move = (torch.exp(log_path) * acceptance_probability(log_alpha, f_new)).reshape(C, M)
        stay = 1.0 - move.sum(1, keepdim=True)
        return torch.cat([x_new.reshape(C, M, D), x[:, None, :]], 1), torch.cat([move, stay], 1)


@register_sampler("PAS-{path_length}", family="later", colour="darkorange", order=60, examples=("PAS-3",),
                  adapt=("path_length", "int"), doc="path auxiliary sampler (Sun et al., ICLR 2022), a path of L flips")
@dataclass(frozen=True)
class PAS(PathFields, GradientFlipMH):
    """Path auxiliary sampler for binary states (C, D) (see the module docstring for the proposal and
    the acceptance ratio; ICLR 2022 paper, Sec. 3-4, binary gradient version).

    Args:
        path_length: R >= 1, the number of flips of the path (fixed).
        temperature: T > 0 of the per-step proposal softmax((1 - 2 y) grad f(x) / T); 2 is the paper's
            sqrt (locally balanced) weight.

    ``step`` and ``transition_probabilities`` share ``proposal_logits`` (inherited from GWG) and the fast
    path-density code behind ``log_path_probability`` and ``log_acceptance``; the tests compare it, and the
    draw, with the reference functions :func:`reference_log_path_probability` and :func:`reference_draw_path`.

    Cost per step: ONE function+gradient evaluation, at x' (energy_evals = grad_evals = 1); f and grad f
    at x come from the state's cache, as in GWG (2 on the first step after ``init``, after a target
    change and at the periodic refresh). Beyond it O(C D) elementwise work, as GWG's, and O(C L^2 log D)
    path bookkeeping (module docstring, "Computation"); ``step`` takes the forward path density from the
    draw, and calls ``log_acceptance`` itself only where a subclass redefines it. Info.sites_changed is the
    Hamming distance |x' - x| when accepted (<= L), else 0.

    Raises:
        ValueError: path_length not an int >= 1, or temperature <= 0.
    """

    @property
    def name(self) -> str:
        """"PAS-R" for path length R (as :func:`~gradmc.samplers.discrete.make_sampler` takes it)."""
        return f"PAS-{self.path_length}"

    def log_path_probability(self, logits: torch.Tensor, sites: torch.Tensor, reverse: bool) -> torch.Tensor:
        """log probability of the path through ``sites`` under per-step logits s_j * logits.

        Computed in O(C D + C L^2), float64 inside: the reverse path is the forward-convention path
        i_L, ..., i_1 from the end point x', whose logits are s_L * logits; at each point only the <= L
        sites flipped an odd number of times since that path's start change weight, so each point's
        normaliser is the start's sum of weights corrected at those sites. Rows where that correction
        loses precision (:data:`CANCELLATION_TOL`, :data:`FLIP_BACK_EXP_MAX`) are recomputed by
        :func:`reference_log_path_probability`, which the result equals to rounding.

        Args:
            logits: (C, D) proposal logits AT THE PATH'S START x, (1 - 2x) * g / T, for the gradient g
                that scores the path (g = grad f(x) forward, grad f(x') for the reverse path).
            sites: (C, L) int64 indices i_1..i_L in forward order.
            reverse: False: sum_j log softmax(s_{j-1} * logits)[i_j] (forward path x -> x', step j leaves
                y_{j-1}); True: sum_j log softmax(s_j * logits)[i_j] (the reverse path x' -> x, whose
                step flipping i_j leaves y_j).

        Returns:
            (C,) log probability in logits' dtype.
        """
        L = sites.shape[1]
        structure = _path_structure(sites)  # (C, L, 2 L + 4)
        if reverse:  # the forward-convention path i_L, ..., i_1 from the end point, whose logits are s_L * logits
            end_logits = _flip_at(logits, sites, structure[:, :, 2 * L + 2] > 0, torch.neg)
            log_prob = _fast_log_path(end_logits, sites.flip(1), structure[:, :, L + 1:2 * L + 1],
                                      structure[:, :, 2 * L + 1])
        else:
            log_prob = _fast_log_path(logits, sites, structure[:, :, :L], structure[:, :, L])
        return log_prob.to(logits.dtype)

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

        One float64 uniform per chain and step, all drawn at once as (C, L) from ``generator``; step j
        inverts the CDF of its point at u[:, j - 1] in index order (:func:`reference_draw_path` by
        definition, computed in O(C D + C L^2 log D)). With length 1 this is GWG's draw from the same
        generator state.

        Args:
            x: (C, D) start; grad: (C, D) grad f(x).

        Returns:
            (C, L) int64 indices i_1..i_L.
        """
        u = streams.rand((x.shape[0], length), generator, device=x.device, dtype=torch.float64)
        return _fast_draw_path(self.proposal_logits(x, grad), u)[0]

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
        logits = self.proposal_logits(x, ev.grad)  # (C, D)
        u = streams.rand((x.shape[0], self.path_length), generator, device=x.device, dtype=torch.float64)
        sites, log_fwd = _fast_draw_path(logits, u)  # as draw_path; (C, L), (C,)
        structure = _path_structure(sites)  # (C, L, 2 L + 4)
        L = self.path_length
        x_new = _flip_at(x, sites, structure[:, :, 2 * L + 2] > 0, lambda v: 1.0 - v)  # path_end(x, sites)
        mask = structure[:, :, 2 * L + 2:].prod(2) > 0  # each flipped site once (odd count, first occurrence)
        ev_new = eval_flips(log_prob, x, ev, sites, mask, grad=True)
        if type(self).log_acceptance is PAS.log_acceptance:  # log_acceptance, its forward term from the draw
            # log_path_probability(proposal_logits(x, grad f(x')), sites, reverse=True), from x' directly
            log_rev = _fast_log_path(self.proposal_logits(x_new, ev_new.grad), sites.flip(1),
                                     structure[:, :, L + 1:2 * L + 1], structure[:, :, 2 * L + 1]).to(logits.dtype)
            log_alpha = ev_new.log_prob - ev.log_prob + log_rev - log_fwd.to(logits.dtype)
        else:  # a subclass redefines the acceptance ratio
            log_alpha = self.log_acceptance(x, sites, ev.log_prob, ev.grad, ev_new.log_prob, ev_new.grad)
        accepted, acceptance_prob = metropolis_hastings_accept(log_alpha, generator, ev_new.log_prob)
        choose = RowChoice(accepted)  # the rejected rows found once for the state and the evaluation
        x_out = choose(x_new, x)
        out = select(choose, ev_new, ev)
        moved = torch.where(accepted, mask.sum(1), torch.zeros_like(accepted, dtype=torch.long))
        evals = 1 + billed
        info = Info(acceptance_prob=acceptance_prob, accepted=accepted, sites_changed=moved,
                    energy_evals=evals, grad_evals=evals,
                    nonfinite_proposals=count_nonfinite(ev_new.log_prob, log_alpha))
        return bind_state(GWGState(x=x_out, log_prob=out.log_prob, num_steps=state.num_steps + 1,
                                   cache=out if key is not None else None, cache_key=key)), info

    def sequences(self, dim: int) -> torch.Tensor:
        """Every path of R flips over ``dim`` bits, (D**R, R) int64 (repeats allowed), for the enumeration."""
        return torch.tensor(list(itertools.product(range(dim), repeat=self.path_length)), dtype=torch.long)

    def end_point(self, x: torch.Tensor, sites: torch.Tensor) -> torch.Tensor:
        """The end point of the paths ``sites`` (N, R) from x (N, D): :func:`path_end`."""
        return path_end(x, sites)

    def log_forward(self, logits: torch.Tensor, sites: torch.Tensor) -> torch.Tensor:
        """log q_x(path), (N,): :meth:`log_path_probability` with reverse=False."""
        return self.log_path_probability(logits, sites, reverse=False)
