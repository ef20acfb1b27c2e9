"""A learnable Potts model for PCD (GWG paper Sec. 5.4, Appendix H) and weighted data for its batches.

Convention of :class:`gradmc.targets.Potts` (read its docstring): one-hot x (C, L, q),

    log p~(x) = sum_i h_i^T x_i + sum_{i<j} x_i^T J_ij x_j,   J_ji = J_ij^T,  J_ii = 0,

i.e. every pair counted ONCE. The paper's Eq. 13 sums over all ordered pairs with a symmetric J^(13), so
J^(13)_ij = J_ij / 2 (:attr:`PottsModel.J_eq13`), and its block-l1 regulariser (Eq. 34) is
sum_{i,j} ||J^(13)_ij||_F = sum_{i<j} ||J_ij||_F: ``Penalty("block_l1", "J_eq13", 0.01)`` of
:mod:`gradmc.training.pcd` is the paper's term with its strength. (The GWG release's penalty, 0.01 times the
norms of its symmetrised J over all ordered pairs, is the same quantity.)

Parameterisation: a free (Lq, Lq) matrix ``W`` of which only the blocks (i, j) with i < j are used,
M = U + U^T with U = W * [i < j]; M[(i, a), (j, b)] = J_ij(a, b). Symmetry and zero diagonal blocks hold for
every value of W (no projection after an optimiser step); unused entries get zero gradient.

Cost: on one-hot states without gradient in x (PCD losses, Gibbs candidates) ``forward`` sums the L rows
M[(j, x_j), :] of each chain (``embedding_bag``, O(C L Lq)) and reads x^T M x off them, instead of the dense
O(C (Lq)^2) quadratic form (measured 3x faster for Gibbs-1 candidates at L = 48, q = 21; a gather of the
L^2 entries is slower still); with ``x.requires_grad`` it uses the dense form (differentiable in x). Both
give the same values.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from gradmc.core.validation import validate_onehot
from gradmc.targets.potts import Potts

__all__ = ["PottsModel", "profile_fields", "systematic_resample"]

#: Largest number of entries of the (chains, Lq) row sums per chunk in :meth:`PottsModel.forward` (memory cap).
ROW_SUM_CHUNK = 2**24


class PottsModel(nn.Module):
    """Potts model with learnable fields h (L, q) and couplings J (L, L, q, q), log p~ as above.

    Args:
        num_sites: L >= 2.
        num_states: q >= 2.
        h: optional initial fields (L, q) (default zeros); J starts at 0 unless ``init_std`` > 0.
        init_std: the used blocks of W start i.i.d. N(0, init_std^2).
        generator: torch.Generator for the initial W (needed only when init_std > 0).
        dtype: parameter dtype (default float32).

    ``model(x)`` with x (C, L, q) one-hot returns log p~(x), shape (C,), in the parameters' dtype,
    differentiable in the parameters (and in x when x requires grad). Memory O((Lq)^2).

    Raises:
        ValueError: L < 2, q < 2, init_std < 0, or h of the wrong shape.
    """

    def __init__(self, num_sites: int, num_states: int, *, h: torch.Tensor | None = None, init_std: float = 0.0,
                 generator: torch.Generator | None = None, dtype: torch.dtype = torch.float32):
        super().__init__()
        for name, v in (("num_sites", num_sites), ("num_states", num_states)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 2:
                raise ValueError(f"{name} must be an integer >= 2, got {v!r}")
        if not init_std >= 0:
            raise ValueError(f"init_std must be >= 0, got {init_std}")
        L, q = num_sites, num_states
        self.num_sites, self.num_states = L, q
        site = torch.arange(L).repeat_interleave(q)  # (Lq,) site of each row
        self.register_buffer("upper", (site[:, None] < site[None, :]).to(dtype))  # (Lq, Lq) blocks i < j
        w = torch.zeros(L * q, L * q, dtype=dtype)
        if init_std > 0:
            w = torch.randn(L * q, L * q, generator=generator, dtype=dtype) * init_std
        self.W = nn.Parameter(w * self.upper)
        if h is None:
            h = torch.zeros(L, q, dtype=dtype)
        if not isinstance(h, torch.Tensor) or tuple(h.shape) != (L, q):
            got = tuple(h.shape) if isinstance(h, torch.Tensor) else type(h).__name__
            raise ValueError(f"h must have shape ({L}, {q}), got {got}")
        self.h = nn.Parameter(h.detach().to(dtype).clone())
        self.register_buffer("offsets", torch.arange(L) * q)  # (L,) row of state 0 of each site

    def extra_repr(self) -> str:
        return f"num_sites={self.num_sites}, num_states={self.num_states}"

    @property
    def M(self) -> torch.Tensor:
        """(Lq, Lq) symmetric coupling matrix with zero diagonal blocks, differentiable in ``W``."""
        upper = self.W * self.upper
        return upper + upper.T

    @property
    def J(self) -> torch.Tensor:
        """Couplings (L, L, q, q) in the :class:`gradmc.targets.Potts` convention (a view of :attr:`M`)."""
        L, q = self.num_sites, self.num_states
        return self.M.view(L, q, L, q).permute(0, 2, 1, 3)

    @property
    def J_eq13(self) -> torch.Tensor:
        """The paper's Eq. 13 couplings J / 2 (L, L, q, q): block-l1 of this is sum_{i<j} ||J_ij|| (Eq. 34)."""
        return 0.5 * self.J

    def _rows(self, x: torch.Tensor) -> torch.Tensor:
        """(C, L) int64 row of M of each site's current state (x one-hot: x @ (0..q-1), faster than argmax)."""
        values = torch.arange(self.num_states, dtype=x.dtype, device=x.device)
        return (x @ values).long() + self.offsets

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Unnormalised log p(x): (C, L, q) one-hot -> (C,) (see the module docstring for the two paths)."""
        validate_onehot(x, self.num_sites, self.num_states)
        M, h = self.M, self.h.reshape(-1)
        if x.requires_grad:
            xf = x.to(M.dtype).reshape(x.shape[0], -1)  # (C, Lq)
            return xf @ h + 0.5 * ((xf @ M) * xf).sum(-1)
        idx = self._rows(x)  # (C, L)
        chunk = max(1, ROW_SUM_CHUNK // M.shape[0])
        pair = torch.cat([F.embedding_bag(r, M, mode="sum").gather(1, r).sum(1) for r in idx.split(chunk)])
        return h[idx].sum(1) + 0.5 * pair

    log_prob = forward

    @torch.no_grad()
    def log_prob_and_grad(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """f(x) (C,) and grad_x f(x) = h + M x (C, L, q) in closed form, detached (used by GWG).

        M x sums the L rows M[(j, x_j), :] of each chain (``embedding_bag``), O(C L Lq).
        """
        validate_onehot(x, self.num_sites, self.num_states)
        M, h = self.M, self.h.reshape(-1)
        idx = self._rows(x)  # (C, L)
        mx = F.embedding_bag(idx, M, mode="sum")  # (C, Lq): (M x)[c] since M is symmetric
        f = h[idx].sum(1) + 0.5 * mx.gather(1, idx).sum(1)
        return f, (mx + h).reshape(x.shape[0], self.num_sites, self.num_states)

    def to_target(self) -> Potts:
        """A fixed :class:`gradmc.targets.Potts` with the current (detached) parameters."""
        return Potts(self.h.detach().clone(), self.J.detach().clone())


def systematic_resample(weights, num: int | None = None, *, generator: torch.Generator) -> torch.Tensor:
    """Row indices (num,) drawn with probabilities w / sum(w) by systematic resampling.

    A PCD data batch drawn uniformly from the resampled rows estimates the weighted data term
    sum_n w_n grad f(x_n) / sum_n w_n (sequence reweighting, Appendix H). Row n appears floor or ceil of
    num w_n / sum(w) times (the lowest-variance unbiased scheme: one uniform offset u, points (u + k) / num).

    Args:
        weights: (N,) non-negative, finite, positive sum (e.g. ``gradmc.proteins.sequence_weights``).
        num: number of rows to draw (default N).
        generator: torch.Generator for the offset.

    Returns:
        (num,) int64 indices into 0..N-1, sorted.

    Raises:
        ValueError: bad weights or num < 1.
    """
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim != 1 or w.size == 0 or not np.isfinite(w).all() or (w < 0).any() or w.sum() <= 0:
        raise ValueError(f"weights must be a non-empty 1-D array, finite, >= 0, with a positive sum; got shape "
                         f"{w.shape}")
    num = w.size if num is None else int(num)
    if num < 1:
        raise ValueError(f"num must be >= 1, got {num}")
    u = float(torch.rand((), generator=generator, dtype=torch.float64))
    cdf = np.cumsum(w / w.sum())
    cdf[-1] = 1.0
    points = (u + np.arange(num)) / num
    return torch.from_numpy(np.searchsorted(cdf, points, side="right").astype(np.int64))


def profile_fields(states, weights, num_states: int, pseudocount: float = 1.0) -> torch.Tensor:
    """Fields (L, q) of the independent-site model of a weighted alignment: log((c_i(a) + pseudocount) /
    (sum(w) + q pseudocount)) centred over a, with c_i(a) the weighted count of state a at site i. A PCD
    starting point (J = 0 with these fields is the maximum-likelihood independent-site model, smoothed).

    Args:
        states: (N, L) integer states in 0..num_states-1; weights: (N,) non-negative; num_states: q.

    Returns:
        (L, q) float32.

    Raises:
        ValueError: shapes disagree, states out of range, or negative weights / pseudocount.
    """
    s = torch.as_tensor(np.asarray(states), dtype=torch.long)
    w = torch.as_tensor(np.asarray(weights, dtype=np.float64))
    if s.dim() != 2 or w.shape != (s.shape[0],) or (w < 0).any() or pseudocount < 0:
        raise ValueError(f"need states (N, L), weights (N,) >= 0 and pseudocount >= 0; got {tuple(s.shape)}, "
                         f"{tuple(w.shape)}, {pseudocount}")
    if s.numel() and (int(s.min()) < 0 or int(s.max()) >= num_states):
        raise ValueError(f"states must lie in 0..{num_states - 1}")
    L = s.shape[1]
    counts = torch.zeros(L, num_states, dtype=torch.float64).scatter_add_(1, s.T, w.expand(L, -1).contiguous())
    h = torch.log((counts + pseudocount) / (float(w.sum()) + num_states * pseudocount))
    return (h - h.mean(1, keepdim=True)).float()
