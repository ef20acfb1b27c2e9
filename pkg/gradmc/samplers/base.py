"""The kernel API shared by every sampler, and the one Metropolis-Hastings acceptance step.

A sampler is a small frozen dataclass of hyper-parameters with two pure methods (after BlackJAX):

- ``init(x, log_prob) -> State``
- ``step(state, log_prob, generator) -> (State, Info)``

The target ``log_prob(x) -> (C,)`` is passed at call time, so annealing (AIS), tempering and PCD reuse
the same kernels unchanged. ``State`` is a NamedTuple specific to each sampler (always with ``x``);
``Info`` below is common to all of them. Chains are the leading dimension of every tensor.

Non-finite values (one rule for every kernel, implemented once here):

- a NaN or infinite log_prob, gradient or proposal logit at a chain's CURRENT state (at ``init`` and
  at each ``step``) raises :class:`NonFiniteError` (a ``ValueError``) via :func:`check_finite`, naming
  the sampler, the step and the affected chains: no kernel can move a chain from such a state, and
  continuing would freeze it or corrupt it silently;
- a PROPOSAL whose log_prob is NaN or +inf (or whose acceptance ratio is NaN) is rejected by
  :func:`metropolis_hastings_accept`, so a chain only ever moves to states of finite log_prob. A
  proposal of log_prob -inf (zero density, or a zero pseudo-marginal estimate) is an ordinary rejection.
  Such rejections are not silent: ``Info.nonfinite_proposals`` counts them per chain (:func:`count_nonfinite`),
  and the experiment runner warns about them. Kernels that meet a non-finite value only where they cannot
  reject it (Gibbs-type conditionals, Hamming-ball blocks, D-SVGD, HABC) raise instead and report 0.

Each state carries ``num_steps``, the number of steps taken since ``init``, for these messages.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch

import gradmc.core.streams as streams

__all__ = ["Info", "NonFiniteError", "check_finite", "count_nonfinite", "check_current_gradient", "check_conditional",
           "acceptance_probability", "metropolis_hastings_accept", "hamiltonian_accept", "sample_categorical",
           "EXP_FLOOR", "exp_below_max", "draw_from_weights", "log_normaliser", "log_softmax"]

#: How many affected chain indices a :class:`NonFiniteError` message lists.
MAX_LISTED_CHAINS = 8


class Info(NamedTuple):
    """Per-step diagnostics of a transition kernel.

    Attributes:
        acceptance_prob: (C,) float, the Metropolis-Hastings acceptance probability min(1, alpha);
            1 for Gibbs-type kernels that always accept.
        accepted: (C,) bool, whether the proposal was taken.
        sites_changed: (C,) int64, number of coordinates of x that differ after the step.
        energy_evals: int, evaluations of the target per step, counted per chain-batch call
            (one call of ``log_prob`` on a (C, D) batch counts as 1, on a (C * 2**X, D) batch
            as 2**X), including those that come with a gradient.
        grad_evals: int, gradient evaluations of the target per step, counted the same way.
        nonfinite_proposals: (C,) int64, 1 for a chain whose proposal this step was rejected because a value
            at it was not finite: its log_prob NaN or +inf, or a non-finite gradient (or momentum) entry
            that made the acceptance ratio NaN or +inf (:func:`count_nonfinite`); 0 otherwise. Every kernel
            that rejects such proposals fills it; the int 0 (the default) from kernels that have no
            proposal to reject or raise :class:`NonFiniteError` instead, so ``torch.as_tensor(n).sum()``
            totals either form.
    """

    acceptance_prob: torch.Tensor
    accepted: torch.Tensor
    sites_changed: torch.Tensor
    energy_evals: int
    grad_evals: int
    nonfinite_proposals: torch.Tensor | int = 0


class NonFiniteError(ValueError):
    """A NaN or infinite value where a sampler needs a finite one (see the module docstring).

    Attributes (also the constructor's arguments, in this order):
        sampler: the sampler's paper name, e.g. "GWG", "Gibbs-1", "HB-10-1", "R-MALA", "HMC".
        what: the quantity, e.g. "log_prob at the current state".
        step: 0 at ``init``, k >= 1 in the k-th ``step`` since ``init``, None if unknown (a caller that
            knows it may set it before re-raising; the message is formatted from the attributes).
        chains: (list of int) indices of ALL affected chains (the message lists the first few).
        num_chains: C, the number of chains checked.
        value: the first offending value (nan, inf or -inf).
    """

    def __init__(self, sampler: str, what: str, step: int | None, chains: list[int], num_chains: int,
                 value: float):
        super().__init__(sampler, what, step, chains, num_chains, value)  # args: picklable, e.g. across workers
        self.sampler, self.what, self.step, self.chains = sampler, what, step, list(chains)
        self.num_chains, self.value = num_chains, value

    def __str__(self) -> str:
        where = "" if self.step is None else " at init" if self.step == 0 else f" in step {self.step} since init"
        listed = ", ".join(map(str, self.chains[:MAX_LISTED_CHAINS]))
        more = ", ..." if len(self.chains) > MAX_LISTED_CHAINS else ""
        first = f"; first: {self.value} in chain {self.chains[0]}" if self.chains else ""
        return (f"{self.sampler}: non-finite {self.what}{where} in {len(self.chains)} of {self.num_chains} chains "
                f"[{listed}{more}]{first}. Check the target (its parameters, inputs, numerical range) and the "
                "initial states")


def check_finite(sampler: str, step: int | None, *checks: tuple[str, torch.Tensor],
                 allow_neg_inf: bool = False) -> None:
    """Raise :class:`NonFiniteError` unless every checked tensor is finite.

    Hot path: one sum per tensor (NaN and inf propagate through a sum; ``torch.isfinite`` costs several
    element-wise passes and allocations), added on the device, and ONE host read of the total (a device
    synchronisation on an accelerator). Only a non-finite total, which a rare overflow of large finite
    values can also give, runs the exact per-chain check, which then raises (or, after an overflow, passes).

    Args:
        sampler: the sampler's name for the message, e.g. ``kernel.name`` ("GWG", "HB-10-1").
        step: 0 at ``init``, k >= 1 for the k-th step since init (``state.num_steps + 1``), None if unknown.
        *checks: (what, tensor) pairs; tensor (C, ...) floating, chain-major (a 0-dim tensor counts as
            one chain); ``what`` names it ("log_prob at the current state").
        allow_neg_inf: accept -inf entries (reject only NaN and +inf), e.g. for a zero pseudo-marginal
            estimate at the current state.

    Raises:
        NonFiniteError: for the first failing tensor, naming the sampler, ``what``, the step, the number
            of affected chains and the first :data:`MAX_LISTED_CHAINS` of them, and the first bad value.
    """
    if not checks:
        return
    total = checks[0][1].sum()
    for _, t in checks[1:]:
        total = total + t.sum()
    total = float(total)
    if (total < math.inf) if allow_neg_inf else math.isfinite(total):
        return

    def good(t: torch.Tensor) -> torch.Tensor:
        return t < torch.inf if allow_neg_inf else torch.isfinite(t)

    for what, t in checks:
        per_chain = good(t).reshape(t.shape[0], -1).all(1) if t.dim() else good(t).reshape(1)
        bad = (~per_chain).nonzero().flatten().tolist()
        if not bad:
            continue
        first = t.reshape(t.shape[0], -1)[bad[0]] if t.dim() else t.reshape(1)
        value = float(first[~good(first)][0])
        raise NonFiniteError(sampler, what, step, bad, per_chain.numel(), value)


def check_current_gradient(sampler: str, state, f_x: torch.Tensor, grad_x: torch.Tensor) -> None:
    """The current-state check of the gradient-informed kernels (GWG, PAS, DMALA, DLMC, ...): f(x) (C,) and
    grad f(x) (C, D) or (C, D, K), hence the proposal logits, finite at step ``state.num_steps + 1``.

    Raises:
        NonFiniteError: either holds NaN or +-inf; the message names the sampler, the step and the chains.
    """
    check_finite(sampler, state.num_steps + 1, ("log_prob at the current state", f_x),
                 ("gradient of log_prob at the current state", grad_x))


def check_conditional(sampler: str, step: int | None, logits: torch.Tensor) -> None:
    """The check of the Gibbs-type kernels: logits (C, K) of an exact conditional over K candidate states.

    -inf entries (zero-probability candidates) are allowed; NaN or +inf on any candidate, or -inf on
    all of a chain's candidates (among them the current state), is not. One ``amax`` per step: it
    propagates NaN, so a finite row maximum means a valid row.

    Raises:
        NonFiniteError: as :func:`check_finite`.
    """
    check_finite(sampler, step, ("log_prob of the candidate states (NaN or +inf on one, or -inf on all)",
                                 logits.amax(-1)))


def count_nonfinite(proposal_log_prob: torch.Tensor, log_alpha: torch.Tensor | None = None) -> torch.Tensor:
    """The :attr:`Info.nonfinite_proposals` of a Metropolis-Hastings step: (C,) int64, 1 where the proposal is
    rejected for a non-finite value.

    Without ``log_alpha``: where ``proposal_log_prob`` is NaN or +inf (what :func:`metropolis_hastings_accept`
    rejects whatever the ratio says). With ``log_alpha`` (the gradient kernels, whose ratio holds terms computed
    from the gradient at the proposal): also where ``log_alpha`` is NaN or +inf, that is, where a non-finite
    gradient entry reached the ratio (the factorised kernels set NaN for a non-finite gradient row). The current
    state's values must then be finite (they are checked first), and a proposal of log_prob -inf with a finite
    ratio is an ordinary rejection, not counted. Two element-wise ops on (C,) tensors, no host synchronisation:
    the sum is NaN or +inf exactly in those cases (or when finite terms above 1e38 overflow).

    Args:
        proposal_log_prob: (C,) log target (or log estimate) at the proposals.
        log_alpha: optional (C,) log acceptance ratio, as passed to :func:`metropolis_hastings_accept`.

    Returns:
        (C,) int64 in {0, 1}.
    """
    total = proposal_log_prob if log_alpha is None else proposal_log_prob + log_alpha
    return torch.where(total < torch.inf, 0, 1)


def acceptance_probability(log_alpha: torch.Tensor, proposal_log_prob: torch.Tensor | None = None) -> torch.Tensor:
    """The Metropolis-Hastings acceptance probability min(1, exp(log_alpha)) (Hastings 1970).

    Args:
        log_alpha: (C,) log acceptance ratio log[pi(x') q(x|x') / (pi(x) q(x'|x))]; NaN counts as -inf.
        proposal_log_prob: optional (C,) log target at the proposals; where it is NaN or +inf the
            probability is 0 (see :func:`metropolis_hastings_accept`).

    Returns:
        (C,) float in [0, 1], the probability :func:`metropolis_hastings_accept` accepts with.
    """
    if proposal_log_prob is not None:
        log_alpha = torch.where(proposal_log_prob < torch.inf, log_alpha, -torch.inf)
    log_alpha = torch.nan_to_num(log_alpha, nan=-torch.inf)
    return torch.exp(torch.clamp(log_alpha, max=0.0))


def metropolis_hastings_accept(
    log_alpha: torch.Tensor, generator: torch.Generator, proposal_log_prob: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Accept each chain's proposal with probability min(1, exp(log_alpha)).

    Args:
        log_alpha: (C,) log acceptance ratio log[pi(x') q(x|x') / (pi(x) q(x'|x))]. NaN counts as
            -inf (the proposal is rejected), so a broken proposal never enters the chain.
        generator: torch.Generator on log_alpha's device.
        proposal_log_prob: optional (C,) log target (or log estimate) at the proposals; a proposal where
            it is NaN or +inf is rejected whatever log_alpha says, so the chain never moves to a state
            of non-finite log_prob (-inf proposals already give log_alpha = -inf or NaN).

    Returns:
        accepted: (C,) bool; acceptance_prob: (C,) float in [0, 1] (:func:`acceptance_probability`).
    """
    acceptance_prob = acceptance_probability(log_alpha, proposal_log_prob)
    u = streams.rand(log_alpha.shape, generator, device=log_alpha.device, dtype=log_alpha.dtype)
    accepted = u < acceptance_prob
    return accepted, acceptance_prob


def hamiltonian_accept(
    x: torch.Tensor, p: torch.Tensor, log_prob_x: torch.Tensor, x_new: torch.Tensor, p_new: torch.Tensor,
    log_prob_new: torch.Tensor, generator: torch.Generator, mass: float = 1.0,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """The accept-and-select step of every Hamiltonian kernel (HMC, KMC, R-HMC; Neal 2011, Eq. 5.7).

    The Hamiltonian is H(x, p) = -log_prob(x) + |p|^2 / (2 mass); the end point (x_new, p_new) of a
    volume-preserving, reversible trajectory is accepted with probability min(1, exp(H(x, p) - H(x_new, p_new)))
    by :func:`metropolis_hastings_accept` (so a NaN or +inf log_prob_new is rejected, and a non-finite
    momentum too: its H is NaN or +inf).

    Args:
        x, p: (C, d) current position and momentum; log_prob_x: (C,) log target at x.
        x_new, p_new: (C, d) end of the trajectory; log_prob_new: (C,) log target (or its estimate) at x_new.
        generator: torch.Generator on x's device.
        mass: scalar mass of the kinetic energy (identity mass matrix times ``mass``).

    Returns:
        x_out: (C, d) x_new where accepted, else x; log_prob_out: (C,) the log target at x_out;
        accepted: (C,) bool; acceptance_prob: (C,) float in [0, 1]; nonfinite: (C,) int64, 1 where the end
        point's log_prob is NaN or +inf or its momentum has a non-finite entry (:attr:`Info.nonfinite_proposals`;
        the current log_prob may be -inf, a zero pseudo-marginal estimate).
    """
    h_old = -log_prob_x + 0.5 * (p * p).sum(-1) / mass
    kinetic_new = 0.5 * (p_new * p_new).sum(-1) / mass
    h_new = kinetic_new - log_prob_new
    accepted, acceptance_prob = metropolis_hastings_accept(h_old - h_new, generator, log_prob_new)
    x_out = torch.where(accepted[:, None], x_new, x)
    nonfinite = count_nonfinite(log_prob_new + kinetic_new)
    return x_out, torch.where(accepted, log_prob_new, log_prob_x), accepted, acceptance_prob, nonfinite


def sample_categorical(logits: torch.Tensor, generator: torch.Generator, return_log_prob: bool = False,
                       num_samples: int | None = None):
    """Draw one index per row from softmax(logits) by inverting the cumulative distribution.

    One uniform per row (not one per entry as with the Gumbel-max trick: on CPU the generator, not
    the arithmetic, dominates a GWG step). The CDF is accumulated in float64, so the bias from
    rounding is far below Monte Carlo resolution. Single draws from rows longer than
    :data:`BLOCKED_DRAW_MIN` invert the same CDF in two levels (:func:`_invert_blocked`).

    Args:
        logits: (..., K) unnormalised log-probabilities; -inf entries are never drawn (rows must have
            at least one finite entry).
        generator: torch.Generator on logits' device.
        return_log_prob: also return log softmax(logits) at the drawn index.
        num_samples: N i.i.d. draws per row from one CDF, returned as (..., N) (the same draws as N
            single draws from the rows of ``logits[..., None, :].expand(..., N, K)``, from the same
            generator stream); None for one draw, returned as (...,).

    Returns:
        (...,) or (..., N) int64 indices in [0, K); with return_log_prob, also their log-probabilities.
    """
    top = logits.amax(-1, keepdim=True)  # (..., 1)
    weights = exp_below_max(logits, top)  # unnormalised, max term 1
    idx, total = draw_from_weights(weights, generator, num_samples)
    shape = (lambda t: t.squeeze(-1)) if num_samples is None else (lambda t: t)
    if return_log_prob:  # log softmax at idx = logit - max - log(sum exp(logits - max))
        log_prob = logits.gather(-1, idx) - top - torch.log(total).to(logits.dtype)
        return shape(idx), shape(log_prob)
    return shape(idx)


def draw_from_weights(weights: torch.Tensor, generator: torch.Generator, num_samples: int | None = None
                      ) -> tuple[torch.Tensor, torch.Tensor]:
    """The inverse-CDF draw of :func:`sample_categorical` from (..., K) nonnegative weights (the row maximum 1, as
    :func:`exp_below_max` gives them): one float64 uniform per draw, the CDF accumulated in float64 (in two levels
    for single draws from rows longer than :data:`BLOCKED_DRAW_MIN`, :func:`_invert_blocked`).

    Returns:
        idx: (..., N) int64, N = num_samples or 1, never an entry of weight 0; total: (..., 1) float64, the row's
        sum of weights (P(k) = weights[k] / total).
    """
    draws = 1 if num_samples is None else num_samples
    u = streams.rand((*weights.shape[:-1], draws), generator, device=weights.device, dtype=torch.float64)
    if weights.shape[-1] > BLOCKED_DRAW_MIN and num_samples is None:
        return _invert_blocked(weights, u)
    cdf = weights.cumsum(-1, dtype=torch.float64)
    total = cdf[..., -1:].contiguous()
    return _invert(cdf, u * total, total), total


#: Rows longer than this are drawn from by :func:`_invert_blocked` (one categorical GWG proposal over a text
#: EBM's 20 x 10,000 (site, value) pairs: the float64 CDF of 200,000 entries per chain costs more than the
#: model's forward and backward pass). Shorter rows keep the flat CDF (their draws are unchanged).
BLOCKED_DRAW_MIN = 16384
#: Entries per block of :func:`_invert_blocked`.
DRAW_BLOCK = 256


def _invert(cdf: torch.Tensor, target: torch.Tensor, total: torch.Tensor) -> torch.Tensor:
    """First index whose (..., K) unnormalised ``cdf`` exceeds ``target`` (..., N), clipped to the last entry of
    positive probability: ``target`` = u * total can round up to ``total`` (..., 1), and the first index where
    the CDF reaches its total is that entry, so a zero-probability entry is never returned."""
    idx = torch.searchsorted(cdf, target, right=True)
    return torch.minimum(idx, torch.searchsorted(cdf, total, right=False))


def _invert_blocked(weights: torch.Tensor, u: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The flat inverse-CDF draw of :func:`sample_categorical` in two levels, for long rows.

    The row of M weights is cut into blocks of :data:`DRAW_BLOCK` entries (the last one shorter); the
    cumulative block totals are inverted at u * total to pick a block, then the float64 CDF of that block
    alone at the remainder. In exact arithmetic this is the index of the flat draw from the same u. Each
    block total is a float32 sum of at most DRAW_BLOCK weights in [0, 1] (relative error about 1e-7: a
    float64 sum costs 30 times more on CPU), accumulated over blocks in float64, so the probabilities drawn
    with differ from the exact ones by about 1e-7 relative, far below Monte Carlo resolution.

    Args:
        weights: (..., M) nonnegative float weights, the maximum 1 (exp_below_max's output).
        u: (..., 1) float64 uniforms.

    Returns:
        idx (..., 1) int64 in [0, M), never an entry of weight 0; total (..., 1) float64, the row's sum.
    """
    M = weights.shape[-1]
    full = M - M % DRAW_BLOCK
    sums = [weights[..., :full].unflatten(-1, (-1, DRAW_BLOCK)).sum(-1)]  # (..., M // DRAW_BLOCK)
    if full < M:
        sums.append(weights[..., full:].sum(-1, keepdim=True))
    block_cdf = torch.cat(sums, -1).to(torch.float64).cumsum(-1)  # (..., B)
    total = block_cdf[..., -1:].contiguous()
    target = u * total
    block = _invert(block_cdf, target, total)  # (..., 1): a block of positive total
    before = torch.where(block > 0, block_cdf.gather(-1, (block - 1).clamp(min=0)), 0.0)
    members = block * DRAW_BLOCK + torch.arange(DRAW_BLOCK, device=weights.device)  # (..., b)
    inner_cdf = weights.gather(-1, members.clamp(max=M - 1)).masked_fill_(members >= M, 0.0)
    inner_cdf = inner_cdf.cumsum(-1, dtype=torch.float64)
    # the remainder can exceed the block's own CDF total by rounding: _invert clips it to the block's last
    # entry of positive weight
    inner = _invert(inner_cdf, (target - before).clamp_(min=0.0), inner_cdf[..., -1:].contiguous())
    return block * DRAW_BLOCK + inner, total


#: exp(z) for z below this is set to exactly 0 by :func:`exp_below_max` (exp(-80) = 1.8e-35).
EXP_FLOOR = -80.0
_EXP_AT_FLOOR = math.exp(EXP_FLOOR)


def exp_below_max(logits: torch.Tensor, top: torch.Tensor) -> torch.Tensor:
    """exp(logits - top) for top >= logits (a row maximum), with every entry below exp(EXP_FLOOR) set to 0.

    Why: the CPU's vectorised exp takes a slow path, 10-40 times slower, on arguments below about -87
    (underflow) and on -inf, which every masked (categorical GWG) or sharply peaked proposal has. So
    the arguments are clamped at EXP_FLOOR = -80 and exp(EXP_FLOOR) is subtracted (then clamped at 0):
    -inf and everything below -80 gives exactly 0, so a masked entry is never drawn, and every other
    entry, relative weight >= 1.8e-35 to the row maximum's 1, moves by at most 1.8e-35, far below float32
    resolution of a probability. Four in-place passes after the subtraction.

    Args:
        logits: (..., K); top: (..., 1) the row maxima (finite).

    Returns:
        (..., K) non-negative weights, the maximum entry 1.
    """
    return (logits - top).clamp_(min=EXP_FLOOR).exp_().sub_(_EXP_AT_FLOOR).clamp_(min=0.0)


def log_normaliser(logits: torch.Tensor) -> torch.Tensor:
    """logsumexp over the last dimension, (..., K) -> (...,), without torch's slow exp on -inf and very
    negative entries (see :func:`exp_below_max`).

    Arguments below EXP_FLOOR relative to the row maximum are clamped there, so each such term counts
    exp(EXP_FLOOR) = 1.8e-35 (relative to the maximum's 1) instead of less: the result exceeds
    ``torch.logsumexp`` by at most K * 1.8e-35, far below float rounding. (Zeroing them, as
    :func:`exp_below_max` does for drawing, is not needed in a sum.) Rows of all -inf give NaN.
    """
    top = logits.amax(-1, keepdim=True)
    weights = (logits - top).clamp_(min=EXP_FLOOR).exp_()
    return (top + weights.sum(-1, keepdim=True).log_()).squeeze(-1)


def log_softmax(logits: torch.Tensor) -> torch.Tensor:
    """log softmax over the last dimension, via :func:`log_normaliser` (same values as torch's)."""
    return logits - log_normaliser(logits)[..., None]
