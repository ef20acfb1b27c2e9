"""Input checks shared by the targets: clear errors naming what is wrong and what was expected."""

from __future__ import annotations

import torch

__all__ = ["check_binary", "check_square_symmetric", "validate_onehot"]


def check_binary(x: torch.Tensor, dim: int | None = None, name: str = "x", check_values: bool = False) -> None:
    """Raise ValueError unless x is a floating (C, dim) tensor (values in {0, 1} if check_values).

    dim=None accepts any number of columns.

    The value check costs a pass over x, so kernels call it with check_values=False in the hot loop;
    entry points (``init``, data loading) call it with check_values=True.
    """
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if x.dim() != 2 or (dim is not None and x.shape[1] != dim):
        want = "D" if dim is None else dim
        raise ValueError(f"{name} must have shape (num_chains, {want}), got {tuple(x.shape)}")
    if not x.is_floating_point():
        raise ValueError(f"{name} must be a floating tensor with values in {{0, 1}}, got dtype {x.dtype}")
    if check_values and not bool(((x == 0) | (x == 1)).all()):
        raise ValueError(f"{name} must contain only 0 and 1 (binary states)")


def validate_onehot(x: torch.Tensor, num_sites: int | None = None, num_categories: int | None = None,
                    name: str = "x", check_values: bool = False) -> None:
    """Raise ValueError unless x is a floating one-hot tensor (C, num_sites, num_categories).

    None for num_sites / num_categories accepts any size (num_categories must still be >= 2).
    With check_values=True every entry must be 0 or 1 and every site x[c, i, :] must sum to 1; that
    costs a pass over x, so targets skip it on hot-loop calls and do it in their ``validate`` method.

    Raises:
        TypeError: if x is not a torch.Tensor.
        ValueError: wrong number of dimensions, wrong sizes, non-floating dtype, or (check_values)
            entries outside {0, 1} / sites that are not one-hot.
    """
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    want = (f"(num_chains, {'D' if num_sites is None else num_sites}, "
            f"{'K' if num_categories is None else num_categories})")
    if x.dim() != 3:
        raise ValueError(f"{name} must be one-hot with shape {want}, got {tuple(x.shape)}")
    if (num_sites is not None and x.shape[1] != num_sites) or (
            num_categories is not None and x.shape[2] != num_categories):
        raise ValueError(f"{name} must have shape {want}, got {tuple(x.shape)}")
    if x.shape[2] < 2:
        raise ValueError(f"{name} needs at least 2 categories (last dimension), got shape {tuple(x.shape)}")
    if not x.is_floating_point():
        raise ValueError(f"{name} must be a floating one-hot tensor, got dtype {x.dtype}")
    if check_values:
        if not bool(((x == 0) | (x == 1)).all()):
            raise ValueError(f"{name} must contain only 0 and 1 (one-hot states)")
        if not bool((x.sum(-1) == 1).all()):
            raise ValueError(f"{name} must have exactly one 1 per site (each {name}[c, i, :] one-hot)")


def check_square_symmetric(m: torch.Tensor, name: str = "J", zero_diagonal: bool = True,
                           atol: float = 1e-6) -> None:
    """Raise ValueError unless m is a floating square (D, D) matrix equal to its transpose within atol.

    With zero_diagonal the diagonal must be exactly zero (a self-coupling of a spin is a constant but
    distorts the gradient that GWG's proposal uses).
    """
    if not isinstance(m, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(m).__name__}")
    if m.dim() != 2 or m.shape[0] != m.shape[1]:
        raise ValueError(f"{name} must be a square (D, D) matrix, got shape {tuple(m.shape)}")
    if not m.is_floating_point():
        raise ValueError(f"{name} must be floating, got dtype {m.dtype}")
    asym = float((m - m.t()).abs().max()) if m.numel() else 0.0
    if asym > atol:
        raise ValueError(f"{name} must be symmetric, max |{name} - {name}^T| = {asym:.3g} > {atol:g}")
    if zero_diagonal and bool((m.diagonal() != 0).any()):
        raise ValueError(f"{name} must have a zero diagonal (no self-couplings)")
