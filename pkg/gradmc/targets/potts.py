"""Potts models over one-hot categorical x (GWG paper Eq. 13, Table 1, Appendix H): dense and lattice.

States are one-hot floats x (C, D, K). Convention: every pair of sites counted ONCE,
    log p(x) = sum_i h_i^T x_i + sum_{i<j} x_i^T J_ij x_j - log Z,
with J_ij (K, K), J_ji = J_ij^T and zero diagonal blocks J_ii = 0. (The paper's Eq. 13 sums over all
ordered pairs i, j; that is this formula with every J_ij doubled.) With the symmetric D*K x D*K matrix
M[(i, a), (j, b)] = J_ij[a, b] the pair sum is x^T M x / 2, so grad_x log p = h + M x, shape (C, D, K).
"""

from __future__ import annotations

import torch
from torch import nn

from gradmc.core.incremental import Evaluation
from gradmc.core.validation import check_square_symmetric, validate_onehot
from gradmc.targets.lattice import MAX_DENSE_SIDE, check_side, lattice_adjacency, neighbour_sum, neighbour_table

__all__ = ["Potts", "LatticePotts", "PottsEvaluations"]


def _field(h, num_sites: int, num_states: int) -> torch.Tensor:
    """h given as None, (K,) or (D, K) -> (D, K) float tensor; ValueError otherwise."""
    if h is None:
        return torch.zeros(num_sites, num_states)
    if not isinstance(h, torch.Tensor) or h.shape not in ((num_states,), (num_sites, num_states)):
        got = tuple(h.shape) if isinstance(h, torch.Tensor) else type(h).__name__
        raise ValueError(f"field h must be None, ({num_states},) or ({num_sites}, {num_states}), got {got}")
    h = h.detach() if h.is_floating_point() else h.float()
    return h.expand(num_sites, num_states).clone()


def _changed_value(x: torch.Tensor, grad: torch.Tensor, f: torch.Tensor, site: torch.Tensor, value: torch.Tensor):
    """Shared by both Potts models: (grad (C, D * K), f at x with site set to value (C,), old value (C,))."""
    K = x.shape[2]
    rows = torch.arange(x.shape[0], device=x.device)
    old = x[rows, site].argmax(-1)
    g = grad.reshape(x.shape[0], -1)
    return g, f + g[rows, site * K + value] - g[rows, site * K + old], old


def _change_candidates(x: torch.Tensor, grad: torch.Tensor, f: torch.Tensor, site: torch.Tensor) -> torch.Tensor:
    """(C, K) f + grad_i[v] - grad_i[x_i] for every value v of site i = site[c] (exact for a Potts model)."""
    rows = torch.arange(x.shape[0], device=x.device)
    g_site = grad[rows, site]  # (C, K)
    current = (g_site * x[rows, site].to(g_site.dtype)).sum(-1, keepdim=True)
    return f[:, None] + g_site - current


class PottsEvaluations:
    """What the Potts models share (:class:`Potts`, :class:`LatticePotts` and the learnable
    :class:`gradmc.training.potts_models.PottsModel`): the candidates of one site from the gradient, the
    dense-coupling change of one site, and the input check.

    A class using it has ``num_sites`` (D), ``num_states`` (K) and ``eval_state(x, grad) -> Evaluation``
    whose ``grad`` is always set (grad f = h + M x; the candidates need it).
    """

    @torch.no_grad()
    def eval_change_candidates(self, x: torch.Tensor, ev: Evaluation, site: torch.Tensor) -> torch.Tensor:
        """(C, K) f at x with site ``site`` (C,) set to each value: f + grad_i - grad_i[x_i], O(C K)."""
        return _change_candidates(x, self._grad_of(x, ev), ev.log_prob, site)

    def _grad_of(self, x: torch.Tensor, ev: Evaluation) -> torch.Tensor:
        return ev.grad if ev.grad is not None else self.eval_state(x).grad

    def _dense_change(self, x: torch.Tensor, ev: Evaluation, site: torch.Tensor, value: torch.Tensor,
                      M: torch.Tensor) -> Evaluation:
        """The evaluation at x with site ``site`` set to ``value`` ((C,) int64 each) for the coupling matrix
        M (D K, D K) symmetric with zero diagonal blocks: f' = f + grad_i[v] - grad_i[x_i] and
        grad' = grad + M[(i, v)] - M[(i, x_i)] (rows are columns), O(C D K)."""
        K = self.num_states
        g, f, old = _changed_value(x, self._grad_of(x, ev), ev.log_prob, site, value)
        g = g + M[site * K + value] - M[site * K + old]
        return Evaluation(f, g.reshape(x.shape))

    def validate(self, x: torch.Tensor) -> None:
        """Full input check (shape and one-hot values); raises ValueError."""
        validate_onehot(x, self.num_sites, self.num_states, check_values=True)


class Potts(PottsEvaluations, nn.Module):
    """Potts model with dense fields h (D, K) and couplings J (D, D, K, K).

    Args:
        h: (D, K) fields.
        J: (D, D, K, K) couplings with J[j, i] = J[i, j].T and J[i, i] = 0 (checked, atol 1e-6).

    ``model(x)`` with x (C, D, K) one-hot returns log p(x) + log Z, shape (C,), computed in J's dtype.
    Storage: the (D*K, D*K) matrix M; cost O(C (D K)^2) per call.

    Raises:
        ValueError: on wrong shapes or a J that is not symmetric with zero diagonal blocks.
    """

    def __init__(self, h: torch.Tensor, J: torch.Tensor):
        super().__init__()
        if not isinstance(J, torch.Tensor) or J.dim() != 4 or J.shape[0] != J.shape[1] or J.shape[2] != J.shape[3]:
            got = tuple(J.shape) if isinstance(J, torch.Tensor) else type(J).__name__
            raise ValueError(f"J must have shape (D, D, K, K), got {got}")
        d, _, k, _ = J.shape
        if k < 2:
            raise ValueError(f"need K >= 2 states, got J of shape {tuple(J.shape)}")
        if not isinstance(h, torch.Tensor) or tuple(h.shape) != (d, k):
            got = tuple(h.shape) if isinstance(h, torch.Tensor) else type(h).__name__
            raise ValueError(f"h must have shape ({d}, {k}) to match J, got {got}")
        self.num_sites, self.num_states = d, k
        M = J.detach().permute(0, 2, 1, 3).reshape(d * k, d * k).clone()
        check_square_symmetric(M, "J (as a DK x DK matrix, J[j, i] = J[i, j]^T)", zero_diagonal=False)
        if bool((J.diagonal(dim1=0, dim2=1) != 0).any()):
            raise ValueError("J must have zero diagonal blocks J[i, i] = 0")
        self.register_buffer("M", M)
        self.register_buffer("h", h.detach().to(M.dtype).to(M.device).clone())

    def extra_repr(self) -> str:
        return f"num_sites={self.num_sites}, num_states={self.num_states}"

    @property
    def J(self) -> torch.Tensor:
        """Couplings (D, D, K, K), a view of the stored matrix."""
        d, k = self.num_sites, self.num_states
        return self.M.view(d, k, d, k).permute(0, 2, 1, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Unnormalised log p(x): (C, D, K) one-hot -> (C,). Differentiable in x."""
        validate_onehot(x, self.num_sites, self.num_states)
        xf = x.to(self.M.dtype).reshape(x.shape[0], -1)  # (C, D*K)
        return xf @ self.h.reshape(-1) + 0.5 * ((xf @ self.M) * xf).sum(-1)

    log_prob = forward
    closed_forms_for = forward  # the density the closed forms below are for (gradmc.core.gradients.own_method)

    @torch.no_grad()
    def log_prob_and_grad(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """f(x) (C,) and grad_x f(x) = h + M x (C, D, K), analytically, detached."""
        ev = self.eval_state(x)
        return ev.log_prob, ev.grad

    # The incremental evaluations of gradmc.core.incremental (no aux: the gradient is enough). f is
    # affine in each site's one-hot vector (J_ii = 0), so f(x with site i set to v) - f(x) =
    # grad_i[v] - grad_i[x_i] exactly, and the gradient changes by one row difference of M.

    @torch.no_grad()
    def eval_state(self, x: torch.Tensor, grad: bool = True) -> Evaluation:
        """f(x) (C,) and grad f(x) (C, D, K) (always: the candidates need it), detached."""
        validate_onehot(x, self.num_sites, self.num_states)
        xf = x.to(self.M.dtype).reshape(x.shape[0], -1)
        mx = xf @ self.M
        f = xf @ self.h.reshape(-1) + 0.5 * (mx * xf).sum(-1)
        return Evaluation(f, (mx + self.h.reshape(-1)).reshape(x.shape))

    @torch.no_grad()
    def eval_change(self, x: torch.Tensor, ev: Evaluation, site: torch.Tensor, value: torch.Tensor,
                    grad: bool = True, known_log_prob: torch.Tensor | None = None) -> Evaluation:
        """The evaluation at x with site ``site`` set to ``value`` ((C,) int64 each): O(C D K), no product
        (``known_log_prob`` is accepted for the protocol; f' is one gather here)."""
        return self._dense_change(x, ev, site, value, self.M)



class LatticePotts(PottsEvaluations, nn.Module):
    """Potts model on a side x side 2-D lattice: log p(x) = theta sum_{edges} [x_i == x_j] + sum_i h_i^T x_i.

    Each lattice edge counted once; on one-hot x, [x_i == x_j] = x_i^T x_j, so J_ij = theta * I_K on
    edges. Applied as a roll-based operator (no D x D x K x K tensor): the edge sum is
    sum_i x_i^T (sum_{j ~ i} x_j) / 2 and grad_x log p = theta * (sum of neighbours' x) + h.
    With K = 2 and category 1 = bit 1 this is LatticeIsing with theta_ising = theta / 4 plus a constant.

    Args:
        side: lattice side; D = side**2 sites, site (r, c) is index r * side + c.
        num_states: K >= 2.
        theta: coupling strength (> 0 favours equal neighbours).
        h: optional field, (K,) shared by all sites or (D, K); default zero.
        periodic: cyclic boundary (default) or free boundary.
    """

    def __init__(self, side: int, num_states: int, theta: float, h: torch.Tensor | None = None,
                 periodic: bool = True):
        super().__init__()
        if isinstance(num_states, bool) or not isinstance(num_states, int) or num_states < 2:
            raise ValueError(f"num_states must be an integer >= 2, got {num_states!r}")
        self.side = check_side(side, periodic)
        self.periodic = bool(periodic)
        self.num_sites = self.side * self.side
        self.num_states = num_states
        self.theta = float(theta)
        self.register_buffer("h", _field(h, self.num_sites, num_states))
        if self.periodic:  # (D, 4) neighbour indices, for the incremental evaluations
            self.register_buffer("_neighbour_index", neighbour_table(self.side), persistent=False)

    def extra_repr(self) -> str:
        return f"side={self.side}, num_states={self.num_states}, theta={self.theta}, periodic={self.periodic}"

    def _neighbours(self, x: torch.Tensor) -> torch.Tensor:
        """Sum of the neighbours' one-hot vectors, (C, D, K)."""
        validate_onehot(x, self.num_sites, self.num_states)
        grid = x.reshape(-1, self.side, self.side, self.num_states)
        return neighbour_sum(grid, self.periodic).reshape(x.shape)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Unnormalised log p(x): (C, D, K) one-hot -> (C,), in x's dtype. Differentiable in x."""
        nb = self._neighbours(x)
        return (0.5 * self.theta) * (x * nb).sum((1, 2)) + (x * self.h.to(x.dtype)).sum((1, 2))

    log_prob = forward
    closed_forms_for = forward  # the density the closed forms below are for (gradmc.core.gradients.own_method)

    @torch.no_grad()
    def log_prob_and_grad(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """f(x) (C,) and grad_x f(x) = theta * neighbour sum + h (C, D, K), analytically, detached."""
        ev = self.eval_state(x)
        return ev.log_prob, ev.grad

    # The incremental evaluations of gradmc.core.incremental, as for the dense Potts model: a change
    # of site i from u to v moves the gradient by theta (e_v - e_u) at i's 4 neighbours (periodic
    # lattices; free boundaries evaluate the changed state in full).

    @torch.no_grad()
    def eval_state(self, x: torch.Tensor, grad: bool = True) -> Evaluation:
        """f(x) (C,) and grad f(x) = theta * neighbour sum + h (C, D, K) (always), detached."""
        nb = self._neighbours(x)
        h = self.h.to(x.dtype)
        f = (0.5 * self.theta) * (x * nb).sum((1, 2)) + (x * h).sum((1, 2))
        return Evaluation(f, self.theta * nb + h)

    @torch.no_grad()
    def eval_change(self, x: torch.Tensor, ev: Evaluation, site: torch.Tensor, value: torch.Tensor,
                    grad: bool = True, known_log_prob: torch.Tensor | None = None) -> Evaluation:
        """The evaluation at x with site ``site`` set to ``value`` ((C,) int64 each): O(C K) beyond one copy."""
        if not self.periodic:
            rows = torch.arange(x.shape[0], device=x.device)
            changed = x.clone()
            changed[rows, site] = 0.0
            changed[rows, site, value] = 1.0
            return self.eval_state(changed)
        C, K = x.shape[0], self.num_states
        g, f, old = _changed_value(x, self._grad_of(x, ev), ev.log_prob, site, value)
        neighbours = self._neighbour_index[site] * K  # (C, 4)
        index = torch.cat([neighbours + value[:, None], neighbours + old[:, None]], 1)  # (C, 8)
        step = torch.full((C, 4), self.theta, dtype=g.dtype, device=g.device)
        g = g.clone().scatter_add_(1, index, torch.cat([step, -step], 1))
        return Evaluation(f, g.reshape(x.shape))


    def couplings_dense(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(h (D, K), J (D, D, K, K)) of the equivalent dense :class:`Potts`, for tests and small lattices.

        Raises:
            ValueError: if side > 10.
        """
        if self.side > MAX_DENSE_SIDE:
            raise ValueError(f"dense Potts couplings are only built for side <= {MAX_DENSE_SIDE}, got {self.side}")
        A = lattice_adjacency(self.side, self.periodic, self.h.dtype, self.h.device)  # (D, D)
        eye = torch.eye(self.num_states, dtype=self.h.dtype, device=self.h.device)
        return self.h.clone(), self.theta * A[:, :, None, None] * eye
