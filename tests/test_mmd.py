"""Kernel MMD between sample sets (gradmc.evaluation.mmd): binary sets, and chain prefixes vs a benchmark."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from gradmc.evaluation import hamming_kernel, log_mmd, mmd2
from gradmc.evaluation import mmd as mmd_module
from gradmc.evaluation.mmd import ReferenceMMD, mmd2_prefixes, polynomial_kernel


def _bits(n: int, d: int, p: float, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.bernoulli(torch.full((n, d), p), generator=g)


def _brute_force_mmd2(x: torch.Tensor, y: torch.Tensor, unbiased: bool) -> float:
    """Python double loops over pairs; K(a, b) = exp(-(number of differing bits) / D)."""
    d = x.shape[1]

    def k(a, b):
        return math.exp(-sum(int(a[i] != b[i]) for i in range(d)) / d)

    xs, ys = x.tolist(), y.tolist()
    n, m = len(xs), len(ys)
    if unbiased:
        kxx = sum(k(xs[i], xs[j]) for i in range(n) for j in range(n) if i != j) / (n * (n - 1))
        kyy = sum(k(ys[i], ys[j]) for i in range(m) for j in range(m) if i != j) / (m * (m - 1))
    else:
        kxx = sum(k(a, b) for a in xs for b in xs) / n**2
        kyy = sum(k(a, b) for a in ys for b in ys) / m**2
    kxy = sum(k(a, b) for a in xs for b in ys) / (n * m)
    return kxx + kyy - 2 * kxy


def test_kernel_hand_examples():
    x = torch.tensor([[0.0, 0.0, 0.0, 0.0], [1.0, 1.0, 0.0, 0.0]])
    y = torch.tensor([[0.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0], [1.0, 0.0, 0.0, 0.0]])
    # mismatches: row 0 vs y: 0, 4, 1; row 1 vs y: 2, 2, 1 (D = 4)
    expected = torch.exp(-torch.tensor([[0.0, 4.0, 1.0], [2.0, 2.0, 1.0]], dtype=torch.float64) / 4)
    K = hamming_kernel(x, y)
    assert K.shape == (2, 3) and K.dtype == torch.float64
    torch.testing.assert_close(K, expected, rtol=0, atol=1e-15)
    assert K[0, 0] == 1.0
    assert math.isclose(float(K[0, 1]), math.exp(-1.0), rel_tol=1e-15)  # all bits differ: exp(-1)


def test_kernel_values_in_unit_interval():
    x, y = _bits(50, 30, 0.3, 0), _bits(40, 30, 0.6, 1)
    K = hamming_kernel(x, y)
    assert K.shape == (50, 40)
    assert bool((K > 0).all() and (K <= 1).all())
    assert bool((K >= math.exp(-1) - 1e-15).all())
    torch.testing.assert_close(hamming_kernel(x, x).diagonal(), torch.ones(50, dtype=torch.float64))
    torch.testing.assert_close(hamming_kernel(y, x), K.T)


def test_kernel_float32_large_d_is_exact():
    """The matmul mismatch counts equal a direct elementwise count at a large D."""
    x, y = _bits(3, 5000, 0.5, 2), _bits(4, 5000, 0.5, 3)
    counts = (x[:, None, :] != y[None, :, :]).sum(-1).double()
    torch.testing.assert_close(hamming_kernel(x, y), torch.exp(-counts / 5000), rtol=0, atol=1e-15)


def test_mmd_zero_for_identical_sets():
    x = _bits(64, 20, 0.4, 4)
    assert abs(float(mmd2(x, x))) < 1e-14
    assert abs(float(mmd2(x, x.clone()))) < 1e-14
    assert log_mmd(x, x) == -math.inf


def test_mmd_positive_for_different_sets():
    x, y = _bits(100, 20, 0.2, 5), _bits(100, 20, 0.8, 6)
    assert float(mmd2(x, y)) > 0.05
    assert float(mmd2(x, y, unbiased=True)) > 0.05
    assert math.isclose(float(log_mmd(x, y)), math.log10(float(mmd2(x, y))), rel_tol=1e-12)
    assert math.isclose(float(log_mmd(x, y, base=math.e)), math.log(float(mmd2(x, y))), rel_tol=1e-12)


@pytest.mark.parametrize("unbiased", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_mmd_matches_brute_force(unbiased, seed):
    x, y = _bits(7, 9, 0.3, 10 + seed), _bits(5, 9, 0.6, 20 + seed)
    expected = _brute_force_mmd2(x, y, unbiased)
    assert math.isclose(float(mmd2(x, y, unbiased=unbiased)), expected, abs_tol=1e-13)


def test_unbiased_near_zero_and_biased_positive_for_same_distribution():
    """Two independent sets from one distribution: U-statistic ~ 0, V-statistic biased upwards."""
    x, y = _bits(300, 50, 0.5, 30), _bits(300, 50, 0.5, 31)
    u, v = float(mmd2(x, y, unbiased=True)), float(mmd2(x, y))
    # V - U = (1 - mean off-diagonal Kxx) / N + (same for y) ~ 2 (1 - e^{-1/2}) / 300
    assert v > u
    assert math.isclose(v - u, 2 * (1 - math.exp(-0.5)) / 300, rel_tol=0.05)
    assert abs(u) < 1e-3


def test_custom_kernel_is_used():
    x, y = _bits(6, 4, 0.5, 40), _bits(8, 4, 0.5, 41)

    def linear(a, b):
        return a.double() @ b.double().T

    expected = float((x.double().mean(0) - y.double().mean(0)).pow(2).sum())  # ||mean x - mean y||^2
    assert math.isclose(float(mmd2(x, y, kernel=linear)), expected, abs_tol=1e-12)


def test_errors():
    x = _bits(5, 4, 0.5, 50)
    with pytest.raises(ValueError, match="same dimension"):
        mmd2(x, _bits(5, 3, 0.5, 51))
    with pytest.raises(ValueError, match="shape"):
        hamming_kernel(x[0], x)
    with pytest.raises(ValueError, match="shape"):
        mmd2(x, x[None])
    with pytest.raises(ValueError, match="only 0 and 1"):
        mmd2(x, x * 0.5)
    with pytest.raises(ValueError, match="at least 2"):
        mmd2(x, x[:1], unbiased=True)
    with pytest.raises(ValueError, match="base"):
        log_mmd(x, x, base=1.0)
    with pytest.raises(TypeError):
        mmd2(x.numpy(), x)


@pytest.mark.parametrize("seed", [0, 1])
def test_reference_mmd_matches_brute_force_and_mmd2(seed):
    """The cached k(y, y) term gives the same V-statistic as the pairwise loops and as mmd2 / log_mmd."""
    x, y = _bits(5, 7, 0.3, 60 + seed), _bits(9, 7, 0.6, 70 + seed)
    reference = ReferenceMMD(y)
    assert math.isclose(float(reference.mmd2(x)), _brute_force_mmd2(x, y, unbiased=False), rel_tol=1e-12)
    big_x, big_y = _bits(100, 784, 0.5, 80 + seed), _bits(500, 784, 0.45, 90 + seed)
    cached = ReferenceMMD(big_y)
    assert math.isclose(float(cached.log_mmd(big_x)), float(log_mmd(big_x, big_y)), rel_tol=1e-12)
    assert float(cached.mmd2(big_y)) == pytest.approx(0.0, abs=1e-12)  # identical sets: exactly 0 up to rounding


def test_reference_mmd_custom_kernel_and_errors():
    x, y = _bits(6, 4, 0.5, 40), _bits(8, 4, 0.5, 41)

    def linear(a, b):
        return a.double() @ b.double().T

    expected = float((x.double().mean(0) - y.double().mean(0)).pow(2).sum())
    assert math.isclose(float(ReferenceMMD(y, kernel=linear).mmd2(x)), expected, abs_tol=1e-12)
    reference = ReferenceMMD(y)
    with pytest.raises(ValueError, match="same dimension"):
        reference.mmd2(_bits(5, 3, 0.5, 51))
    with pytest.raises(ValueError, match="only 0 and 1"):
        reference.mmd2(x * 0.5)
    with pytest.raises(ValueError, match="only 0 and 1"):
        ReferenceMMD(y * 0.5)
    with pytest.raises(ValueError, match="base"):
        reference.log_mmd(x, base=1.0)


def test_polynomial_kernel_mmd_matches_closed_form_moments():
    """With k = (1 + xy)^3 in 1-D, MMD^2_V = sum_j C(3,j) (m_j(x) - m_j(y))^2 over sample moments j = 1..3."""
    import math

    from gradmc.evaluation import mmd2, polynomial_kernel

    g = torch.Generator().manual_seed(0)
    x = torch.randn(50, 1, generator=g, dtype=torch.float64)
    y = 0.5 + 2.0 * torch.randn(70, 1, generator=g, dtype=torch.float64)
    expected = sum(math.comb(3, j) * float((x**j).mean() - (y**j).mean()) ** 2 for j in range(1, 4))
    assert float(mmd2(x, y, kernel=polynomial_kernel)) == pytest.approx(expected, rel=1e-10)
    assert float(mmd2(x, x, kernel=polynomial_kernel)) == pytest.approx(0.0, abs=1e-9)


def test_polynomial_kernel_rejects_bad_input():
    from gradmc.evaluation import polynomial_kernel

    x = torch.zeros(3, 2, dtype=torch.float64)
    with pytest.raises(ValueError, match="same dimension"):
        polynomial_kernel(x, torch.zeros(3, 3, dtype=torch.float64))
    with pytest.raises(ValueError, match="NaN"):
        polynomial_kernel(x, torch.full((2, 2), float("nan"), dtype=torch.float64))
    with pytest.raises(ValueError, match="degree"):
        polynomial_kernel(x, x, degree=0)


def test_mmd2_prefixes_equals_library_mmd2():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(1100, 3, generator=g, dtype=torch.float64)  # > 2 blocks of 512 rows
    y = 0.5 + torch.randn(300, 3, generator=g, dtype=torch.float64)
    steps = [1, 7, 600, 1100]
    got = mmd2_prefixes(x, y, steps)
    want = [float(mmd2(x[:t], y, polynomial_kernel)) for t in steps]
    np.testing.assert_allclose(got, want, rtol=1e-10)
    scale = float(polynomial_kernel(y, y).mean())
    assert abs(mmd2_prefixes(y, y, [300])[0]) < 1e-12 * scale  # the benchmark against itself: 0
    # the block boundaries do not matter: a block of 7 rows gives the same values to rounding
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(mmd_module, "PREFIX_BLOCK", 7)
        np.testing.assert_allclose(mmd2_prefixes(x, y, steps), got, rtol=1e-12)
    for bad in ([0, 5], [5, 5], [10, 1101]):
        with pytest.raises(ValueError, match="steps"):
            mmd2_prefixes(x, y, bad)


def test_mmd2_prefixes_by_hand_on_one_dimension():
    """x = (0, 1), y = (2,), kernel (1 + a b)^3: prefix 1: k(0,0) + k(2,2) - 2 k(0,2) = 1 + 125 - 2 = 124;
    prefix 2: (1 + 1 + 1 + 8) / 4 + 125 - 2 (1 + 27) / 2 = 2.75 + 125 - 28 = 99.75."""
    x = torch.tensor([[0.0], [1.0]], dtype=torch.float64)
    y = torch.tensor([[2.0]], dtype=torch.float64)
    assert mmd2_prefixes(x, y, [1, 2]) == [124.0, 99.75]
