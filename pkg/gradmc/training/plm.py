"""Pseudo-likelihood maximisation (PLM) for Potts models: the GWG paper's protein baseline (Sec. 5.4, App. H).

Besag (1975); Ekeberg et al. (2013) plmDCA; the plmc / EVcouplings objective (Marks lab):

    F(h, J) = - sum_n w_n sum_i log p(x_ni | x_n,-i) + lambda_h sum_i ||h_i||^2 + lambda_J sum_{i<j} ||J_ij||_F^2
              + lambda_group sum_{i<j} (sqrt(||J_ij||_F^2 + eps^2) - eps),   eps = 1e-3,
    p(x_i = a | x_-i) = softmax_a( h_i(a) + sum_{j != i} J_ij(a, x_j) ),

in the ``gradmc.targets.Potts`` convention (each pair once, J_ji = J_ij^T, J_ii = 0). The coupling
strength is lambda_J = lambda_J_base * (q - 1) * (L - 1) when ``scale_lambda_J`` (EVcouplings' default
``lambda_J_times_Lq``; base 0.01, lambda_h 0.01). Full-batch torch L-BFGS with strong-Wolfe line search
minimises F / sum_n w_n (same minimiser, better scaled). Parameters: h (L, q) and the (Lq, Lq) matrix
M[(i, a), (j, b)] = J_ij(a, b), kept symmetric with zero diagonal blocks by projecting its gradient onto
that subspace (J starts at 0, and L-BFGS steps are combinations of gradients). Fields start at the plmc
initialisation log(f_i(a) Neff + 1), centred. Memory ~ (6 + 2 history_size) (Lq)^2 numbers.

The optional smoothed group-l1 (block-l1) term is the regulariser of the GWG paper (Eq. 34, strength 0.01).
The GWG release's PLM minimises mean_n w_n nll_n (weights rescaled to mean 1) + 0.01 sum_{i,j} ||J_ij||
over ORDERED pairs, i.e. this F / sum(w) with lambda_h = lambda_J = 0 and lambda_group = 0.02 * Neff.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

__all__ = ["PLMResult", "fit_plm", "pseudo_log_likelihood", "zero_sum_gauge", "GROUP_EPS"]

GROUP_EPS = 1e-3


@dataclass(frozen=True, eq=False)
class PLMResult:
    """Output of :func:`fit_plm`.

    Attributes:
        h: (L, q) fields; J: (L, L, q, q) couplings (``Potts(h, J)`` accepts them), CPU, the fit dtype.
        objective: final F / sum(w) (regularised negative pseudo-log-likelihood per effective sequence).
        lambda_h, lambda_J, lambda_group: the strengths used (lambda_J after any (q-1)(L-1) scaling).
        num_iterations, num_evaluations: L-BFGS iterations and objective/gradient evaluations.
        converged: stopped by the tolerance before max_iterations.
        wall_time_s: optimisation time in seconds.
    """

    h: torch.Tensor
    J: torch.Tensor
    objective: float
    lambda_h: float
    lambda_J: float
    lambda_group: float
    num_iterations: int
    num_evaluations: int
    converged: bool
    wall_time_s: float


def _check_states(states, num_states: int) -> torch.Tensor:
    s = torch.as_tensor(np.asarray(states))
    if s.dim() != 2 or s.numel() == 0 or s.dtype.is_floating_point or s.dtype == torch.bool:
        raise ValueError(f"states must be a non-empty (N, L) integer array, got {tuple(s.shape)} {s.dtype}")
    if s.shape[1] < 2 or num_states < 2:
        raise ValueError(f"need L >= 2 positions and q >= 2 states, got L = {s.shape[1]}, q = {num_states}")
    if int(s.min()) < 0 or int(s.max()) >= num_states:
        raise ValueError(f"states must lie in 0..{num_states - 1}, got range {int(s.min())}..{int(s.max())}")
    return s.long()


def _check_weights(weights, n: int, dtype) -> torch.Tensor:
    if weights is None:
        return torch.ones(n, dtype=dtype)
    w = torch.as_tensor(np.asarray(weights), dtype=dtype)
    if w.shape != (n,) or not torch.isfinite(w).all() or (w < 0).any() or w.sum() <= 0:
        raise ValueError(f"weights must be ({n},) finite, >= 0, with a positive sum; got shape {tuple(w.shape)}")
    return w


class _OneHotRowSum(torch.autograd.Function):
    """X @ M for the one-hot matrix X (n, Lq) of idx (n, L): forward sums L rows of M per sequence
    (embedding_bag, O(n L Lq)); backward forms X^T g as one dense matrix product (BLAS), which is several
    times faster than embedding_bag's own sort-based backward for a fixed index set."""

    @staticmethod
    def forward(ctx, M: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(idx)
        ctx.rows = M.shape[0]
        return F.embedding_bag(idx, M, mode="sum")

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        (idx,) = ctx.saved_tensors
        X = torch.zeros(idx.shape[0], ctx.rows, dtype=grad.dtype, device=grad.device)
        X.scatter_(1, idx, 1.0)
        return X.T @ grad, None


def _site_logits(idx: torch.Tensor, M: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
    """(n, L, q) conditional logits h_i(a) + sum_j J_ij(a, x_j); idx (n, L) holds the rows j * q + x_j."""
    L, q = h.shape
    return _OneHotRowSum.apply(M, idx).view(-1, L, q) + h


def _nll(idx, x, M, h) -> torch.Tensor:
    """(n,) negative pseudo-log-likelihood of each sequence."""
    logits = _site_logits(idx, M, h)
    own = logits.gather(2, x.unsqueeze(2)).squeeze(2)
    return (torch.logsumexp(logits, 2) - own).sum(1)


def _rows(x: torch.Tensor, q: int) -> torch.Tensor:
    return x + q * torch.arange(x.shape[1], device=x.device)


def pseudo_log_likelihood(states, h: torch.Tensor, J: torch.Tensor) -> torch.Tensor:
    """sum_i log p(x_i | x_-i) of every sequence under Potts(h, J): states (N, L) -> (N,), J's dtype.

    Raises:
        ValueError: shapes inconsistent (h (L, q), J (L, L, q, q)) or states outside 0..q-1.
    """
    L, q = h.shape
    if tuple(J.shape) != (L, L, q, q):
        raise ValueError(f"J must have shape ({L}, {L}, {q}, {q}) to match h {tuple(h.shape)}, got {tuple(J.shape)}")
    x = _check_states(states, q).to(J.device)
    if x.shape[1] != L:
        raise ValueError(f"states have L = {x.shape[1]} positions, parameters have {L}")
    M = J.permute(0, 2, 1, 3).reshape(L * q, L * q)
    return -_nll(_rows(x, q), x, M, h.to(J.dtype))


def zero_sum_gauge(h: torch.Tensor, J: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The same Potts distribution in the zero-sum (Ising) gauge: every J_ij row/column and every h_i sums to 0.

    J'_ij(a, b) = J_ij(a, b) - J_ij(., b) - J_ij(a, .) + J_ij(., .) and h'_i(a) = h_i(a) + sum_{j != i}
    J_ij(a, .) centred over a (a dot is a mean over states). log p changes only by a constant, so
    parameters of one distribution in any gauge map to the same (h', J'): the way to compare them.
    """
    row = J.mean(3, keepdim=True)  # J_ij(a, .)
    Jz = J - J.mean(2, keepdim=True) - row + J.mean((2, 3), keepdim=True)
    hz = h + row.squeeze(3).sum(1) - row.squeeze(3).diagonal(dim1=0, dim2=1).T  # drop j == i (zero anyway)
    return hz - hz.mean(1, keepdim=True), Jz


def fit_plm(states, num_states: int, *, weights=None, lambda_h: float = 0.01, lambda_J: float = 0.01,
            scale_lambda_J: bool = True, lambda_group: float = 0.0, max_iterations: int = 200,
            tolerance: float = 1e-5, history_size: int = 10, batch_size: int = 8192,
            dtype: torch.dtype = torch.float64, device: str | torch.device = "cpu") -> PLMResult:
    """Regularised pseudo-likelihood maximisation of a Potts model on an alignment.

    Args:
        states: (N, L) integer states in 0..num_states-1 (``alignment.read_a2m`` output).
        num_states: q.
        weights: (N,) sequence weights (``weights.sequence_weights``), default all 1.
        lambda_h: l2 strength on fields.
        lambda_J: l2 strength on couplings (base value when ``scale_lambda_J``).
        scale_lambda_J: multiply lambda_J by (q - 1)(L - 1) as EVcouplings does.
        lambda_group: smoothed group-l1 strength on the coupling blocks (default 0: plain l2 PLM).
        max_iterations: L-BFGS iterations; tolerance: stop when max |gradient| of F / sum(w) is below it.
        history_size: L-BFGS memory; batch_size: sequences per chunk of the objective (memory only).
        dtype, device: where and in what precision to optimise.

    Returns:
        :class:`PLMResult` with h (L, q) and J (L, L, q, q) on the CPU.

    Raises:
        ValueError: bad states / weights, negative lambdas, or non-positive iteration/batch settings.
    """
    x = _check_states(states, num_states).to(device)
    n, L = x.shape
    q = int(num_states)
    w = _check_weights(weights, n, dtype).to(device)
    if min(lambda_h, lambda_J, lambda_group) < 0 or max_iterations < 1 or batch_size < 1 or history_size < 1:
        raise ValueError("lambda_h, lambda_J, lambda_group must be >= 0 and max_iterations, batch_size, "
                         "history_size >= 1")
    lam_J = float(lambda_J) * ((q - 1) * (L - 1) if scale_lambda_J else 1)
    neff = w.sum()
    freq = torch.zeros(L, q, dtype=dtype, device=device).scatter_add_(
        1, x.T, w.expand(L, n).contiguous()) / neff
    h0 = torch.log(freq * neff + 1.0)
    h = (h0 - h0.mean(1, keepdim=True)).requires_grad_()
    M = torch.zeros(L * q, L * q, dtype=dtype, device=device, requires_grad=True)
    off = 1.0 - torch.block_diag(*[torch.ones(q, q, dtype=dtype, device=device)] * L)
    # M starts symmetric with zero diagonal blocks; the hook makes every gradient symmetric with zero
    # diagonal blocks (the gradient of F(J) along symmetric J), so every L-BFGS iterate stays in that set.
    M.register_hook(lambda g: 0.5 * (g + g.T) * off)
    idx = _rows(x, q)
    chunks = [slice(a, a + batch_size) for a in range(0, n, batch_size)]
    opt = torch.optim.LBFGS([h, M], lr=1.0, max_iter=max_iterations, max_eval=int(max_iterations * 1.25) + 1,
                            tolerance_grad=tolerance, tolerance_change=1e-12, history_size=history_size,
                            line_search_fn="strong_wolfe")
    evals = 0

    def objective(backward: bool) -> torch.Tensor:
        total = torch.zeros((), dtype=dtype, device=device)
        for c in chunks:
            part = (w[c] * _nll(idx[c], x[c], M, h)).sum() / neff
            if backward:
                part.backward()
            total += part.detach()
        reg = lambda_h * (h**2).sum() + 0.5 * lam_J * (M**2).sum()  # sum_{i<j} = half the sum over i != j
        if lambda_group > 0:
            block = torch.sqrt((M.view(L, q, L, q) ** 2).sum((1, 3)) + GROUP_EPS**2) - GROUP_EPS  # (L, L)
            reg = reg + 0.5 * lambda_group * block.sum()
        reg = reg / neff
        if backward:
            reg.backward()
        return total + reg.detach()

    def closure() -> torch.Tensor:
        nonlocal evals
        evals += 1
        opt.zero_grad()
        return objective(backward=True)

    tic = time.perf_counter()
    opt.step(closure)
    wall = time.perf_counter() - tic
    iters = int(opt.state[opt._params[0]].get("n_iter", 0))
    with torch.no_grad():
        final = float(objective(backward=False))
        J = M.detach().view(L, q, L, q).permute(0, 2, 1, 3).contiguous().cpu()
    converged = iters < max_iterations and evals < opt.defaults["max_eval"]
    return PLMResult(h.detach().cpu().clone(), J, final, float(lambda_h), lam_J, float(lambda_group), iters, evals,
                     converged, wall)
