"""The median heuristic for kernel bandwidths (Gretton et al. 2012, Sec. 8; KAMH, Sejdinovic et al. 2014).

The length scale of a Gaussian or rational-quadratic kernel on data x_1..x_N is set to the median of the
pairwise Euclidean distances ||x_i - x_j|| (i < j): the kernel then varies most over the scale the data
spread over. KMC Fig. 2 (B1) uses it for the rational-quadratic length scale s, KMC Fig. 3 (B2) for the
KAMH kernel width.
"""

from __future__ import annotations

import torch

__all__ = ["median_heuristic", "PAIRWISE"]

#: How the pairwise distances are computed: ``"pdist"`` (:func:`torch.pdist`, from the coordinate
#: differences) or ``"cdist"`` (:func:`torch.cdist`, upper triangle; for more than 25 rows by the
#: matrix-product expansion ||x||^2 + ||y||^2 - 2 x.y). Both give the same distances up to rounding.
PAIRWISE = ("pdist", "cdist")


def median_heuristic(x: torch.Tensor, *, max_points: int | None = None, pairwise: str = "pdist",
                     fallback: float | None = None) -> float:
    """Median pairwise Euclidean distance between the rows of x (N, d), in the units of x.

    For an even number of pairs the lower of the two middle values (:meth:`torch.Tensor.median`).

    Args:
        x: (N, d) points.
        max_points: use only the first ``max_points`` rows (None: all); bounds the O(N^2) cost.
        pairwise: ``"pdist"`` or ``"cdist"`` (see :data:`PAIRWISE`).
        fallback: returned instead when the median is not > 0 (all rows equal) or there is no pair (N < 2);
            None: no fallback (the median is returned as is; N < 2 raises).

    Returns:
        The median distance (float), or ``fallback``.

    Raises:
        ValueError: x not 2-D, an unknown ``pairwise``, or N < 2 without a fallback.
    """
    if x.dim() != 2:
        raise ValueError(f"x must have shape (N, d), got {tuple(x.shape)}")
    if pairwise not in PAIRWISE:
        raise ValueError(f"pairwise must be one of {PAIRWISE}, got {pairwise!r}")
    z = x if max_points is None else x[:max_points]
    if z.shape[0] < 2 and fallback is None:
        raise ValueError(f"the median heuristic needs at least 2 points, got {z.shape[0]}")
    if pairwise == "pdist":
        dist = torch.pdist(z)
    else:
        iu = torch.triu_indices(z.shape[0], z.shape[0], offset=1)
        dist = torch.cdist(z, z)[iu[0], iu[1]]
    if fallback is None:
        return float(dist.median())
    med = float(dist.median()) if dist.numel() else 0.0
    return med if med > 0 else float(fallback)
