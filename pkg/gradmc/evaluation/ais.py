"""Annealed importance sampling for log Z of discrete energy-based models (Neal 2001; GWG paper App. I).

GWG paper Table 2 reports test log-likelihoods of EBMs whose log Z is estimated by AIS with GWG as the
transition kernel. With an unnormalised model f(x) = log p~(x) and a normalised tractable base p_0
fitted to the data (independent Bernoulli pixels for binary data, independent categoricals for
256-level data), the path of intermediate targets is

    log pi_k(x) = (1 - beta_k) log p_0(x) + beta_k f(x),    0 = beta_0 < beta_1 < ... < beta_K = 1,

(here a linear schedule, beta_k = k / K). Chains start from exact draws x_0 ~ p_0; at level k >= 1 the
weight is updated with the current state and then the state moves with a pi_k-invariant kernel:

    log w += (beta_k - beta_{k-1}) (f(x) - log p_0(x)),    x <- T_k(x),

so E[w] = Z / Z_0 = Z (Z_0 = 1). The estimate log Z_hat = logsumexp(log w) - log N is consistent and,
by Jensen, a stochastic LOWER bound in expectation (E log Z_hat <= log Z); a test log-likelihood
f(x) - log Z_hat is therefore optimistic when AIS has not converged (GWG App. I discusses this). Its
standard error by the delta method is

    se(log Z_hat) = sd(w) / (sqrt(N) mean(w)),

computed stably from normalised weights; the effective sample size of the weights is also returned.

Any sampler of :mod:`gradmc.samplers.discrete` works as T_k (binary (C, D) or one-hot (C, D, K)
states). Each level passes a NEW intermediate-target object, so a kernel's cached evaluation of the
previous level never matches (:mod:`gradmc.core.incremental`: the key holds the target object) and
the first step of every level asks the target for the current state afresh. Every intermediate target is
linear in the two terms, log pi_k = (1 - beta_k) log p_0 + beta_k f, and so is its gradient; the targets of
one run therefore share a :class:`_TermMemo` holding f, grad f, log p_0 and grad log p_0 at the last two
batches evaluated (the state and the last proposal), and answer that request, and the weight update's f(x),
by combining stored terms row by row. A gradient kernel (GWG) then evaluates the model once per level, at
its proposal, instead of three times (the state's value and gradient at the new beta, the proposal, and the
weight's forward pass).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch

from gradmc.core.gradients import log_prob_and_grad
from gradmc.core.incremental import Evaluation, fingerprint

__all__ = ["BernoulliBase", "CategoricalBase", "AISResult", "ais_log_partition", "linear_schedule",
           "log_z_lower_bound"]


def _check_fit_data(data: torch.Tensor, ndim: int, what: str, alpha: float) -> None:
    """Raise ValueError unless ``data`` has ``ndim`` dimensions and at least one row, and alpha > 0."""
    if data.dim() != ndim or data.shape[0] < 1:
        raise ValueError(f"data must be {what} with N >= 1, got shape {tuple(data.shape)}")
    if alpha <= 0:
        raise ValueError(f"alpha must be > 0, got {alpha}")


class BernoulliBase:
    """Independent Bernoulli base p_0(x) = prod_i p_i^x_i (1 - p_i)^(1 - x_i) over binary (C, D) states.

    Args:
        logits: (D,) log-odds.

    Use :meth:`fit` to set p_i to smoothed data means: p_i = (sum_n x_ni + alpha) / (N + 2 alpha).
    """

    def __init__(self, logits: torch.Tensor):
        if logits.dim() != 1:
            raise ValueError(f"logits must be (D,), got shape {tuple(logits.shape)}")
        self.logits = logits

    @classmethod
    def fit(cls, data: torch.Tensor, alpha: float = 1.0) -> BernoulliBase:
        """Base from data (N, D) in {0, 1} with add-alpha smoothing (alpha > 0 keeps every p_i in (0, 1))."""
        _check_fit_data(data, 2, "(N, D)", alpha)
        p = (data.double().sum(0) + alpha) / (data.shape[0] + 2.0 * alpha)
        return cls(torch.log(p) - torch.log1p(-p))

    def log_prob(self, x: torch.Tensor) -> torch.Tensor:
        """Normalised log p_0(x): (C, D) -> (C,) in x's dtype."""
        logits = self.logits.to(x)
        return (x * logits).sum(-1) - torch.nn.functional.softplus(logits).sum()

    def sample(self, num: int, generator: torch.Generator) -> torch.Tensor:
        """num exact draws (num, D) float64 on the logits' device."""
        probs = torch.sigmoid(self.logits.double())
        return torch.bernoulli(probs.expand(num, -1), generator=generator)


class CategoricalBase:
    """Independent categorical base over one-hot (C, D, K) states: log p_0(x) = sum_i <x_i, log pi_i>.

    Args:
        log_probs: (D, K) normalised log-probabilities per site.
    """

    def __init__(self, log_probs: torch.Tensor):
        if log_probs.dim() != 2:
            raise ValueError(f"log_probs must be (D, K), got shape {tuple(log_probs.shape)}")
        self.log_probs = torch.log_softmax(log_probs.double(), -1)

    @classmethod
    def fit(cls, data: torch.Tensor, alpha: float = 1.0) -> CategoricalBase:
        """Base from one-hot data (N, D, K) with add-alpha smoothing per category."""
        _check_fit_data(data, 3, "one-hot (N, D, K)", alpha)
        return cls(torch.log(data.double().sum(0) + alpha))

    @classmethod
    def fit_indices(cls, levels: torch.Tensor, num_levels: int, alpha: float = 1.0) -> CategoricalBase:
        """Base from integer data (N, D) with values in [0, num_levels) (memory-light :meth:`fit`)."""
        _check_fit_data(levels, 2, "(N, D) integer levels", alpha)
        if int(levels.min()) < 0 or int(levels.max()) >= num_levels:
            raise ValueError(f"levels must lie in [0, {num_levels}), got [{int(levels.min())}, {int(levels.max())}]")
        counts = torch.zeros(levels.shape[1], num_levels, dtype=torch.float64)
        counts.scatter_add_(1, levels.t().long().cpu(), torch.ones(levels.t().shape, dtype=torch.float64))
        return cls(torch.log(counts + alpha))

    def log_prob(self, x: torch.Tensor) -> torch.Tensor:
        """Normalised log p_0(x): (C, D, K) -> (C,)."""
        return (x * self.log_probs.to(x)).sum((-1, -2))

    def sample(self, num: int, generator: torch.Generator) -> torch.Tensor:
        """num exact one-hot draws (num, D, K) float64."""
        d, k = self.log_probs.shape
        idx = torch.multinomial(self.log_probs.exp(), num, replacement=True, generator=generator).t()  # (num, D)
        return torch.nn.functional.one_hot(idx, k).double()


class _Terms:
    """f, log p_0 and (when computed) their gradients at a batch of states x (C, ...), detached."""

    __slots__ = ("x", "f", "log_p0", "grad_f", "grad_log_p0")

    def __init__(self, x, f, log_p0, grad_f=None, grad_log_p0=None):
        self.x, self.f, self.log_p0, self.grad_f, self.grad_log_p0 = x, f, log_p0, grad_f, grad_log_p0


class _TermMemo:
    """The two terms of every intermediate target of one AIS run at the last batches evaluated (module docstring).

    ``terms(x, grad)`` returns a :class:`_Terms` of x: rows equal to a row at the same position of a stored
    batch are copied from it (a kernel's next state takes each row from its state or its proposal); when
    any row is new, the whole batch is evaluated (the model once, with autograd when ``grad``). The result is
    stored as the newest batch; the :data:`KEEP` newest are kept. Values are the model's own, so a combined
    target equals a fresh evaluation up to the batch's floating-point rounding.
    """

    #: stored batches: a kernel's state and its last proposal
    KEEP = 2

    def __init__(self, model: Callable, base):
        self.model, self.base, self.stored = model, base, []

    def _evaluate(self, x: torch.Tensor, grad: bool) -> _Terms:
        x = x.detach().clone()
        if not grad:
            with torch.no_grad():
                return _Terms(x, self.model(x).detach(), self.base.log_prob(x).detach())
        f, grad_f = log_prob_and_grad(self.model, x)
        with torch.enable_grad():
            x_req = x.clone().requires_grad_(True)
            log_p0 = self.base.log_prob(x_req)
            (grad_log_p0,) = torch.autograd.grad(log_p0.sum(), x_req)
        return _Terms(x, f, log_p0.detach(), grad_f, grad_log_p0)

    def _lookup(self, x: torch.Tensor, grad: bool) -> _Terms | None:
        """The terms at x from the stored batches, or None when a row is in none of them (or, with ``grad``,
        only in one without gradients). A row found in several batches is taken from the newest. Gradients
        come along whenever every usable batch has them.

        One host sync (on an accelerator, the loop's only wait per lookup): whether every row was found, and
        whether the newest batch holds them all (then it is returned as it is). The rows are selected by a
        ``torch.where`` chain that needs none."""
        rows = x.shape[0]
        flat = x.reshape(rows, -1)
        usable = [held for held in self.stored
                  if held.x.shape == x.shape and held.x.dtype == x.dtype and (held.grad_f is not None or not grad)]
        if not usable:
            return None
        matches = [(held.x.reshape(rows, -1) == flat).all(1) for held in usable]  # newest first
        found = matches[0]
        for same in matches[1:]:
            found = found | same
        all_found, all_newest = torch.stack((found.all(), matches[0].all())).tolist()
        if not all_found:
            return None
        if all_newest:
            return usable[0]
        with_grad = all(held.grad_f is not None for held in usable)
        oldest = usable[-1]
        out = _Terms(x.detach().clone(), oldest.f, oldest.log_p0,
                     oldest.grad_f if with_grad else None, oldest.grad_log_p0 if with_grad else None)
        wide_shape = (rows, *([1] * (x.dim() - 1)))
        for held, same in zip(usable[-2::-1], matches[-2::-1], strict=True):  # newer batches overwrite older
            out.f = torch.where(same, held.f, out.f)
            out.log_p0 = torch.where(same, held.log_p0, out.log_p0)
            if with_grad:
                wide = same.view(wide_shape)
                out.grad_f = torch.where(wide, held.grad_f, out.grad_f)
                out.grad_log_p0 = torch.where(wide, held.grad_log_p0, out.grad_log_p0)
        return out

    def terms(self, x: torch.Tensor, grad: bool) -> _Terms:
        """The terms at states x (C, ...); with their gradients when ``grad``. Stored as the newest batch."""
        found = self._lookup(x, grad)
        found = found if found is not None else self._evaluate(x, grad)
        self.stored = [found, *(held for held in self.stored if held is not found)][:self.KEEP]
        return found


class _Intermediate:
    """log pi_beta(x) = (1 - beta) log p_0(x) + beta f(x), callable on a batch (differentiable in x).

    ``eval_state`` (the kernels' optional method, :func:`gradmc.core.incremental.evaluate`) combines the terms
    of the run's shared :class:`_TermMemo` instead of evaluating the model.
    """

    def __init__(self, model: Callable, base, beta: float, memo: _TermMemo):
        self.model, self.base, self.beta, self.memo = model, base, float(beta), memo

    def cache_fingerprint(self) -> tuple | None:
        """For kernel caches: beta and the model's fingerprint (None, never cached, if the model has none).
        The base is fitted once and never changed in place."""
        mark = fingerprint(self.model)
        return None if mark is None else (self.beta, id(self.base), mark)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return (1.0 - self.beta) * self.base.log_prob(x) + self.beta * self.model(x)

    def eval_state(self, x: torch.Tensor, grad: bool) -> Evaluation:
        """:class:`~gradmc.core.incremental.Evaluation` of log pi_beta at x (C, ...) from the memo's terms (the
        model is evaluated only for a batch the memo does not hold)."""
        t = self.memo.terms(x, grad)
        value = (1.0 - self.beta) * t.log_p0 + self.beta * t.f
        if not grad:
            return Evaluation(value)
        return Evaluation(value, (1.0 - self.beta) * t.grad_log_p0 + self.beta * t.grad_f)


def log_z_lower_bound(log_f: Callable[[torch.Tensor], torch.Tensor], states: torch.Tensor, batch: int = 1024,
                      transform: Callable[[torch.Tensor], torch.Tensor] | None = None) -> float:
    """A deterministic lower bound on log Z = log sum_x exp f(x): logsumexp of f over the DISTINCT rows of
    ``states`` (any set of states, e.g. the training images and the replay buffer; duplicates are dropped,
    since each state may be counted once). Every term of Z is positive, so the bound holds exactly, and
    mean f(x_test) - bound is a hard upper bound on the test log-likelihood: an AIS estimate above it is
    provably wrong (AIS's own log Z_hat is only a lower bound in expectation).

    Args:
        log_f: unnormalised log-density, (C, ...) -> (C,).
        states: (N, D) binary or (N, D, K) one-hot states (float), or any encoding ``transform`` maps to
            log_f's input (e.g. (N, D) level indices with a one-hot ``transform``: distinct rows are found on
            the compact encoding, and only a batch at a time is expanded).
        batch: rows per evaluation.
        transform: optional batch -> model input.

    Returns:
        The bound in nats (float).

    Raises:
        ValueError: no states, or a non-finite f value (names how many).
    """
    if states.shape[0] < 1:
        raise ValueError("log_z_lower_bound needs at least one state")
    distinct = torch.unique(states.reshape(states.shape[0], -1), dim=0).reshape(-1, *states.shape[1:])
    with torch.no_grad():
        f = torch.cat([log_f(transform(part) if transform else part).double()
                       for part in (distinct[i:i + batch] for i in range(0, distinct.shape[0], batch))])
    if not bool(torch.isfinite(f).all()):
        raise ValueError(f"log_z_lower_bound: {int((~torch.isfinite(f)).sum())} non-finite f values")
    return float(torch.logsumexp(f, 0))


def linear_schedule(num_intermediate: int) -> torch.Tensor:
    """beta_k = k / K for k = 0..K, K = num_intermediate >= 1: (K + 1,) float64 (the GWG paper's schedule)."""
    if int(num_intermediate) != num_intermediate or num_intermediate < 1:
        raise ValueError(f"num_intermediate must be an integer >= 1, got {num_intermediate!r}")
    return torch.linspace(0.0, 1.0, int(num_intermediate) + 1, dtype=torch.float64)


@dataclass(frozen=True)
class AISResult:
    """log_z: the estimate log Z_hat; log_z_se: its delta-method standard error; weights_ess: (sum w)^2 /
    sum w^2 over chains; log_weights: (N,) final log weights; checkpoints: {k: log Z_hat after k levels,
    estimated as if the schedule ended there (only the requested ones)}; seconds: wall time."""

    log_z: float
    log_z_se: float
    weights_ess: float
    log_weights: torch.Tensor
    checkpoints: dict
    seconds: float


def _summarise(log_w: torch.Tensor) -> tuple[float, float, float]:
    n = log_w.shape[0]
    log_z = float(torch.logsumexp(log_w, 0) - math.log(n))
    w = torch.exp(log_w - log_w.max())  # normalised so max = 1
    mean = w.mean()
    se = float(w.std(unbiased=True) / (math.sqrt(n) * mean)) if n > 1 else float("nan")
    ess = float(w.sum() ** 2 / (w * w).sum())
    return log_z, se, ess


@torch.no_grad()
def ais_log_partition(
    model: Callable[[torch.Tensor], torch.Tensor],
    base: BernoulliBase | CategoricalBase,
    sampler,
    *,
    num_chains: int,
    betas: torch.Tensor,
    generator: torch.Generator,
    steps_per_level: int = 1,
    device: str | torch.device = "cpu",
    dtype: torch.dtype = torch.float32,
    checkpoints: tuple[int, ...] = (),
    progress: Callable[[str], None] | None = None,
) -> AISResult:
    """Estimate log Z of the unnormalised ``model`` by AIS from ``base`` (module docstring).

    Args:
        model: x -> f(x) (C,), differentiable in x for gradient-based samplers (GWG).
        base: normalised base with ``log_prob`` and ``sample`` (binary or categorical, matching the sampler).
        sampler: a discrete kernel with ``init(x, log_prob)`` and ``step(state, log_prob, generator)``.
        num_chains: N >= 2 independent AIS runs.
        betas: (K + 1,) increasing schedule from 0 to 1 (e.g. :func:`linear_schedule`).
        generator: randomness of the base draws and the kernels (on ``device``).
        steps_per_level: kernel steps at each intermediate level (>= 1).
        device, dtype: where and in which precision the chains live (weights are accumulated in float64).
        checkpoints: level indices k at which to record log Z_hat as if beta_k were the end (Fig. 14's
            convergence curve needs separate runs per K; checkpoints are a cheap diagnostic).
        progress: optional callable receiving about 10 progress lines.

    Returns:
        :class:`AISResult`.

    Raises:
        ValueError: bad schedule (not starting at 0, ending at 1, strictly increasing), num_chains < 2,
            steps_per_level < 1, or a non-finite weight (the model returned NaN/inf).
    """
    betas = torch.as_tensor(betas, dtype=torch.float64).cpu()
    if betas.dim() != 1 or betas.numel() < 2 or float(betas[0]) != 0.0 or float(betas[-1]) != 1.0 or \
            not bool((betas[1:] > betas[:-1]).all()):
        raise ValueError("betas must be a strictly increasing 1-D schedule from 0 to 1, e.g. linear_schedule(K)")
    if num_chains < 2:
        raise ValueError(f"num_chains must be >= 2 (the standard error needs two), got {num_chains}")
    if steps_per_level < 1:
        raise ValueError(f"steps_per_level must be >= 1, got {steps_per_level}")
    start = time.perf_counter()
    x = base.sample(num_chains, generator).to(device=device, dtype=dtype)
    log_w = torch.zeros(num_chains, dtype=torch.float64, device=x.device)
    levels = betas.numel() - 1
    state, recorded = None, {}
    memo = _TermMemo(model, base)
    with torch.enable_grad():  # gradient-based kernels differentiate the intermediate targets
        for k in range(1, levels + 1):
            x_now = state.x if state is not None else x
            terms = memo.terms(x_now, grad=False)
            delta = float(betas[k] - betas[k - 1])
            log_w += delta * (terms.f - terms.log_p0).double()
            # every level on CPU (free, and before a NaN reaches the kernel); on an accelerator only at the end,
            # so the loop never waits on the device
            if not log_w.is_cuda and not bool(torch.isfinite(log_w).all()):
                raise ValueError(f"non-finite AIS weight at level {k}: the model returned NaN or inf")
            if k in checkpoints:
                recorded[k] = _summarise(log_w)[0]
            if k == levels:
                break  # the last transition would not change any weight
            target = _Intermediate(model, base, float(betas[k]), memo)
            if state is None:
                state = sampler.init(x_now, target)
            for _ in range(steps_per_level):
                state, _ = sampler.step(state, target, generator)
            if progress is not None and (k % max(levels // 10, 1) == 0 or k == levels):
                progress(f"[ais] level {k}/{levels}: log Z_hat {_summarise(log_w)[0]:.3f}")
    if not bool(torch.isfinite(log_w).all()):  # checked once: a NaN or inf stays in the weight for good
        raise ValueError("non-finite AIS weight: the model returned NaN or inf on some level")
    log_z, se, ess = _summarise(log_w)
    return AISResult(log_z=log_z, log_z_se=se, weights_ess=ess, log_weights=log_w.cpu(), checkpoints=recorded,
                     seconds=time.perf_counter() - start)
