"""Input checks shared by the targets: clear errors naming what is wrong and what was expected."""

from __future__ import annotations

import torch

__all__ = ["check_binary"]


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
