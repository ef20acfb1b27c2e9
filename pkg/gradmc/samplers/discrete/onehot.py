"""Categorical states as one-hot float tensors (C, D, K): validation, enumeration, index conversion.

A categorical state of D sites with K values each is stored as a (C, D, K) floating tensor whose
rows x[c, i] are one-hot vectors (GWG paper Sec. 3, Table 1 "Potts"; Appendix I.1). Targets are
differentiable functions of this relaxed representation, which is what GWG's Eq. 4 differentiates.
"""

from __future__ import annotations

import torch

from gradmc.core.validation import validate_onehot

__all__ = ["check_onehot", "enumerate_onehot", "onehot_to_index"]

#: Largest number of states :func:`enumerate_onehot` will build (K**D rows).
MAX_ENUMERATED_STATES = 2**24


def check_onehot(x: torch.Tensor, name: str = "x", check_values: bool = False) -> None:
    """Raise unless x is a floating (C, D, K) tensor with K >= 2 (one-hot rows if check_values).

    The value check costs a pass over x, so kernels call it with check_values=False in the hot loop;
    entry points (``init``, ``transition_probabilities``) call it with check_values=True.

    Raises:
        TypeError: if x is not a torch.Tensor.
        ValueError: if x is not 3-D, has no chains or sites, has K < 2 categories, is not floating,
            or (check_values) has an entry outside {0, 1} or a site whose entries do not sum to 1.
    """
    if isinstance(x, torch.Tensor) and x.dim() == 3 and (x.shape[0] == 0 or x.shape[1] == 0):
        raise ValueError(f"{name} needs at least one chain and one site, got shape {tuple(x.shape)}")
    validate_onehot(x, name=name, check_values=check_values)


def enumerate_onehot(num_sites: int, num_categories: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """All K**D categorical states, one-hot, shape (K**D, D, K).

    Row k holds the base-K digits of k, most significant first (site 0 is the slowest digit), so
    ``onehot_to_index`` inverts it.

    Raises:
        ValueError: if num_sites < 1, num_categories < 2, or K**D exceeds MAX_ENUMERATED_STATES.
    """
    if num_sites < 1 or num_categories < 2:
        raise ValueError(f"need num_sites >= 1 and num_categories >= 2, got {num_sites}, {num_categories}")
    if num_categories**num_sites > MAX_ENUMERATED_STATES:
        raise ValueError(
            f"{num_categories}**{num_sites} states exceed the enumeration limit {MAX_ENUMERATED_STATES}"
        )
    k = torch.arange(num_categories**num_sites)
    place = num_categories ** torch.arange(num_sites - 1, -1, -1)  # (D,)
    digits = (k[:, None] // place[None, :]) % num_categories  # (K**D, D)
    return torch.nn.functional.one_hot(digits, num_categories).to(dtype)


def onehot_to_index(x: torch.Tensor) -> torch.Tensor:
    """(C, D, K) one-hot -> (C,) int64 row index in ``enumerate_onehot``'s order."""
    _, D, K = x.shape
    place = K ** torch.arange(D - 1, -1, -1, device=x.device)  # (D,)
    return (x.argmax(-1) * place).sum(-1)
