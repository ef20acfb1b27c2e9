"""Effects with 95% intervals over independent replicates, and the verdict rule of every claim.

A claim's effect is one number with a sign convention (a difference or a log ratio) and an interval over
replicates: seeds, runs, or chains where the chains are independent draws from one target. The methods, and
the coverage of the true effect each reaches at nominal 95% (tests/test_claims_coverage.py: 3000-4000
simulated replicate sets per cell, Monte Carlo sd about 0.004; shapes chosen from the quick run's per-chain
ESS, timed runs and seed differences, see that file):

- :func:`t_interval` / :func:`paired_t_interval`, the interval of a mean that every claim uses: the union of the
  Student-t and the studentized bootstrap (bootstrap-t) interval (:func:`robust_t_interval` /
  :func:`paired_robust_t_interval`, which they call), effect the mean, over at least :data:`MIN_T_REPLICATES` (5)
  replicates. Fewer replicates give an honest, unbounded interval (the verdict is then INCONCLUSIVE), never a
  narrow one. From 5 replicates it covers >= 0.944 for normal, skewed (lognormal sigma 0.5) and Student-t(3)
  replicates at every n from 5 to 30 (0.949 for skewed differences at n = 5), and 0.921-0.937 for the strongly
  skewed shape (sigma 0.75, skewness 2.9) below n = 20 (0.938-0.945 from n = 20). It is wider than Student t:
  1.36x its median width at n = 5, 1.04x at n = 20 (normal replicates). (Bootstrap-t alone under-covers heavy
  tails: 0.92 at n = 20-30.) The resampling seed is fixed, so the interval is reproducible.
- :func:`student_t_interval`: the plain Student-t interval (scipy.stats.t), used by no claim: coverage at
  n = 5 / 10 / 30: normal 0.948 / 0.946 / 0.949; Student-t(3) differences 0.969 / 0.963 / 0.957; skewed
  differences (lognormal sigma 0.5, skewness 1.75) 0.911 / 0.919 / 0.937 (0.928 at n = 20 over 20000 sets:
  >= 0.93 only from about n = 30); strongly skewed (sigma 0.75) 0.870 / 0.883 / 0.915. It under-covers skewed
  replicates at the 5 seeds the configs use, so the claims' :func:`t_interval` widens it by bootstrap-t.
- :func:`bootstrap_interval`: expanded percentile bootstrap (Hesterberg 2015) of any statistic of one or more
  independent samples, e.g. :func:`log_ratio_of_means` of two samplers' per-chain ESS, or a difference of two
  log ratios (``_growth`` of gradmc.experiments.ising_sampling.claims): the percentiles of the bootstrap distribution
  at the level whose normal quantile is sqrt(n / (n - 1)) t_{0.975, n-1}, n the smallest sample. The plain
  percentile interval (this module up to 2026-12-06) is too narrow at small n: it covered 0.75-0.90 at
  n = 4-5 and 0.89-0.94 at n = 30 (log ratio of means: 0.85-0.87 at n = 4-5). Needs
  :data:`MIN_BOOTSTRAP_REPLICATES` (4) replicates in every sample, else unbounded (at n = 3 the expanded
  interval covers only 0.89). Coverage at n = 4 / 5 / 10 / 30 (1999 resamples; the claims use 4999):

  - log ratio of means: normal 0.954 / 0.966 / 0.955 / 0.955; lognormal(0.75) 0.956 / 0.966 / 0.946 / 0.943;
    1 + Lomax(2.5) (heavy) 0.964 / 0.965 / 0.952 / 0.937, falling slowly with n as the percentile
    interval's heavy-tail error outlasts the small-n expansion (about 0.92-0.94 at n = 64-100, 1500 sets);
  - difference of two log ratios: 0.944-0.981 in every cell;
  - difference of means: normal 0.947 / 0.957 / 0.950 / 0.954, but skewed 0.920-0.938 and heavy 0.870-0.909
    at every n up to 30 (compare positive replicates as a log ratio).

  The resampling seed is fixed, so the interval is reproducible.
- gradmc.experiments.ebm.claims ``_normal`` (effect +- 1.96 SE, with the AIS delta-method SE of log Z): covers
  0.943 when the AIS weights are nearly equal, 0.913 at weights ESS 19 of 32 chains (sd of log w 0.8), 0.82 at ESS 9 and
  0.59 at ESS 4 of 32: the SE of a log mean of skewed importance weights is too small when few weights
  dominate (and that ignores AIS's downward bias of log Z). It reaches 0.93 at ESS 25 of 32 (0.933), and at
  about 50 of 100 chains; below the ESS for the run's chain count
  (gradmc.experiments.ebm.claims.min_ais_weights_ess, read from the config; no interval below 32 chains) the
  interval is unbounded. The text EBM's claims use the same rule.

:func:`decide` turns an interval into PASS / FAIL / INCONCLUSIVE:

- a direction claim ("GWG's ESS is larger"): PASS when the whole interval lies on the paper's side of the
  null, FAIL when it lies wholly on the other side, INCONCLUSIVE when it straddles the null;
- an agreement claim ("our value agrees with the paper's"): the effect is ours minus the paper's, and the
  band is +- the tolerance (the paper's error bar, or a stated one): PASS when the interval lies inside
  the band, FAIL when it lies wholly outside, INCONCLUSIVE otherwise (an equivalence test, as TOST).

An INCONCLUSIVE verdict comes with an estimate of the replicates that would decide it: interval
half-widths shrink as 1 / sqrt(n), so n' = n (h / d)^2, where h is the half-width and d the distance
from the effect to the null (or to the nearer band edge).
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

__all__ = ["Interval", "Verdict", "MIN_T_REPLICATES", "MIN_BOOTSTRAP_REPLICATES", "LEVEL", "t_interval",
           "paired_t_interval", "robust_t_interval", "paired_robust_t_interval", "student_t_interval",
           "bootstrap_interval",
           "log_ratio_of_means", "difference_of_means", "decide", "TESTS"]

LEVEL = 0.95
"""Coverage of every interval."""

MIN_T_REPLICATES = 5
"""Fewest replicates for a t interval to be used as a verdict; below it the interval is unbounded."""

N_RESAMPLES = 4999
BOOTSTRAP_SEED = 20_210_101

MIN_BOOTSTRAP_REPLICATES = 4
"""Fewest replicates in the smallest sample for a bootstrap interval; below it the interval is unbounded."""


@dataclass(frozen=True)
class Interval:
    """An effect and its 95% interval.

    Attributes:
        effect: the point estimate (the statistic on the full data).
        low, high: interval bounds (may be -inf / inf when the replicates cannot bound it).
        replicates: number of independent replicates (for several samples: the smallest sample).
        unit: what a replicate is: "seeds", "runs", "chains", "trials", ...
        method: how the interval was computed, e.g. "t (5 seeds)", "bootstrap (percentile, 4999)".
    """

    effect: float
    low: float
    high: float
    replicates: int
    unit: str
    method: str

    @property
    def half_width(self) -> float:
        """(high - low) / 2; inf for an unbounded interval."""
        return (self.high - self.low) / 2.0


@dataclass(frozen=True)
class Verdict:
    """``status`` is "PASS", "FAIL" or "INCONCLUSIVE"; ``note`` says, for INCONCLUSIVE, what would decide it."""

    status: str
    note: str = ""


def _finite(values: Sequence[float] | np.ndarray, what: str) -> np.ndarray:
    a = np.asarray(values, dtype=float).ravel()
    if not np.isfinite(a).all():
        raise ValueError(f"{what}: {int((~np.isfinite(a)).sum())} non-finite of {a.size} values")
    return a


def student_t_interval(values: Sequence[float] | np.ndarray, unit: str, level: float = LEVEL) -> Interval:
    """Plain Student-t interval of the mean of independent replicates. **Not used by any claim**: it under-covers
    skewed replicates at the 5 seeds the configs use (0.911 at n = 5 for lognormal(0, 0.5) differences, module
    docstring); the claims use :func:`t_interval` (Student t union bootstrap-t). Kept for the coverage tests and
    as the part of :func:`robust_t_interval` that covers heavy symmetric tails.

    Args:
        values: (n,) one number per replicate, e.g. a log ESS ratio per seed.
        unit: what a replicate is ("seeds", "runs", ...).
        level: coverage (0.95).

    Returns:
        Interval with effect = mean, bounds mean +- t_{(1+level)/2, n-1} s / sqrt(n). With fewer than
        :data:`MIN_T_REPLICATES` replicates the bounds are -inf / inf (the verdict is INCONCLUSIVE);
        with zero spread the bounds equal the mean.

    Raises:
        ValueError: no values, or a non-finite one.
    """
    a = _finite(values, f"t interval over {unit}")
    if a.size == 0:
        raise ValueError(f"t interval over {unit}: no replicates")
    mean = float(a.mean())
    n = int(a.size)
    if n < MIN_T_REPLICATES:
        return Interval(mean, -math.inf, math.inf, n, unit,
                        f"Student t needs >= {MIN_T_REPLICATES} {unit}, has {n}")
    half = float(stats.t.ppf(0.5 + level / 2.0, n - 1) * a.std(ddof=1) / math.sqrt(n))
    return Interval(mean, mean - half, mean + half, n, unit, f"Student t over {n} {unit}")


def t_interval(values: Sequence[float] | np.ndarray, unit: str, level: float = LEVEL) -> Interval:
    """The interval of the mean of independent replicates that every claim uses: :func:`robust_t_interval`.

    The effect is the mean; the interval is the union of Student t's and the studentized bootstrap's
    (bootstrap-t), which covers >= 93% for normal, skewed and heavy-tailed replicates from 5 replicates on (module
    docstring), where Student t alone (:func:`student_t_interval`) covers 0.911 for skewed ones at n = 5. Fewer
    than :data:`MIN_T_REPLICATES` replicates give an unbounded interval (the verdict is INCONCLUSIVE); zero
    spread gives the mean as both bounds. The resampling seed is fixed, so the interval is reproducible.

    Args:
        values: (n,) one number per replicate, e.g. a log ESS ratio per seed.
        unit: what a replicate is ("seeds", "runs", ...).
        level: coverage (0.95).

    Raises:
        ValueError: no values, or a non-finite one.
    """
    return robust_t_interval(values, unit, level)


def paired_t_interval(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray, unit: str,
                      level: float = LEVEL) -> Interval:
    """:func:`t_interval` of the paired differences a_i - b_i (same seed / run i for both):
    :func:`paired_robust_t_interval`.

    Raises:
        ValueError: a and b of different lengths, or non-finite values.
    """
    return paired_robust_t_interval(a, b, unit, level)


def _bootstrap_t_bounds(values: np.ndarray, level: float, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Studentized (bootstrap-t) bounds of the mean of each row of ``values`` (m, n): (2, m) low and high.

    The quantiles of t* = (mean* - mean) / se* over resamples replace Student t's: a skewed sample gets an
    asymmetric interval. A resample with no spread (all its draws one value) has no t* and is left out of the
    quantiles: with tied replicates (3 of 5 equal) such resamples are ~8% of all and would otherwise put +-inf in the
    2.5% tails and make the interval unbounded. A row whose
    spread is at floating-point rounding (se <= 1e-12 max |x|: one number computed along different paths, e.g. a
    slope that is the same in every run) has no spread: both bounds are its mean, as for exactly equal values
    (else its resamples of one rounded value would give t* = +-inf and an unbounded interval).
    """
    m, n = values.shape
    res = _resample(values, n_resamples, rng)
    mean, se = values.mean(axis=1), values.std(axis=1, ddof=1) / math.sqrt(n)
    flat = se <= 1e-12 * np.abs(values).max(axis=1)
    se_star = res.std(axis=2, ddof=1) / math.sqrt(n)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (res.mean(axis=2) - mean[:, None]) / se_star
    # a resample with no spread (every draw the same value: common when replicates tie, e.g. a recall of k / L)
    # has no studentized value; it is left out of the quantiles rather than counted as +-inf
    t = np.where(se_star <= 1e-12 * np.abs(values).max(axis=1, keepdims=True), np.nan, t)
    with warnings.catch_warnings():  # a row with no spread at all has only NaN: its bounds are its mean (below)
        warnings.simplefilter("ignore", RuntimeWarning)
        q = np.nanquantile(t, [0.5 - level / 2.0, 0.5 + level / 2.0], axis=1, method="lower")
    with np.errstate(invalid="ignore"):
        low, high = mean - q[1] * se, mean - q[0] * se
    return np.stack([np.where(flat, mean, low), np.where(flat, mean, high)])


def robust_t_interval(values: Sequence[float] | np.ndarray, unit: str, level: float = LEVEL,
                      n_resamples: int = N_RESAMPLES) -> Interval:
    """The union of the Student-t and the studentized bootstrap (bootstrap-t) interval of the mean; the claims'
    :func:`t_interval`.

    The effect is the mean of the replicates. Student t (:func:`student_t_interval`) under-covers skewed
    replicates (the bound on the long tail is too close), bootstrap-t under-covers heavy symmetric tails; the
    union covers both at >= 93% from 5 replicates (module docstring), at the price of a wider interval (median
    1.36x Student t's for normal replicates at n = 5, 1.04x at n = 20). The resampling seed is fixed. Fewer than
    :data:`MIN_T_REPLICATES` replicates give an unbounded interval.

    Raises:
        ValueError: no values, or a non-finite one.
    """
    student = student_t_interval(values, unit, level)
    n = student.replicates
    if n < MIN_T_REPLICATES:
        return Interval(student.effect, -math.inf, math.inf, n, unit,
                        f"t and bootstrap-t (union) needs >= {MIN_T_REPLICATES} {unit}, has {n}")
    a = _finite(values, f"t interval over {unit}")
    low, high = _bootstrap_t_bounds(a[None, :], level, n_resamples, np.random.default_rng(BOOTSTRAP_SEED))[:, 0]
    return Interval(student.effect, min(student.low, float(low)), max(student.high, float(high)), n, unit,
                    f"t and bootstrap-t (union) over {n} {unit} ({n_resamples} resamples)")


def paired_robust_t_interval(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray, unit: str,
                             level: float = LEVEL, n_resamples: int = N_RESAMPLES) -> Interval:
    """:func:`robust_t_interval` of the paired differences a_i - b_i (same seed / run i for both).

    Raises:
        ValueError: a and b of different lengths, or non-finite values.
    """
    x, y = _finite(a, f"paired t over {unit}"), _finite(b, f"paired t over {unit}")
    if x.shape != y.shape:
        raise ValueError(f"paired t over {unit}: {x.size} vs {y.size} replicates; pairs need equal numbers")
    out = robust_t_interval(x - y, unit, level, n_resamples)
    return Interval(out.effect, out.low, out.high, out.replicates, unit, "paired " + out.method)


def _expanded_level(n: int, level: float) -> float:
    """The percentile level of the expanded percentile bootstrap (Hesterberg 2015) for ``n`` replicates.

    The plain percentile interval of a mean is about as wide as mean +- z s_ml / sqrt(n), with the normal
    quantile z and the ML standard deviation (ddof 0): too narrow at small n. The expanded interval takes the
    bootstrap quantiles at the level whose normal quantile is sqrt(n / (n - 1)) t_{(1+level)/2, n-1}, which makes
    it as wide as the t interval for a mean, and keeps the percentile method's transformation invariance.
    """
    z = math.sqrt(n / (n - 1.0)) * float(stats.t.ppf(0.5 + level / 2.0, n - 1))
    return float(2.0 * stats.norm.cdf(z) - 1.0)


def _resample(a: np.ndarray, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """(m, n_resamples, n) resamples with replacement of each row of ``a`` (m, n)."""
    m, n = a.shape
    rows = (n * np.arange(m, dtype=np.int64))[:, None, None]
    return np.ascontiguousarray(a).ravel().take(rng.integers(0, n, (m, n_resamples, n), dtype=np.int32) + rows)


def _bootstrap_bounds(statistic: Callable[..., float | np.ndarray], arrays: Sequence[np.ndarray], level: float,
                      n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Expanded percentile bounds of ``statistic`` for a batch of replicate sets.

    Args:
        statistic: function of the samples; called on arrays of shape (..., n_i) it must return shape (...)
            (e.g. :func:`log_ratio_of_means`, which averages over the last axis).
        arrays: one (m, n_i) array per sample: m replicate sets, each sample resampled independently.
        level, n_resamples, rng: coverage, resamples per set, the random generator.

    Returns:
        (2, m) array: low and high bound of each set (quantiles of the resampled statistic).
    """
    m = arrays[0].shape[0]
    resampled = [_resample(a, n_resamples, rng) for a in arrays]
    boot = np.asarray(statistic(*resampled), dtype=float).reshape(m, n_resamples)
    tail = (1.0 - _expanded_level(min(a.shape[1] for a in arrays), level)) / 2.0
    return np.quantile(boot, [tail, 1.0 - tail], axis=1)


def bootstrap_interval(statistic: Callable[..., float], samples: Sequence[Sequence[float] | np.ndarray], unit: str,
                       level: float = LEVEL, n_resamples: int = N_RESAMPLES) -> Interval:
    """Expanded percentile bootstrap interval of ``statistic(*samples)``, each sample resampled independently.

    Args:
        statistic: function of the samples (1-D arrays), returning a float; e.g. :func:`log_ratio_of_means`.
            One that also takes arrays of shape (resamples, n) and returns one value per row (reducing over
            the last axis, as :func:`log_ratio_of_means` and :func:`difference_of_means` do) is evaluated
            on all resamples at once; any other is called once per resample.
        samples: one or more independent samples of replicates, e.g. (GWG's per-chain ESS, Gibbs-1's).
        unit: what a replicate is ("chains", "runs", ...).
        level: coverage (0.95). n_resamples: bootstrap resamples (4999); the seed is fixed.

    Returns:
        Interval with effect = statistic on the full samples; replicates = the smallest sample size. With
        fewer than :data:`MIN_BOOTSTRAP_REPLICATES` replicates in the smallest sample the interval is
        unbounded (the verdict is INCONCLUSIVE).

    Raises:
        ValueError: an empty sample or non-finite values.
    """
    arrays = [_finite(s, f"bootstrap over {unit}") for s in samples]
    if not arrays or min(a.size for a in arrays) == 0:
        raise ValueError(f"bootstrap over {unit}: an empty sample")
    effect = float(statistic(*arrays))
    n = min(a.size for a in arrays)
    if n < MIN_BOOTSTRAP_REPLICATES:
        return Interval(effect, -math.inf, math.inf, n, unit,
                        f"bootstrap needs >= {MIN_BOOTSTRAP_REPLICATES} {unit} per sample, has {n}")
    method = f"bootstrap expanded percentile over {n} {unit} ({n_resamples} resamples)"
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    batch = [a[None, :] for a in arrays]
    if _vectorises(statistic, arrays):
        low, high = _bootstrap_bounds(statistic, batch, level, n_resamples, rng)[:, 0]
    else:
        low, high = _bootstrap_bounds(_looped(statistic), batch, level, n_resamples, rng)[:, 0]
    return Interval(effect, min(float(low), effect), max(float(high), effect), n, unit, method)


def _vectorises(statistic: Callable[..., float | np.ndarray], arrays: Sequence[np.ndarray]) -> bool:
    """Whether ``statistic`` on stacked samples (rows: replicate sets) gives one value per row, equal to the 1-D one."""
    rows = [np.stack([a, a[::-1], np.roll(a, 1)]) for a in arrays]
    try:
        with np.errstate(all="ignore"):
            out = np.asarray(statistic(*rows), dtype=float)
            one = float(statistic(*arrays))
    except Exception:  # noqa: BLE001 - any failure on stacked samples: call it once per resample instead
        return False
    return out.shape == (3,) and bool(np.allclose(out, one, rtol=1e-9, atol=1e-12, equal_nan=True))


def _looped(statistic: Callable[..., float]) -> Callable[..., np.ndarray]:
    """``statistic`` applied row by row to arrays of shape (m, resamples, n_i)."""
    def each(*resampled: np.ndarray) -> np.ndarray:
        lead = resampled[0].shape[:-1]
        flat = [r.reshape(-1, r.shape[-1]) for r in resampled]
        return np.array([statistic(*(f[i] for f in flat)) for i in range(flat[0].shape[0])]).reshape(lead)
    return each


def log_ratio_of_means(a: np.ndarray, b: np.ndarray) -> float:
    """log(mean(a) / mean(b)) (natural log); e.g. GWG's over Gibbs-1's per-chain ESS. Positive: a larger.

    Means over the last axis: 1-D samples give a float, stacked samples (..., n) one value per row.
    """
    ma, mb = np.mean(a, axis=-1), np.mean(b, axis=-1)
    if np.ndim(ma) == 0 and np.ndim(mb) == 0:
        return float(math.log(ma) - math.log(mb))  # a mean <= 0 raises ValueError, as the log of one should
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log(ma) - np.log(mb)


def difference_of_means(a: np.ndarray, b: np.ndarray) -> float:
    """mean(a) - mean(b), over the last axis (as :func:`log_ratio_of_means`)."""
    out = np.mean(a, axis=-1) - np.mean(b, axis=-1)
    return float(out) if np.ndim(out) == 0 else out


MAX_FACTOR = 1000
"""Beyond this many times the replicates an INCONCLUSIVE note says "not decidable by more replicates"."""


def _minimum(method: str) -> int | None:
    """The fewest replicates for a bounded interval of the method named by ``method``: the N of its "needs >= N"
    (what an unbounded interval of :func:`t_interval`, :func:`bootstrap_interval` and their callers says), else
    :data:`MIN_BOOTSTRAP_REPLICATES` for a bootstrap and :data:`MIN_T_REPLICATES` for a t interval; None for a
    method with no such minimum (e.g. a normal interval from a standard error)."""
    stated = re.search(r"needs >= (\d+)", method)
    if stated:
        return int(stated.group(1))
    if "bootstrap" in method:
        return MIN_BOOTSTRAP_REPLICATES
    return MIN_T_REPLICATES if re.match(r"(paired )?(Student )?t\b", method) else None


def _more_replicates(interval: Interval, distance: float, width: float | None = None) -> str:
    """The replicates that would shrink ``width`` (the interval's reach from the estimate across the decision
    edge; default its half-width) below ``distance``, the estimate's distance to that edge (1 / sqrt(n)
    scaling)."""
    n, unit = interval.replicates, interval.unit
    if math.isinf(interval.low) != math.isinf(interval.high):
        return ("one bound of the interval is unknown (one-sided: the interval_method column says why), so more "
                "replicates alone cannot decide it")
    if not math.isfinite(interval.half_width):
        minimum = _minimum(interval.method)
        if minimum is None:
            return "the interval is unbounded (the interval_method column says why)"
        if n < minimum:
            return f"needs at least {minimum} {unit} (has {n}) for an interval"
    if distance <= 0 or not math.isfinite(distance):
        return ("the estimate sits on the decision edge: more replicates would not decide it unless the effect "
                "differs")
    width = interval.half_width if width is None else width
    factor = (width / distance) ** 2
    if factor > MAX_FACTOR:
        return (f"would need over {MAX_FACTOR:,}x the {unit} (the estimate is {distance:.3g} from the decision "
                f"edge, the interval reaches {width:.3g} from it): not decidable by more replicates")
    return f"would need about {factor:.1f}x the {unit} (about {math.ceil(n * factor)} instead of {n})"


TESTS = ("superiority", "non-inferiority", "equivalence", "agreement")
"""The test a claim's words call for (:func:`decide`):

- ``superiority`` ("larger", "beats", "lower"): a one-sided direction test against the null;
- ``non-inferiority`` ("at least as", "no worse"): the effect is not worse than the null by more than a margin;
- ``equivalence`` ("comparable", "as well as", "matches"): the effect lies within +- a margin of the null
  (two one-sided tests, each at the interval's level);
- ``agreement``: equivalence of our value with a number the paper prints (the effect is ours minus the paper's).
"""


def decide(interval: Interval, direction: int, null: float = 0.0, tolerance: float | None = None,
           test: str | None = None) -> Verdict:
    """The verdict of a claim from its interval (module docstring; :data:`TESTS`).

    Args:
        interval: the effect and its 95% interval.
        direction: +1 when the paper's side is effect > null, -1 when it is effect < null; 0 for an
            equivalence or agreement claim.
        null: the no-effect value (0 for a difference or a log ratio).
        tolerance: the margin: half-width of the equivalence/agreement band, or how far on the wrong side of
            the null a non-inferiority claim may lie (> 0; unused by superiority).
        test: one of :data:`TESTS`; None: "superiority" for direction +-1, "agreement" for 0.

    Returns:
        Verdict("PASS" | "FAIL" | "INCONCLUSIVE", note):

        - superiority: PASS when the whole interval lies on the paper's side of the null, FAIL when wholly on
          the other side;
        - non-inferiority: the same against the shifted null ``null - direction * tolerance``;
        - equivalence / agreement: PASS when the interval lies inside null +- tolerance, FAIL when wholly
          outside;

        INCONCLUSIVE otherwise, with a note estimating the replicates that would decide it.

    Raises:
        ValueError: an unknown test; a direction that does not fit the test; a test with a margin and no
            finite positive tolerance; a superiority test given a tolerance (it has no margin); a NaN bound; a
            lower bound above the upper one.
    """
    test = test or ("agreement" if direction == 0 else "superiority")
    if test not in TESTS:
        raise ValueError(f"test must be one of {', '.join(TESTS)}; got {test!r}")
    if direction not in (-1, 0, 1):
        raise ValueError(f"direction must be +1, -1 or 0 (equivalence, agreement), got {direction!r}")
    if (direction == 0) != (test in ("equivalence", "agreement")):
        raise ValueError(f"{'an' if test[0] in 'aeiou' else 'a'} {test} test needs direction "
                         f"{'0' if test in ('equivalence', 'agreement') else '+1 or -1'}, got {direction!r}")
    lo, hi, e = interval.low, interval.high, interval.effect
    if any(math.isnan(v) for v in (lo, hi, e)):
        raise ValueError(f"interval with NaN: {interval}")
    if lo > hi:
        raise ValueError(f"interval with its lower bound above its upper bound: {interval}")
    if test == "superiority" and tolerance is not None:
        raise ValueError(f"a superiority test has no margin, got tolerance {tolerance!r} (use test="
                         "'non-inferiority' or 'equivalence' for a claim with a margin)")
    if test != "superiority" and (tolerance is None or not 0 < tolerance < math.inf):
        raise ValueError(f"{'an' if test[0] in 'aeiou' else 'a'} {test} claim needs a finite margin (tolerance) > 0, "
                         f"got {tolerance!r}")
    if direction == 0:
        a, b = null - tolerance, null + tolerance
        if a <= lo and hi <= b:
            return Verdict("PASS")
        if hi < a or lo > b:
            return Verdict("FAIL")
        inside = min(e - a, b - e)
        band = "agreement band" if test == "agreement" else "equivalence margin"
        if inside > 0:
            crossed = [(e - a, e - lo)] * (lo < a) + [(b - e, hi - e)] * (hi > b)   # (distance, reach) per edge
            distance, reach = max(crossed, key=lambda side: side[1] / side[0])
            more = _more_replicates(interval, distance, reach)
        elif inside == 0:
            more = "the estimate sits on the band's edge: more replicates would not decide it unless the effect differs"
        else:
            more = "the estimate lies outside the band: more replicates would most likely make it a FAIL"
        return Verdict("INCONCLUSIVE", f"interval overlaps the {band}'s edge; {more}")
    if test == "non-inferiority":
        null = null - direction * tolerance
    side_lo, side_hi = (lo - null, hi - null) if direction > 0 else (null - hi, null - lo)
    if side_lo > 0:
        return Verdict("PASS")
    if side_hi < 0:
        return Verdict("FAIL")
    side = "the paper's side" if direction * (e - null) > 0 else "the other side"
    what = "the null" if test == "superiority" else "the non-inferiority margin"
    # the bound that crosses the (shifted) null: the lower one when the estimate lies above it, else the upper one
    reach = (e - lo) if e > null else (hi - e)
    return Verdict("INCONCLUSIVE", f"interval straddles {what}, estimate on {side}; "
                   + _more_replicates(interval, abs(e - null), reach))
