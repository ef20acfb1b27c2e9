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
give the same values. When the result must be differentiable in W (the PCD loss) the row sums are of U instead,
x^T U x = x^T M x / 2 (no M to build and differentiate: measured 2x faster for a 64 + 64 batch loss and
backward at L = 56, q = 21); otherwise of the cached M (below).

Samplers: the model offers the incremental evaluations of :mod:`gradmc.core.incremental` (shared with
:class:`gradmc.targets.Potts` through :class:`gradmc.targets.potts.PottsEvaluations`): ``eval_state`` (f and
grad f = h + M x by the row sums above), ``eval_change`` (one site changed: O(C L q), two rows of M) and
``eval_change_candidates`` (the q values of one site: O(C q)), so a Gibbs-1 step costs O(C L q) instead of a
forward pass on C q candidate states, O(C q L Lq).

Cached M: building M from W costs O((Lq)^2) per call (1.4M entries at L = 56, q = 21), more than a sampler
step. When no gradient to W can be taken (``torch.is_grad_enabled()`` false, as in PCD's sampling, or W not
requiring grad) :attr:`PottsModel.M` returns a cached matrix, rebuilt whenever W or the mask buffer changed
(optimiser step, ``load_state_dict``, ``.to(...)``: their version counter, storage or dtype differ) or the
returned matrix was edited in place. With gradients enabled it is built afresh, differentiable in W (the PCD
loss). As everywhere in torch, writes through ``W.data`` bypass the version counter and are not seen.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from gradmc.core.incremental import Evaluation
from gradmc.core.validation import validate_onehot
from gradmc.targets.potts import Potts, PottsEvaluations

__all__ = ["PottsModel", "profile_fields", "systematic_resample"]

#: Largest number of entries of the (chains, Lq) row sums per chunk in :meth:`PottsModel.forward` (memory cap).
ROW_SUM_CHUNK = 2**24


class PottsModel(PottsEvaluations, nn.Module):
    """Potts model with learnable fields h (L, q) and couplings J (L, L, q, q), log p~ as above.

    Args:
        num_sites: L >= 2.
        num_states: q >= 2.
        h: optional initial fields (L, q) (default zeros); J starts at 0 unless ``init_std`` > 0.
        init_std: the used blocks of W start i.i.d. N(0, init_std^2).
        generator: torch.Generator for the initial W (needed only when init_std > 0).
        dtype: parameter dtype (default float32).

    ``model(x)`` with x (C, L, q) one-hot returns log p~(x), shape (C,), in the parameters' dtype,
    differentiable in the parameters (and in x when x requires grad). Memory O((Lq)^2) (W, the mask and,
    outside autograd, the cached M). Incremental evaluations for the samplers: :meth:`eval_state`,
    :meth:`eval_change`, :meth:`eval_change_candidates` (module docstring).

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
        """(Lq, Lq) symmetric coupling matrix with zero diagonal blocks.

        With ``torch.is_grad_enabled()`` and ``W.requires_grad``: built from W, differentiable in ``W``.
        Otherwise the cached matrix (module docstring), rebuilt only when W or the mask changed.
        """
        W, upper = self.W, self.upper
        if torch.is_grad_enabled() and W.requires_grad:
            return self._build_M()
        cached = self.__dict__.get("_cached_M")
        if cached is not None and self._cache_valid(cached):
            return cached
        with torch.no_grad():
            M = self._build_M()
        if not torch.is_inference_mode_enabled():  # inference tensors have no version counter
            # aliases hold the storages, so no new tensor can take their addresses while the cache lives
            self._cached_M = M
            self._cached_M_source = (W.detach(), W._version, upper.detach(), upper._version, M._version)
        return M

    def _build_M(self) -> torch.Tensor:
        upper = self.W * self.upper
        return upper + upper.T

    def _cache_valid(self, M: torch.Tensor) -> bool:
        """Whether the cached M is of the current W and mask, and unedited."""
        w_alias, w_version, u_alias, u_version, m_version = self._cached_M_source
        return all(_same(t, alias) for t, alias in ((self.W, w_alias), (self.upper, u_alias))) \
            and self.W._version == w_version and self.upper._version == u_version and M._version == m_version

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
        """Unnormalised log p(x): (C, L, q) one-hot -> (C,) (see the module docstring for the two paths).

        Raises:
            ValueError: x not of shape (C, L, q).
        """
        validate_onehot(x, self.num_sites, self.num_states)
        h = self.h.reshape(-1)
        if x.requires_grad:
            M = self.M
            xf = x.to(M.dtype).reshape(x.shape[0], -1)  # (C, Lq)
            return xf @ h + 0.5 * ((xf @ M) * xf).sum(-1)
        if torch.is_grad_enabled() and self.W.requires_grad:
            # x^T M x / 2 = x^T U x with U = W * mask: no U + U^T to build and differentiate (the PCD loss)
            A, scale = self.W * self.upper, 1.0
        else:
            A, scale = self.M, 0.5  # the cached M
        idx = self._rows(x)  # (C, L)
        chunk = max(1, ROW_SUM_CHUNK // A.shape[0])
        pair = torch.cat([F.embedding_bag(r, A, mode="sum").gather(1, r).sum(1) for r in idx.split(chunk)])
        return h[idx].sum(1) + scale * pair

    log_prob = forward
    closed_forms_for = forward  # the density the closed forms below are for (gradmc.core.gradients.own_method)

    @torch.no_grad()
    def log_prob_and_grad(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """f(x) (C,) and grad_x f(x) = h + M x (C, L, q) in closed form, detached (used by GWG)."""
        ev = self.eval_state(x)
        return ev.log_prob, ev.grad

    # The incremental evaluations of gradmc.core.incremental, as for gradmc.targets.Potts (no aux: the
    # gradient is enough); eval_change_candidates comes from PottsEvaluations.

    @torch.no_grad()
    def eval_state(self, x: torch.Tensor, grad: bool = True) -> Evaluation:
        """f(x) (C,) and grad f(x) = h + M x (C, L, q) (always: the candidates need it), detached.

        M x sums the L rows M[(j, x_j), :] of each chain (``embedding_bag``), O(C L Lq).

        Raises:
            ValueError: x not of shape (C, L, q).
        """
        validate_onehot(x, self.num_sites, self.num_states)
        M, h = self.M, self.h.reshape(-1)
        idx = self._rows(x)  # (C, L)
        mx = F.embedding_bag(idx, M, mode="sum")  # (C, Lq): (M x)[c] since M is symmetric
        f = h[idx].sum(1) + 0.5 * mx.gather(1, idx).sum(1)
        return Evaluation(f, (mx + h).reshape(x.shape[0], self.num_sites, self.num_states))

    @torch.no_grad()
    def eval_change(self, x: torch.Tensor, ev: Evaluation, site: torch.Tensor, value: torch.Tensor,
                    grad: bool = True, known_log_prob: torch.Tensor | None = None) -> Evaluation:
        """The evaluation at x with site ``site`` set to ``value`` ((C,) int64 each): O(C L q), two rows of M
        (``known_log_prob`` is accepted for the protocol; f' is one gather here)."""
        return self._dense_change(x, ev, site, value, self.M)

    def to_target(self) -> Potts:
        """A fixed :class:`gradmc.targets.Potts` with the current (detached) parameters."""
        return Potts(self.h.detach().clone(), self.J.detach().clone())


def _same(t: torch.Tensor, alias: torch.Tensor) -> bool:
    """Whether t still is the tensor ``alias`` was taken of: same storage address, dtype, device and shape."""
    return (t.data_ptr() == alias.data_ptr() and t.dtype == alias.dtype and t.device == alias.device
            and t.shape == alias.shape)


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
