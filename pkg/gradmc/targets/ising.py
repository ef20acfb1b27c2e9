"""Ising models over binary x (GWG paper Eq. 10, Appendix F Eq. 30-31): lattice, dense and Erdos-Renyi.

Convention (shared by every class here, and the one of the GWG authors' code):
    spins s = 2x - 1 in {-1, +1} from bits x in {0, 1};
    log p(x) = s^T J s + b^T s - log Z,
with J symmetric, zero diagonal, and the double sum over ALL ordered pairs (i, j): every edge {i, j}
is counted twice, so an edge contributes 2 J_ij s_i s_j. For the lattice, J = theta * A with A the 0/1
adjacency matrix, i.e. log p = 2 theta sum_{edges} s_i s_j + b^T s: the textbook coupling is
beta * J_phys = 2 theta, and the infinite 2-D lattice's critical point beta_c = log(1 + sqrt 2) / 2
sits at theta_c = log(1 + sqrt 2) / 4 ~= 0.2203, inside the paper's Fig. 4 / Fig. 6 theta range
(-0.1 ... 0.5). theta > 0 is ferromagnetic, theta < 0 antiferromagnetic.

Gradient in the bits (what GWG differentiates): grad_x log p = 2 (2 J s + b) = 4 J s + 2 b. Because J
has a zero diagonal, f is affine in each bit and the first-order flip estimate of Eq. 3 is exact here.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from gradmc.core.incremental import Evaluation, flip_bits, flip_deltas
from gradmc.core.validation import check_binary, check_square_symmetric
from gradmc.targets.lattice import check_side, lattice_adjacency, neighbour_sum, neighbour_table

__all__ = ["THETA_CRITICAL", "LatticeIsing", "DenseFlips", "DenseIsing", "ErdosRenyiIsing"]

#: Critical coupling of the infinite 2-D square lattice in this module's theta convention.
THETA_CRITICAL = math.log(1.0 + math.sqrt(2.0)) / 4.0


def _bias_vector(bias, dim: int) -> torch.Tensor:
    """A float or a tensor with dim entries -> (dim,) float tensor; ValueError otherwise."""
    if isinstance(bias, torch.Tensor):
        if bias.numel() != dim:
            raise ValueError(f"bias must be a float or have {dim} entries, got shape {tuple(bias.shape)}")
        out = bias.detach().reshape(dim)
        return out if out.is_floating_point() else out.float()
    return torch.full((dim,), float(bias))


class LatticeIsing(nn.Module):
    """Ising model on a side x side 2-D lattice (4 neighbours), applied as a roll-based operator.

    Args:
        side: lattice side; D = side**2 bits, site (r, c) is coordinate r * side + c.
        theta: coupling strength; J = theta * A (see the module docstring for the edge counting).
        bias: b, a float (uniform field) or a tensor with D entries, acting on the spins s = 2x - 1;
            fixed after construction (do not edit the buffer in place).
        periodic: cyclic (torus) boundary, the paper's setting; False gives free boundaries.

    ``model(x)`` with x (C, D) floats in {0, 1} returns log p(x) + log Z, shape (C,). Cost O(C * D):
    no D x D matrix is ever built (``couplings_dense`` exists for tests and side <= 10 only).
    """

    def __init__(self, side: int, theta: float, bias=0.0, periodic: bool = True):
        super().__init__()
        self.side = check_side(side, periodic)
        self.periodic = bool(periodic)
        self.num_dims = self.side * self.side
        self.theta = float(theta)
        self.register_buffer("bias", _bias_vector(bias, self.num_dims))
        self._has_bias = bool(self.bias.any())  # b is fixed after construction; b = 0 skips two passes
        # 0-d constant (moves with .to()): torch.add(-1, x, alpha=2) computes 2x - 1 in one kernel
        self.register_buffer("_minus_one", torch.tensor(-1.0), persistent=False)
        if self.periodic:  # (D, 4) neighbour indices, for the incremental evaluations
            self.register_buffer("_neighbours", neighbour_table(self.side), persistent=False)

    def extra_repr(self) -> str:
        return f"side={self.side}, theta={self.theta}, periodic={self.periodic}"

    def _spins_and_field(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """s = 2x - 1 (C, D) and the neighbour sum A s (C, D)."""
        check_binary(x, self.num_dims)
        s = torch.add(self._minus_one, x, alpha=2.0)  # 2x - 1
        grid = s.reshape(-1, self.side, self.side)
        return s, neighbour_sum(grid, self.periodic).reshape(s.shape)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Unnormalised log p(x) = theta s^T A s + b^T s: (C, D) -> (C,). Differentiable in x."""
        s, field = self._spins_and_field(x)
        f = self.theta * torch.linalg.vecdot(s, field)
        return f + s @ self.bias.to(s.dtype) if self._has_bias else f

    log_prob = forward
    closed_forms_for = forward  # the density the closed forms below are for (gradmc.core.gradients.own_method)

    @torch.no_grad()
    def log_prob_and_grad(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """f(x) (C,) and grad_x f(x) = 4 theta A s + 2 b (C, D), analytically (no autograd), detached.

        About 7 elementwise passes over (C, D); the 4 rolls of the neighbour sum dominate.
        """
        ev = self.eval_state(x)
        return ev.log_prob, ev.grad

    def _value_and_grad(self, s: torch.Tensor, field: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """f = theta s^T (A s) + b^T s and grad = 4 theta A s + 2 b from spins s and field A s, (C, D) each."""
        f = torch.linalg.vecdot(s, field).mul_(self.theta)
        if self._has_bias:
            f += s @ self.bias.to(s.dtype)
        return f, self._grad(field)

    def _grad(self, field: torch.Tensor) -> torch.Tensor:
        """grad_x f = 4 theta A s + 2 b from the field A s (C, D)."""
        if self._has_bias:
            return torch.add(self.bias.to(field.dtype), field, alpha=4.0 * self.theta).add_(self.bias.to(field.dtype))
        return field.mul(4.0 * self.theta)

    # The incremental evaluations of gradmc.core.incremental; aux = the neighbour field A s (C, D).
    # Its entries are small integers, exact in floating point, so its incremental updates never drift.

    @torch.no_grad()
    def eval_state(self, x: torch.Tensor, grad: bool = True) -> Evaluation:
        """f(x) (C,), grad f(x) (C, D) if ``grad`` and the neighbour field A s (C, D) as aux, detached."""
        s, field = self._spins_and_field(x)
        f, g = self._value_and_grad(s, field)
        return Evaluation(f, g if grad else None, field)

    @torch.no_grad()
    def eval_flips(self, x: torch.Tensor, ev: Evaluation, sites: torch.Tensor, mask: torch.Tensor,
                   grad: bool = True, known_log_prob: torch.Tensor | None = None) -> Evaluation:
        """The evaluation at x with bits ``sites`` (C, X) flipped where ``mask`` (C, X), from ev.aux: the
        field changes at the 4 X neighbours of the flipped sites only, and with the spin changes
        ds = s' - s on the sites, f(x') - f(x) = sum_k ds_k [theta (A s + A s')_k + b_k] exactly (periodic
        lattices; free boundaries evaluate x' in full). O(C X) plus one (C, D) pass for the gradient.
        ``known_log_prob`` is accepted for the protocol and not needed (f' costs O(C X) here)."""
        if not self.periodic or ev.aux is None:
            return self.eval_state(flip_bits(x, sites, mask), grad)
        C, X = sites.shape
        ds = 2.0 * flip_deltas(x, sites, mask)  # (C, X) spin changes
        field = ev.aux.clone()
        field.scatter_add_(1, self._neighbours[sites].reshape(C, 4 * X), ds.repeat_interleave(4, 1))
        total = ev.aux.gather(1, sites) + field.gather(1, sites)  # (A s + A s')_k
        change = ds * (self.theta * total + self.bias[sites].to(ds.dtype))
        return Evaluation(ev.log_prob + change.sum(-1), self._grad(field) if grad else None, field)

    @torch.no_grad()
    def eval_flip_candidates(self, x: torch.Tensor, ev: Evaluation, sites: torch.Tensor,
                             masks: torch.Tensor) -> torch.Tensor:
        """(C, B) f at x with bits ``sites`` (C, X) flipped where ``masks`` (C, B, X), from ev.aux:
        f + ds^T (2 theta A s + b)_sites + theta ds^T A_sites ds, O(C B X^2) (periodic lattices)."""
        if not self.periodic or ev.aux is None:
            C, B, X = masks.shape
            flipped = flip_bits(x.repeat_interleave(B, 0), sites.repeat_interleave(B, 0), masks.reshape(C * B, X))
            return self(flipped).reshape(C, B)
        ds = 2.0 * flip_deltas(x, sites, masks)  # (C, B, X)
        linear = 2.0 * self.theta * ev.aux.gather(1, sites) + self.bias[sites].to(ds.dtype)  # (C, X)
        adjacency = (self._neighbours[sites][:, :, None, :] == sites[:, None, :, None]).sum(-1).to(ds.dtype)
        quadratic = torch.einsum("cbk,ckl,cbl->cb", ds, adjacency, ds)
        return ev.log_prob[:, None] + (ds * linear[:, None, :]).sum(-1) + self.theta * quadratic

    def validate(self, x: torch.Tensor) -> None:
        """Full input check (shape and values in {0, 1}); raises ValueError. Not done on hot-loop calls."""
        check_binary(x, self.num_dims, check_values=True)

    def couplings_dense(self) -> torch.Tensor:
        """J = theta * A as a dense (D, D) matrix, for tests and small lattices.

        Raises:
            ValueError: if side > 10 (use the operator instead).
        """
        return self.theta * lattice_adjacency(self.side, self.periodic, self.bias.dtype, self.bias.device)


class DenseFlips:
    """The incremental evaluations of :mod:`gradmc.core.incremental` for log p~(x) = s^T J s + b^T s with a dense J.

    For a module with ``J`` (D, D) symmetric with zero diagonal (a tensor attribute or a property), ``bias`` (D,)
    and ``num_dims`` = D; aux = the field J s (C, D). Flipping the sites S with spin changes ds (zero where masked
    out) gives J s' = J s + J[:, S] ds, O(C |S| D) instead of the O(C D^2) of a full evaluation, and

        f(x') - f(x) = 2 ds^T (J s)_S + ds^T J_SS ds + b_S^T ds.

    The field is updated in floating point, so it drifts by rounding; the kernels' periodic refresh
    (:data:`gradmc.core.incremental.REFRESH_EVERY`) bounds that.
    """

    def _flip_couplings(self) -> torch.Tensor:
        """J (D, D), detached (a class whose J is computed may keep it while its parameters do not change)."""
        return self.J.detach()

    @torch.no_grad()
    def eval_state(self, x: torch.Tensor, grad: bool = True) -> Evaluation:
        """f(x) (C,), grad f(x) = 4 J s + 2 b (C, D) if ``grad`` and the field J s (C, D) as aux, detached."""
        check_binary(x, self.num_dims)
        J = self._flip_couplings()
        s = 2.0 * x.to(J.dtype) - 1.0
        field = s @ J
        bias = self.bias.detach()
        f = torch.linalg.vecdot(field, s) + s @ bias
        return Evaluation(f, torch.add(2.0 * bias, field, alpha=4.0) if grad else None, field)

    @torch.no_grad()
    def eval_flips(self, x: torch.Tensor, ev: Evaluation, sites: torch.Tensor, mask: torch.Tensor,
                   grad: bool = True, known_log_prob: torch.Tensor | None = None) -> Evaluation:
        """The evaluation at x with bits ``sites`` (C, X) flipped where ``mask`` (C, X), from ev.aux (class
        docstring): O(C X D). ``known_log_prob`` (C,), when given, is the result's f."""
        if ev.aux is None:
            return self.eval_state(flip_bits(x, sites, mask), grad)
        J = self._flip_couplings()
        ds = 2.0 * flip_deltas(x, sites, mask).to(J.dtype)  # (C, X) spin changes, 0 where masked out
        rows = J[sites]  # (C, X, D): J is symmetric, so row k is column k
        if sites.shape[1] == 1:
            field = torch.addcmul(ev.aux, ds, rows[:, 0])
        else:  # a few sites: elementwise (a batched (1, X) @ (X, D) product is slower on CPU)
            field = ev.aux + (ds[:, :, None] * rows).sum(1)
        if known_log_prob is None:
            f = ev.log_prob + self._flip_change(ev.aux, sites, ds[:, None, :], J)[:, 0]
        else:
            f = known_log_prob
        bias = self.bias.detach()
        return Evaluation(f, torch.add(2.0 * bias, field, alpha=4.0) if grad else None, field)

    @torch.no_grad()
    def eval_flip_candidates(self, x: torch.Tensor, ev: Evaluation, sites: torch.Tensor,
                             masks: torch.Tensor) -> torch.Tensor:
        """(C, B) f at x with bits ``sites`` (C, X) flipped where ``masks`` (C, B, X), from ev.aux: O(C B X^2)."""
        if ev.aux is None:
            C, B, X = masks.shape
            flipped = flip_bits(x.repeat_interleave(B, 0), sites.repeat_interleave(B, 0), masks.reshape(C * B, X))
            return self(flipped).reshape(C, B)
        J = self._flip_couplings()
        ds = 2.0 * flip_deltas(x, sites, masks).to(J.dtype)  # (C, B, X)
        return ev.log_prob[:, None] + self._flip_change(ev.aux, sites, ds, J)

    def _flip_change(self, field: torch.Tensor, sites: torch.Tensor, ds: torch.Tensor, J: torch.Tensor) -> torch.Tensor:
        """(C, B) f(x') - f(x) for spin changes ds (C, B, X) at ``sites`` (C, X), from the field J s (C, D)."""
        linear = 2.0 * field.gather(1, sites) + self.bias.detach()[sites]  # (C, X)
        block = J[sites[:, :, None], sites[:, None, :]]  # (C, X, X) J_SS
        quadratic = torch.einsum("cbk,ckl,cbl->cb", ds, block, ds)
        return (ds * linear[:, None, :]).sum(-1) + quadratic


class DenseIsing(DenseFlips, nn.Module):
    """Ising model with a given dense symmetric coupling matrix: log p(x) = s^T J s + b^T s, s = 2x - 1.

    Args:
        J: (D, D) symmetric with zero diagonal (every edge counted twice, see the module docstring).
        bias: b, a float or a tensor with D entries.

    Raises:
        ValueError: if J is not square, symmetric (atol 1e-6) and zero on the diagonal.
    """

    def __init__(self, J: torch.Tensor, bias=0.0):
        super().__init__()
        check_square_symmetric(J, "J")
        self.num_dims = J.shape[0]
        self.register_buffer("J", J.detach().clone())
        self.register_buffer("bias", _bias_vector(bias, self.num_dims).to(J.dtype).to(J.device))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Unnormalised log p(x): (C, D) -> (C,), computed in J's dtype. Differentiable in x."""
        check_binary(x, self.num_dims)
        s = 2.0 * x.to(self.J.dtype) - 1.0
        return ((s @ self.J) * s).sum(-1) + s @ self.bias

    log_prob = forward
    closed_forms_for = forward  # the density the closed forms below are for (gradmc.core.gradients.own_method)

    @torch.no_grad()
    def log_prob_and_grad(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """f(x) (C,) and grad_x f(x) = 4 J s + 2 b (C, D), analytically, detached."""
        check_binary(x, self.num_dims)
        s = 2.0 * x.to(self.J.dtype) - 1.0
        js = s @ self.J
        return (js * s).sum(-1) + s @ self.bias, 4.0 * js + 2.0 * self.bias

    def validate(self, x: torch.Tensor) -> None:
        """Full input check (shape and values in {0, 1}); raises ValueError."""
        check_binary(x, self.num_dims, check_values=True)

    def couplings_dense(self) -> torch.Tensor:
        """J (D, D) (the stored matrix itself)."""
        return self.J


class ErdosRenyiIsing(DenseIsing):
    """Ising model on a random Erdos-Renyi graph (GWG Appendix F.2), stored as a dense D x D matrix.

    Each of the D(D-1)/2 possible edges is present independently with probability
    p = avg_degree / (num_nodes - 1), so the expected degree is avg_degree; present edges get a weight
    J_ij = J_ji ~ N(0, weight_std^2) i.i.d., absent ones 0; the diagonal is 0. The bias is
    b_i ~ N(0, bias_std^2) i.i.d. (bias_std = 0, the default, gives b = 0). Unlike the authors' data
    script, the coupling scale is never used as the bias. Dense storage: at the paper's 200 nodes J has
    40,000 entries and s @ J is cheaper than a sparse product.

    Args:
        num_nodes: D >= 2.
        avg_degree: expected number of neighbours, in (0, num_nodes - 1].
        weight_std: standard deviation of the edge weights (> 0); the paper's digits are lost, so the
            config must state the value used.
        bias_std: standard deviation of the field (>= 0).
        generator: torch.Generator (CPU) for the graph, weights and bias.

    Attributes:
        adjacency: (D, D) bool buffer of the edges.
    """

    def __init__(self, num_nodes: int, avg_degree: float, weight_std: float, bias_std: float = 0.0,
                 generator: torch.Generator | None = None):
        if num_nodes < 2:
            raise ValueError(f"num_nodes must be >= 2, got {num_nodes}")
        if not 0 < avg_degree <= num_nodes - 1:
            raise ValueError(f"avg_degree must be in (0, num_nodes - 1 = {num_nodes - 1}], got {avg_degree}")
        if not weight_std > 0 or not bias_std >= 0:
            raise ValueError(f"need weight_std > 0 and bias_std >= 0, got {weight_std}, {bias_std}")
        p = avg_degree / (num_nodes - 1)
        upper = torch.triu(torch.rand(num_nodes, num_nodes, generator=generator) < p, diagonal=1)
        weights = torch.randn(num_nodes, num_nodes, generator=generator) * weight_std
        J = torch.where(upper, weights, torch.zeros(()))
        J = J + J.t()
        bias = torch.randn(num_nodes, generator=generator) * bias_std if bias_std > 0 else 0.0
        super().__init__(J, bias)
        self.avg_degree = float(avg_degree)
        self.weight_std = float(weight_std)
        self.bias_std = float(bias_std)
        self.register_buffer("adjacency", upper | upper.t())

    def extra_repr(self) -> str:
        return f"num_nodes={self.num_dims}, avg_degree={self.avg_degree}, weight_std={self.weight_std}"

    def edge_index(self) -> torch.Tensor:
        """The edges once each, (2, E) int64 with row 0 < row 1."""
        return torch.triu(self.adjacency, diagonal=1).nonzero().t()
