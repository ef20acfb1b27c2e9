"""Kernel maximum mean discrepancy between two sample sets (Gretton et al. 2012).

Used for the RBM experiments of the GWG paper (Sec. 5.1, Fig. 2-3, Appendix C.2 and E.1): the
distance between the current samples of a sampler and "ground-truth" block-Gibbs samples, with the
exponential average Hamming kernel K(x, x') = exp(-(1/D) sum_i [x_i != x'_i]); and for the Kernel HMC
paper's Fig. 4 left (B3), the cubic polynomial kernel between every prefix of a chain and benchmark
samples (:func:`mmd2_prefixes`).

Estimators of MMD^2 = E k(x, x') + E k(y, y') - 2 E k(x, y), for x (N, D) and y (M, D):

- biased V-statistic (``unbiased=False``, what the papers plot): the three means over ALL pairs,
  diagonals included; always >= 0 for a positive-definite kernel, and exactly 0 for identical sets;
  biased upwards by about (1 - mean off-diagonal k)(1/N + 1/M), so a "Target" line (two independent
  exact sample sets) sits above 0.
- unbiased U-statistic (``unbiased=True``): the within-set means leave out the diagonal; unbiased,
  hence better for comparing across sample sizes, but can be negative.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from gradmc.core.validation import check_binary

__all__ = ["hamming_kernel", "polynomial_kernel", "mmd2", "log_mmd", "ReferenceMMD", "mmd2_prefixes", "PREFIX_BLOCK"]

Kernel = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
#: Rows per kernel block in :func:`mmd2_prefixes` (memory O(PREFIX_BLOCK * max(T, M))).
PREFIX_BLOCK = 512


def _check_pair(x: torch.Tensor, y: torch.Tensor, binary: bool = True) -> None:
    """Raise TypeError/ValueError unless x (N, D) and y (M, D) are (binary, if asked) float tensors, N, M, D >= 1."""
    if binary:
        check_binary(x, name="x", check_values=True)
        check_binary(y, name="y", check_values=True)
    else:
        for name, t in (("x", x), ("y", y)):
            if not isinstance(t, torch.Tensor):
                raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
            if t.dim() != 2 or not t.is_floating_point():
                raise ValueError(f"{name} must be a 2-D floating tensor (N, D), got shape {tuple(t.shape)} "
                                 f"dtype {t.dtype}")
            if not torch.isfinite(t).all():
                raise ValueError(f"{name} contains NaN or infinite values")
    if x.shape[1] != y.shape[1]:
        raise ValueError(
            f"x and y must have the same dimension D, got x {tuple(x.shape)} and y {tuple(y.shape)}"
        )
    if x.shape[0] < 1 or y.shape[0] < 1 or x.shape[1] < 1:
        raise ValueError(
            f"x and y need at least one row and one column, got {tuple(x.shape)}, {tuple(y.shape)}"
        )


def hamming_kernel(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Exponential average Hamming kernel K(x, x') = exp(-(1/D) sum_i [x_i != x'_i]) (GWG App. E.1).

    The mismatch counts come from two matrix products, x (1 - y)^T + (1 - x) y^T, computed in
    float64 so they are exact integers for any D (float32 is exact only up to D = 2**24, and TF32
    matmuls on GPUs round further). The kernel is positive definite (a product over coordinates of
    the p.d. kernels exp(-[a != b] / D)), so the V-statistic below is >= 0.

    Args:
        x: (N, D) floating tensor with values in {0, 1}.
        y: (M, D) floating tensor with values in {0, 1}, same device as x.

    Returns:
        (N, M) float64 tensor with values in [exp(-1), 1]; 1 exactly where the rows are equal.

    Raises:
        TypeError: if x or y is not a tensor.
        ValueError: if x or y is not 2-D, not floating or not binary, if the D differ, or if a set
            is empty.
    """
    _check_pair(x, y)
    xd, yd = x.to(torch.float64), y.to(torch.float64)
    mismatches = xd @ (1.0 - yd).T + (1.0 - xd) @ yd.T  # (N, M) integer-valued counts in [0, D]
    return torch.exp(-mismatches / x.shape[1])


def polynomial_kernel(x: torch.Tensor, y: torch.Tensor, degree: int = 3, offset: float = 1.0) -> torch.Tensor:
    """Polynomial kernel k(x, y) = (offset + <x, y>)^degree for continuous samples.

    KMC paper Fig. 4 left (EXPERIMENTS.md B3) measures the MMD of GP-classification samples to benchmark
    samples with the cubic kernel (1 + <theta, theta'>)^3, which compares moments up to order 3 (it is
    not characteristic: the MMD is 0 for any two distributions with equal first three moments).

    Args:
        x: (N, D) floating tensor; y: (M, D) floating tensor, same device.
        degree: positive integer power (3 in the paper); offset: c >= 0.

    Returns:
        (N, M) float64 tensor.

    Raises:
        TypeError / ValueError: non-tensor, non-2-D, non-floating or non-finite input, different D,
            empty sets, degree < 1 or offset < 0.
    """
    _check_pair(x, y, binary=False)
    if int(degree) != degree or degree < 1:
        raise ValueError(f"degree must be a positive integer, got {degree!r}")
    if offset < 0:
        raise ValueError(f"offset must be >= 0, got {offset!r}")
    return (offset + x.to(torch.float64) @ y.to(torch.float64).T) ** int(degree)


def mmd2(
    x: torch.Tensor, y: torch.Tensor, kernel: Kernel = hamming_kernel, unbiased: bool = False
) -> torch.Tensor:
    """Squared MMD between the sample sets x and y (Gretton et al. 2012, Eq. 3 V- / Eq. 4 U-statistic).

    V-statistic: mean(Kxx) + mean(Kyy) - 2 mean(Kxy), all pairs included (the GWG authors' choice,
    ``use_ustat=False`` in their code). U-statistic: the Kxx and Kyy means exclude the diagonal,
    sum_{i != j} / (N (N - 1)).

    Args:
        x: (N, D) floats (samples of the sampler under test); binary for the default kernel.
        y: (M, D) floats (reference samples), same device; binary for the default kernel.
        kernel: callable (N, D), (M, D) -> (N, M); default :func:`hamming_kernel`.
        unbiased: False for the biased V-statistic (what the papers plot), True for the U-statistic.

    Returns:
        0-dim tensor in the kernel's dtype (float64 for the default kernel). The V-statistic is >= 0
        (0 up to rounding for identical sets); the U-statistic may be negative.

    Raises:
        TypeError / ValueError: as :func:`hamming_kernel` (input checks); ValueError if
            ``unbiased=True`` and N < 2 or M < 2.
    """
    _check_pair(x, y, binary=kernel is hamming_kernel)
    n, m = x.shape[0], y.shape[0]
    k_xx, k_yy, k_xy = kernel(x, x), kernel(y, y), kernel(x, y)  # (N, N), (M, M), (N, M)
    if not unbiased:
        return k_xx.mean() + k_yy.mean() - 2.0 * k_xy.mean()
    if n < 2 or m < 2:
        raise ValueError(f"the unbiased MMD needs at least 2 samples per set, got N={n}, M={m}")
    term_xx = (k_xx.sum() - k_xx.diagonal().sum()) / (n * (n - 1))
    term_yy = (k_yy.sum() - k_yy.diagonal().sum()) / (m * (m - 1))
    return term_xx + term_yy - 2.0 * k_xy.mean()


def log_mmd(
    x: torch.Tensor,
    y: torch.Tensor,
    kernel: Kernel = hamming_kernel,
    unbiased: bool = False,
    base: float = 10.0,
) -> torch.Tensor:
    """The "log-MMD" of the GWG paper's figures: log_base of the squared-MMD estimate.

    What is plotted. The paper (Fig. 2, Fig. 3, App. C.2 and E.1) only says "log-MMD" with the
    exponential average Hamming kernel. The authors' released code (``rbm_sample.py``) computes the
    biased V-statistic of MMD^2 (``MMD(exp_avg_hamming, use_ustat=False)``) and plots its log10 without
    a square root. We follow that so our numbers are on the paper's axis: log_mmd = log10(MMD^2_V).
    Note that log10(MMD) would be exactly half of it; with ``unbiased=True`` the U-statistic is used.

    Args:
        x, y, kernel, unbiased: as :func:`mmd2`.
        base: logarithm base (> 0, != 1); 10 matches the authors' figures, ``math.e`` gives nats.

    Returns:
        0-dim float tensor. -inf where the estimate is <= 0 (identical sets for the V-statistic, or a
        non-positive U-statistic); the value is not clamped, so a plot must drop or mark it.

    Raises:
        ValueError: for a bad ``base`` and as :func:`mmd2`.
    """
    if not (base > 0 and base != 1):
        raise ValueError(f"log base must be > 0 and != 1, got {base}")
    value = mmd2(x, y, kernel=kernel, unbiased=unbiased)
    return torch.log(value.clamp(min=0.0)) / math.log(base)


class ReferenceMMD:
    """Biased (V-statistic) MMD^2 and log-MMD to one fixed reference set, its k(y, y) term computed once.

    The RBM experiments (GWG Sec. 5.1, Fig. 2-3) score the chains against the same M ground-truth samples
    every few steps; the (M, M) kernel mean is the costliest of the three terms (M = 500 against
    N = 100 chains), so it is computed at construction. Each call equals ``mmd2(x, y, kernel)`` /
    ``log_mmd(x, y, kernel)`` (Gretton et al. 2012, eq. 3) up to float64 rounding.

    Args:
        y: (M, D) reference samples (binary for the default kernel).
        kernel: as :func:`mmd2`; default :func:`hamming_kernel`.

    Raises:
        TypeError / ValueError: as :func:`mmd2`, for y at construction and for x at each call.
    """

    def __init__(self, y: torch.Tensor, kernel: Kernel = hamming_kernel):
        _check_pair(y, y, binary=kernel is hamming_kernel)
        self.y, self.kernel = y, kernel
        self.k_yy_mean = kernel(y, y).mean()

    def mmd2(self, x: torch.Tensor) -> torch.Tensor:
        """V-statistic MMD^2 between x (N, D) and the reference; 0-dim tensor in the kernel's dtype."""
        _check_pair(x, self.y[:1], binary=self.kernel is hamming_kernel)
        return self.kernel(x, x).mean() + self.k_yy_mean - 2.0 * self.kernel(x, self.y).mean()

    def log_mmd(self, x: torch.Tensor, base: float = 10.0) -> torch.Tensor:
        """log_base of :meth:`mmd2` (-inf where it is <= 0), as :func:`log_mmd`."""
        if not (base > 0 and base != 1):
            raise ValueError(f"log base must be > 0 and != 1, got {base}")
        return torch.log(self.mmd2(x).clamp(min=0.0)) / math.log(base)


def _kernel_sum(x: torch.Tensor, y: torch.Tensor, kernel: Kernel) -> torch.Tensor:
    """Row sums (N,) of the kernel matrix between x (N, d) and y (M, d), in blocks of PREFIX_BLOCK rows."""
    return torch.cat([kernel(x[i:i + PREFIX_BLOCK], y).sum(1) for i in range(0, x.shape[0], PREFIX_BLOCK)])


def mmd2_prefixes(x: torch.Tensor, y: torch.Tensor, steps: list[int],
                  kernel: Kernel = polynomial_kernel) -> list[float]:
    """V-statistic MMD^2 between every prefix x[:t], t in ``steps``, and y (KMC Fig. 4 left: MMD to the
    benchmark along a chain).

    Equals ``mmd2(x[:t], y, kernel)`` (Gretton et al. 2012, eq. 3) for every t, without materialising the
    (T, T) kernel matrix: the sum over [0, t)^2 grows by the new-by-old and new-by-new blocks; memory
    O(PREFIX_BLOCK * max(T, M)), time O((T + M)^2 d).

    Args:
        x: (T, d) chain states in order. y: (M, d) benchmark samples.
        steps: strictly increasing ints in [1, T].
        kernel: (N, d), (M, d) -> (N, M), default the cubic :func:`polynomial_kernel` (float64).

    Returns:
        One float per step.

    Raises:
        ValueError: steps not strictly increasing within [1, T]; bad x, y (from the kernel).
    """
    if not steps or any(b <= a for a, b in zip(steps[:-1], steps[1:], strict=True)) or not 1 <= steps[0] \
            or steps[-1] > x.shape[0]:
        raise ValueError(f"steps must increase strictly within [1, {x.shape[0]}], got {steps}")
    k_yy = _kernel_sum(y, y, kernel).sum() / y.shape[0] ** 2
    k_xy = torch.cumsum(_kernel_sum(x, y, kernel), 0)  # (T,) sum over the first t rows of K_xy
    out, s_xx, prev = [], torch.zeros((), dtype=torch.float64), 0
    for t in steps:  # sum over [0, t)^2 = sum over [0, prev)^2 + 2 * new-by-old + new-by-new
        new = x[prev:t]
        old = 2.0 * _kernel_sum(new, x[:prev], kernel).sum() if prev else 0.0
        s_xx = s_xx + old + _kernel_sum(new, new, kernel).sum()
        out.append(float(s_xx / t**2 + k_yy - 2.0 * k_xy[t - 1] / (t * y.shape[0])))
        prev = t
    return out
