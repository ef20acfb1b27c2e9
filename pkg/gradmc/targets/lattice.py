"""2-D square lattices as operators (GWG paper Sec. 5.2, Appendix F): never a dense D x D matrix.

Site (r, c) of a side x side lattice is coordinate ``r * side + c`` of the flattened state (row-major).
Each site has up to 4 neighbours (up, down, left, right). A periodic (cyclic, torus) lattice wraps
around and needs side >= 3 to stay a simple graph (with side 2 the up and down neighbours would be the
same site, a double edge); a free-boundary lattice (periodic=False) needs side >= 2.
"""

from __future__ import annotations

import torch

__all__ = ["MAX_DENSE_SIDE", "check_side", "neighbour_sum", "neighbour_table", "lattice_adjacency", "lattice_edges"]

#: Largest side for which dense D x D (or D x D x K x K) couplings are built (tests, small models).
MAX_DENSE_SIDE = 10


def check_side(side: int, periodic: bool = True) -> int:
    """Return side as an int; raise ValueError unless it is an integer >= 3 (periodic) or >= 2 (free)."""
    low = 3 if periodic else 2
    if isinstance(side, bool) or not isinstance(side, int) or side < low:
        kind = "periodic" if periodic else "free-boundary"
        raise ValueError(f"{kind} lattice side must be an integer >= {low}, got {side!r}")
    return side


def _shift(grid: torch.Tensor, offset: int, dim: int) -> torch.Tensor:
    """grid shifted by offset (+1 or -1) along dim with zero fill: out[i] = grid[i - offset] (like torch.roll)."""
    zeros = torch.zeros_like(grid.narrow(dim, 0, 1))
    n = grid.shape[dim]
    if offset == 1:
        return torch.cat([zeros, grid.narrow(dim, 0, n - 1)], dim)
    return torch.cat([grid.narrow(dim, 1, n - 1), zeros], dim)


def neighbour_sum(grid: torch.Tensor, periodic: bool = True) -> torch.Tensor:
    """Sum of the neighbours of every site: (C, side, side, *rest) -> same shape.

    Equals (A v)_i = sum_{j ~ i} v_j for the lattice adjacency matrix A, applied site-wise with trailing
    dimensions (e.g. the K one-hot categories of a Potts state) carried along. O(C * D) work and memory.
    """
    shift = torch.roll if periodic else _shift
    out = shift(grid, 1, 1)  # fresh tensor: accumulate in place (autograd-safe: add_ keeps no inputs)
    out += shift(grid, -1, 1)
    out += shift(grid, 1, 2)
    out += shift(grid, -1, 2)
    return out


def neighbour_table(side: int, device=None) -> torch.Tensor:
    """The 4 neighbours of every site of a periodic lattice, (D, 4) int64 flat indices (down, up, right,
    left), D = side**2: row i lists the j with A_ij = 1.

    Raises:
        ValueError: if side is not an integer >= 3.
    """
    side = check_side(side, True)
    idx = torch.arange(side * side, device=device).view(side, side)
    moves = [torch.roll(idx, -1, 0), torch.roll(idx, 1, 0), torch.roll(idx, -1, 1), torch.roll(idx, 1, 1)]
    return torch.stack([m.reshape(-1) for m in moves], 1)


def lattice_adjacency(side: int, periodic: bool = True, dtype: torch.dtype = torch.float32,
                      device=None) -> torch.Tensor:
    """Dense 0/1 symmetric adjacency matrix A (D, D), D = side**2; for tests and small sizes only.

    Raises:
        ValueError: if side is invalid (see check_side) or side > MAX_DENSE_SIDE.
    """
    side = check_side(side, periodic)
    if side > MAX_DENSE_SIDE:
        raise ValueError(f"dense lattice couplings are only built for side <= {MAX_DENSE_SIDE}, got {side}")
    d = side * side
    eye = torch.eye(d, dtype=dtype, device=device).view(d, side, side)
    return neighbour_sum(eye, periodic).reshape(d, d)


def lattice_edges(side: int, periodic: bool = True, device=None) -> torch.Tensor:
    """Every edge once, as a (2, E) int64 tensor of flat site indices (E = 2 * side**2 when periodic)."""
    side = check_side(side, periodic)
    idx = torch.arange(side * side, device=device).view(side, side)
    if periodic:
        pairs = [(idx, torch.roll(idx, -1, 1)), (idx, torch.roll(idx, -1, 0))]
    else:
        pairs = [(idx[:, :-1], idx[:, 1:]), (idx[:-1, :], idx[1:, :])]
    src = torch.cat([a.reshape(-1) for a, _ in pairs])
    dst = torch.cat([b.reshape(-1) for _, b in pairs])
    return torch.stack([src, dst])
