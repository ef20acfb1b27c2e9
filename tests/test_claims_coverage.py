"""Coverage of every interval method of gradmc.claims.stats: simulated replicates with a known effect.

Each cell draws N replicate sets of n replicates from a distribution with a known mean, computes the method's
95% interval of each set and counts how often it covers the true effect; the claims need >= 93% (the Monte
Carlo sd of a coverage near 95% over N = 2000 sets is 0.005). n runs from 5, the fewest replicates any config
gives a bounded interval (quick/paper: 5 seeds, 5 runs, 5 timed repeats; smoke's 1 seed / 1 repeat / 4 chains
are unbounded by design), to 30 (kmc_banana's runs).

Shapes (from /tmp/fresh/results/quick, 2026-12-06):

- replicates of a bootstrap (per-chain ESS, timed runs), positive:
  ``normal`` N(1, 0.25^2); ``skewed`` lognormal(0, 0.75) (skewness 2.9, the most skewed per-chain ESS seen:
  GWG on the 40x40 Ising lattice, skewness 1.1-2.9 over samplers); ``heavy`` 1 + Lomax(2.5) (infinite third
  moment: per-chain ESS kurtosis up to 11, and timed runs with one run 1.7x the others, mnist_rbm Gibbs-1).
- per-seed / per-run differences of a t interval: ``normal`` N(0.3, 1); ``skewed`` lognormal(0, 0.5)
  (skewness 1.75: a seed's difference averages over its chains, so it is less skewed than one chain's ESS);
  ``heavy`` Student t with 3 degrees of freedom. The stress case lognormal(0, 0.75) is measured too.

The claims' interval of a mean, :func:`t_interval` / :func:`paired_t_interval` (Student t union bootstrap-t,
:func:`robust_t_interval`), must cover every cell from n = 5; the plain Student t (:func:`student_t_interval`, used
by no claim) is measured beside it: it under-covers the skewed differences below n = 30 and the stress case at every
n up to 30 (xfail, with the measured coverage; see the stats module docstring).

Bootstrap cells use :func:`gradmc.claims.stats._bootstrap_bounds`, the code of :func:`bootstrap_interval`, on
many replicate sets at once, with 999-1999 resamples (the claims use 4999; the slow tests use 1999).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from gradmc.claims.stats import (
    BOOTSTRAP_SEED,
    LEVEL,
    MIN_BOOTSTRAP_REPLICATES,
    MIN_T_REPLICATES,
    _bootstrap_bounds,
    _bootstrap_t_bounds,
    bootstrap_interval,
    difference_of_means,
    log_ratio_of_means,
    paired_robust_t_interval,
    paired_t_interval,
    robust_t_interval,
    student_t_interval,
    t_interval,
)

REQUIRED = 0.93
SIMS = 2000
RESAMPLES = 999


def _resamples(n: int) -> int:
    """Resamples per set in the fast cells. At n <= 8 the expanded bootstrap's bounds are extreme quantiles
    (n = 4: the 0.012% and 99.988% points), which a small number of resamples cannot reach: 1999 there (the
    claims use 4999; 499 would read 0.929 at n = 4 where 1999 reads 0.95)."""
    return 1999 if n <= 8 else RESAMPLES
CHUNK = 200  # replicate sets per bootstrap batch (memory: CHUNK x RESAMPLES x n per sample)


def _positive(shape: str, size: tuple[int, ...], rng: np.random.Generator) -> tuple[np.ndarray, float]:
    """Positive replicates (per-chain ESS, timed runs) and their true mean."""
    if shape == "normal":
        return rng.normal(1.0, 0.25, size), 1.0
    if shape == "skewed":
        return rng.lognormal(0.0, 0.75, size), float(np.exp(0.75 ** 2 / 2))
    if shape == "heavy":
        return 1.0 + rng.pareto(2.5, size), 1.0 + 1.0 / 1.5
    raise ValueError(shape)


def _difference(shape: str, size: tuple[int, ...], rng: np.random.Generator) -> tuple[np.ndarray, float]:
    """Per-seed differences and their true mean."""
    if shape == "normal":
        return rng.normal(0.3, 1.0, size), 0.3
    if shape == "skewed":
        return rng.lognormal(0.0, 0.5, size), float(np.exp(0.5 ** 2 / 2))
    if shape == "strong-skew":
        return rng.lognormal(0.0, 0.75, size), float(np.exp(0.75 ** 2 / 2))
    if shape == "heavy":
        return rng.standard_t(3, size), 0.0
    raise ValueError(shape)


def _growth(g_hi, b_hi, g_lo, b_lo):
    """As gradmc.experiments.ising_sampling.claims._growth: a difference of two log ratios of means."""
    return log_ratio_of_means(g_hi, b_hi) - log_ratio_of_means(g_lo, b_lo)


# statistic -> (number of samples, scale of each sample, true effect as a function of the shape's mean)
STATISTICS = {
    "log_ratio_of_means": (log_ratio_of_means, (2.0, 1.0), lambda mu: float(np.log(2.0))),
    "difference_of_means": (difference_of_means, (2.0, 1.0), lambda mu: mu),
    "growth": (_growth, (3.0, 1.0, 1.5, 1.0), lambda mu: float(np.log(3.0) - np.log(1.5))),
}


def student_t_coverage(shape: str, n: int, sims: int = SIMS, seed: int = 0) -> float:
    """Coverage of the plain Student t (:func:`student_t_interval`, used by no claim)."""
    rng = np.random.default_rng(seed)
    x, mu = _difference(shape, (sims, n), rng)
    hits = 0
    for row in x:
        iv = student_t_interval(row, "seeds")
        assert np.isfinite(iv.low) and np.isfinite(iv.high)
        hits += iv.low <= mu <= iv.high
    return hits / sims


def t_coverage(shape: str, n: int, sims: int = SIMS, resamples: int = RESAMPLES, seed: int = 0) -> float:
    """Coverage of the claims' :func:`t_interval` (= :func:`robust_t_interval`): the union of Student t and
    :func:`_bootstrap_t_bounds`, batched."""
    rng = np.random.default_rng(seed)
    x, mu = _difference(shape, (sims, n), rng)
    hits = 0
    for start in range(0, sims, CHUNK):
        part = x[start:start + CHUNK]
        low, high = _bootstrap_t_bounds(part, LEVEL, resamples, rng)
        mean = part.mean(axis=1)
        half = stats.t.ppf(0.5 + LEVEL / 2, n - 1) * part.std(axis=1, ddof=1) / np.sqrt(n)
        low, high = np.minimum(low, mean - half), np.maximum(high, mean + half)
        hits += int(((low <= mu) & (mu <= high)).sum())
    return hits / sims


def paired_t_coverage(shape: str, n: int, sims: int, seed: int = 0) -> float:
    """Coverage of :func:`paired_t_interval` itself (4999 resamples, one call per set): pairs (d_i + 5, 5)."""
    rng = np.random.default_rng(seed)
    x, mu = _difference(shape, (sims, n), rng)
    hits = 0
    for row in x:
        iv = paired_t_interval(row + 5.0, np.full(n, 5.0), "seeds")
        assert np.isfinite(iv.low) and np.isfinite(iv.high)
        hits += iv.low <= mu <= iv.high
    return hits / sims


def bootstrap_coverage(statistic: str, shape: str, n: int, sims: int = SIMS, resamples: int = RESAMPLES,
                       seed: int = 0) -> float:
    fn, scales, truth = STATISTICS[statistic]
    rng = np.random.default_rng(seed)
    hits = 0
    for start in range(0, sims, CHUNK):
        m = min(CHUNK, sims - start)
        draws = [_positive(shape, (m, n), rng) for _ in scales]
        arrays = [scale * d for scale, (d, _) in zip(scales, draws, strict=True)]
        true = truth(draws[0][1])
        effect = fn(*arrays)
        low, high = _bootstrap_bounds(fn, arrays, LEVEL, resamples, rng)
        low, high = np.minimum(low, effect), np.maximum(high, effect)  # as bootstrap_interval
        hits += int(((low <= true) & (true <= high)).sum())
    return hits / sims


T_SHAPES = ("normal", "skewed", "heavy")
FAST_N = (5, 10, 30)
BOOT_N = (MIN_BOOTSTRAP_REPLICATES, 8, 30)
#: Cells that under-cover at every n up to 30, whatever the interval: a difference of means of skewed or
#: heavy-tailed positive replicates (no claim uses one; compare such replicates as a log ratio).
DIFFERENCE_UNCOVERED = ("skewed", "heavy")


@pytest.mark.parametrize("n", FAST_N)
@pytest.mark.parametrize("shape", T_SHAPES + ("strong-skew",))
def test_t_interval_covers(shape, n):
    """The claims' interval of a mean (Student t union bootstrap-t) covers every shape from n = 5."""
    assert n >= MIN_T_REPLICATES
    cov = t_coverage(shape, n)
    if shape == "strong-skew" and n < 20:
        pytest.xfail(f"skewness 2.9 at n={n}: {cov:.3f} (stats docstring)")
    assert cov >= REQUIRED, f"t interval (t union bootstrap-t), {shape}, n={n}: coverage {cov:.3f}"


def test_paired_t_interval_covers_at_five_seeds():
    """paired_t_interval itself, as the claims call it (4999 resamples), on the cell Student t fails."""
    for shape in ("skewed", "heavy"):
        cov = paired_t_coverage(shape, MIN_T_REPLICATES, sims=1000)
        assert cov >= REQUIRED, f"paired t interval, {shape}, n=5: coverage {cov:.3f}"


def test_the_claims_t_interval_is_the_measured_union():
    rng = np.random.default_rng(3)
    for n in (5, 9):
        x = rng.lognormal(0.0, 0.5, n)
        assert t_interval(x, "seeds") == robust_t_interval(x, "seeds")
        assert paired_t_interval(x + 2.0, np.full(n, 2.0), "seeds") == paired_robust_t_interval(
            x + 2.0, np.full(n, 2.0), "seeds")


@pytest.mark.parametrize("n", FAST_N)
@pytest.mark.parametrize("shape", T_SHAPES)
def test_student_t_interval_coverage(shape, n):
    """Measured for the record: the plain Student t, used by no claim, under-covers skewed replicates below 30."""
    assert n >= MIN_T_REPLICATES
    cov = student_t_coverage(shape, n)
    if shape == "skewed" and n < 30:
        pytest.xfail(f"Student t under-covers skewed differences at n={n}: {cov:.3f} (stats docstring)")
    assert cov >= REQUIRED, f"Student t interval, {shape}, n={n}: coverage {cov:.3f}"


def test_robust_t_is_student_t_widened_by_bootstrap_t():
    rng = np.random.default_rng(4)
    x = rng.lognormal(0.0, 0.75, 6)
    robust, student = robust_t_interval(x, "seeds"), student_t_interval(x, "seeds")
    assert robust.effect == student.effect and robust.low <= student.low and robust.high >= student.high
    assert robust.high - robust.effect > robust.effect - robust.low  # a right-skewed sample: a longer upper side
    low, high = _bootstrap_t_bounds(x[None], LEVEL, 4999, np.random.default_rng(BOOTSTRAP_SEED))[:, 0]
    assert (robust.low, robust.high) == pytest.approx((min(low, student.low), max(high, student.high)))
    paired = paired_robust_t_interval(x + 1.0, np.ones(6), "seeds")
    assert (paired.low, paired.high) == pytest.approx((robust.low, robust.high))
    assert paired.method.startswith("paired t and bootstrap-t")
    few = robust_t_interval(x[:MIN_T_REPLICATES - 1], "seeds")
    assert few.low == -np.inf and few.high == np.inf
    point = robust_t_interval([2.0] * 5, "seeds")
    assert (point.low, point.effect, point.high) == (2.0, 2.0, 2.0)


FAST_CELLS = [(stat, shape, n) for stat in STATISTICS for shape in ("normal", "skewed", "heavy") for n in BOOT_N
              if not (stat == "difference_of_means" and shape in DIFFERENCE_UNCOVERED)]  # those: slow tests


@pytest.mark.parametrize(("statistic", "shape", "n"), FAST_CELLS)
def test_bootstrap_covers(statistic, shape, n):
    assert n >= MIN_BOOTSTRAP_REPLICATES
    cov = bootstrap_coverage(statistic, shape, n, resamples=_resamples(n))
    assert cov >= REQUIRED, f"bootstrap of {statistic}, {shape}, n={n}: coverage {cov:.3f}"


def test_bootstrap_below_its_minimum_is_unbounded():
    rng = np.random.default_rng(5)
    few = MIN_BOOTSTRAP_REPLICATES - 1
    iv = bootstrap_interval(log_ratio_of_means, (rng.lognormal(size=few), rng.lognormal(size=30)), "chains")
    assert iv.low == -np.inf and iv.high == np.inf and iv.replicates == few
    assert f">= {MIN_BOOTSTRAP_REPLICATES} chains" in iv.method


def test_the_batched_bounds_are_those_of_bootstrap_interval():
    rng = np.random.default_rng(6)
    a, b = rng.lognormal(size=7), rng.lognormal(size=9)
    iv = bootstrap_interval(log_ratio_of_means, (a, b), "chains", n_resamples=999)
    low, high = _bootstrap_bounds(log_ratio_of_means, [a[None], b[None]], LEVEL, 999,
                                  np.random.default_rng(BOOTSTRAP_SEED))[:, 0]
    assert (iv.low, iv.high) == pytest.approx((min(low, iv.effect), max(high, iv.effect)))
    # a statistic that does not reduce over the last axis is called once per resample: the same bounds
    looped = bootstrap_interval(lambda x, y: float(np.log(sum(x) / len(x)) - np.log(sum(y) / len(y))), (a, b),
                                "chains", n_resamples=999)
    assert (looped.low, looped.high) == pytest.approx((iv.low, iv.high))


SLOW_N = (5, 6, 8, 10, 15, 20, 30)
SLOW_BOOT_N = (MIN_BOOTSTRAP_REPLICATES,) + SLOW_N


@pytest.mark.slow
@pytest.mark.parametrize("n", SLOW_N)
@pytest.mark.parametrize("shape", T_SHAPES + ("strong-skew",))
def test_t_interval_covers_precise(shape, n):
    cov = t_coverage(shape, n, sims=10000, resamples=1999, seed=1)
    if shape == "strong-skew" and n < 20:
        pytest.xfail(f"skewness 2.9 at n={n}: {cov:.3f}")
    assert cov >= REQUIRED


@pytest.mark.slow
@pytest.mark.parametrize("n", SLOW_N)
@pytest.mark.parametrize("shape", T_SHAPES)
def test_student_t_interval_coverage_precise(shape, n):
    cov = student_t_coverage(shape, n, sims=20000, seed=1)
    if shape == "skewed" and n < 30:
        pytest.xfail(f"Student t under-covers skewed differences at n={n}: {cov:.3f}")
    assert cov >= REQUIRED


@pytest.mark.slow
@pytest.mark.parametrize("n", SLOW_BOOT_N)
@pytest.mark.parametrize("shape", ("normal", "skewed", "heavy"))
@pytest.mark.parametrize("statistic", tuple(STATISTICS))
def test_bootstrap_covers_precise(statistic, shape, n):
    cov = bootstrap_coverage(statistic, shape, n, sims=6000, resamples=1999, seed=1)
    if statistic == "difference_of_means" and shape in DIFFERENCE_UNCOVERED:
        pytest.xfail(f"difference of means, {shape}, n={n}: {cov:.3f}")
    assert cov >= REQUIRED
