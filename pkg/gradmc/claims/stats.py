"""Effects with 95% intervals over independent replicates, and the verdict rule of every claim.

A claim's effect is one number with a sign convention (a difference or a log ratio) and an interval over
replicates: seeds, runs, or chains where the chains are independent draws from one target. Two ways:

- :func:`t_interval` / :func:`paired_t_interval`: Student-t interval of a mean over at least
  :data:`MIN_T_REPLICATES` replicates (scipy.stats.t). Fewer replicates give an honest, unbounded interval
  (the verdict is then INCONCLUSIVE), never a narrow one.
- :func:`bootstrap_interval`: percentile bootstrap (scipy.stats.bootstrap) of any statistic of one or more
  independent samples, e.g. the log ratio of two samplers' mean ESS over their chains. The resampling
  seed is fixed, so the interval is reproducible.

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
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

__all__ = ["Interval", "Verdict", "MIN_T_REPLICATES", "LEVEL", "t_interval", "paired_t_interval",
           "bootstrap_interval", "log_ratio_of_means", "difference_of_means", "decide", "TESTS"]

LEVEL = 0.95
"""Coverage of every interval."""

MIN_T_REPLICATES = 5
"""Fewest replicates for a t interval to be used as a verdict; below it the interval is unbounded."""

N_RESAMPLES = 4999
BOOTSTRAP_SEED = 20_210_101


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


def t_interval(values: Sequence[float] | np.ndarray, unit: str, level: float = LEVEL) -> Interval:
    """Student-t interval of the mean of independent replicates.

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
        return Interval(mean, -math.inf, math.inf, n, unit, f"t needs >= {MIN_T_REPLICATES} {unit}, has {n}")
    half = float(stats.t.ppf(0.5 + level / 2.0, n - 1) * a.std(ddof=1) / math.sqrt(n))
    return Interval(mean, mean - half, mean + half, n, unit, f"t over {n} {unit}")


def paired_t_interval(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray, unit: str,
                      level: float = LEVEL) -> Interval:
    """t interval of the mean paired difference a_i - b_i (same seed / run i for both).

    Raises:
        ValueError: a and b of different lengths, or non-finite values.
    """
    x, y = _finite(a, f"paired t over {unit}"), _finite(b, f"paired t over {unit}")
    if x.shape != y.shape:
        raise ValueError(f"paired t over {unit}: {x.size} vs {y.size} replicates; pairs need equal numbers")
    out = t_interval(x - y, unit, level)
    return Interval(out.effect, out.low, out.high, out.replicates, unit, "paired " + out.method)


def bootstrap_interval(statistic: Callable[..., float], samples: Sequence[Sequence[float] | np.ndarray], unit: str,
                       level: float = LEVEL, n_resamples: int = N_RESAMPLES) -> Interval:
    """Percentile bootstrap interval of ``statistic(*samples)``, each sample resampled independently.

    Args:
        statistic: function of the samples (1-D arrays), returning a float; e.g. :func:`log_ratio_of_means`.
        samples: one or more independent samples of replicates, e.g. (GWG's per-chain ESS, Gibbs-1's).
        unit: what a replicate is ("chains", "runs", ...).
        level: coverage (0.95). n_resamples: bootstrap resamples (4999); the seed is fixed.

    Returns:
        Interval with effect = statistic on the full samples; replicates = the smallest sample size. A
        sample of one replicate gives an unbounded interval.

    Raises:
        ValueError: an empty sample or non-finite values.
    """
    arrays = [_finite(s, f"bootstrap over {unit}") for s in samples]
    if not arrays or min(a.size for a in arrays) == 0:
        raise ValueError(f"bootstrap over {unit}: an empty sample")
    effect = float(statistic(*arrays))
    n = min(a.size for a in arrays)
    method = f"bootstrap percentile over {n} {unit} ({n_resamples} resamples)"
    if n < 2:
        return Interval(effect, -math.inf, math.inf, n, unit, method)
    res = stats.bootstrap(tuple(arrays), lambda *s: statistic(*s), n_resamples=n_resamples, confidence_level=level,
                          method="percentile", vectorized=False, paired=False,
                          random_state=np.random.default_rng(BOOTSTRAP_SEED))
    low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
    return Interval(effect, min(low, effect), max(high, effect), n, unit, method)


def log_ratio_of_means(a: np.ndarray, b: np.ndarray) -> float:
    """log(mean(a) / mean(b)) (natural log); e.g. GWG's over Gibbs-1's per-chain ESS. Positive: a larger."""
    return float(math.log(np.mean(a)) - math.log(np.mean(b)))


def difference_of_means(a: np.ndarray, b: np.ndarray) -> float:
    """mean(a) - mean(b)."""
    return float(np.mean(a) - np.mean(b))


MAX_FACTOR = 1000
"""Beyond this many times the replicates an INCONCLUSIVE note says "not decidable by more replicates"."""


def _more_replicates(interval: Interval, distance: float) -> str:
    """The replicates that would shrink the half-width below ``distance`` (1 / sqrt(n) scaling)."""
    n, unit = interval.replicates, interval.unit
    if math.isinf(interval.low) != math.isinf(interval.high):
        return ("one bound of the interval is unknown (one-sided: the interval_method column says why), so more "
                "replicates alone cannot decide it")
    if interval.replicates < MIN_T_REPLICATES and not math.isfinite(interval.half_width):
        return f"needs at least {MIN_T_REPLICATES} {unit} (has {n}) for an interval"
    if distance <= 0 or not math.isfinite(distance):
        return "the effect sits on the null: more replicates would not decide it unless the effect differs"
    factor = (interval.half_width / distance) ** 2
    if factor > MAX_FACTOR:
        return (f"would need over {MAX_FACTOR:,}x the {unit} (the estimate is {distance:.3g} from the decision "
                f"edge, the half-width {interval.half_width:.3g}): not decidable by more replicates")
    return f"would need about {max(factor, 1.0):.1f}x the {unit} (about {math.ceil(n * factor)} instead of {n})"


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
            positive tolerance; a NaN bound.
    """
    test = test or ("agreement" if direction == 0 else "superiority")
    if test not in TESTS:
        raise ValueError(f"test must be one of {', '.join(TESTS)}; got {test!r}")
    if direction not in (-1, 0, 1):
        raise ValueError(f"direction must be +1, -1 or 0 (equivalence, agreement), got {direction!r}")
    if (direction == 0) != (test in ("equivalence", "agreement")):
        raise ValueError(f"a {test} test needs direction {'0' if test in ('equivalence', 'agreement') else '+1 or -1'},"
                         f" got {direction!r}")
    lo, hi, e = interval.low, interval.high, interval.effect
    if any(math.isnan(v) for v in (lo, hi, e)):
        raise ValueError(f"interval with NaN: {interval}")
    if test != "superiority" and (tolerance is None or not tolerance > 0):
        raise ValueError(f"a {test} claim needs a margin (tolerance) > 0, got {tolerance!r}")
    if direction == 0:
        a, b = null - tolerance, null + tolerance
        if a <= lo and hi <= b:
            return Verdict("PASS")
        if hi < a or lo > b:
            return Verdict("FAIL")
        inside = min(e - a, b - e)
        band = "agreement band" if test == "agreement" else "equivalence margin"
        return Verdict("INCONCLUSIVE", f"interval overlaps the {band}'s edge; "
                       + (_more_replicates(interval, inside) if inside > 0 else
                          "the estimate lies outside the band: more replicates would most likely make it a FAIL"))
    if test == "non-inferiority":
        null = null - direction * tolerance
    side_lo, side_hi = (lo - null, hi - null) if direction > 0 else (null - hi, null - lo)
    if side_lo > 0:
        return Verdict("PASS")
    if side_hi < 0:
        return Verdict("FAIL")
    side = "the paper's side" if direction * (e - null) > 0 else "the other side"
    what = "the null" if test == "superiority" else "the non-inferiority margin"
    return Verdict("INCONCLUSIVE", f"interval straddles {what}, estimate on {side}; "
                   + _more_replicates(interval, abs(e - null)))
