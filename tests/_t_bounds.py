"""Expected bounds of the claims' t interval (gradmc.claims.stats.t_interval), computed here from its definition.

The claims' interval of a mean is the union of the Student-t interval and the studentized bootstrap (bootstrap-t)
interval. This module recomputes both without the module's code: Student t from scipy's quantile, bootstrap-t
resample by resample in a plain loop, from the resamples the module documents (one generator seeded with
BOOTSTRAP_SEED draws an index array of shape (1, resamples, n), int32), t* = (mean* - mean) / se* per resample, the
order statistics at floor(p (k - 1)) for p = 0.025 and 0.975 over the k resamples with spread (one of a
repeated value has no t* and is left out), bounds mean - t*_hi se and mean - t*_lo se
(both the mean when the spread is at floating-point rounding).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from gradmc.claims.stats import BOOTSTRAP_SEED, N_RESAMPLES


def student_t_bounds(values, level: float = 0.95) -> tuple[float, float]:
    """mean -+ t_{(1+level)/2, n-1} s / sqrt(n)."""
    x = np.asarray(values, dtype=float)
    n = x.size
    half = float(stats.t.ppf(0.5 + level / 2, n - 1)) * float(x.std(ddof=1)) / math.sqrt(n)
    return float(x.mean()) - half, float(x.mean()) + half


def bootstrap_t_bounds(values, level: float = 0.95, resamples: int = N_RESAMPLES) -> tuple[float, float]:
    """Studentized bootstrap bounds of the mean, one resample at a time."""
    x = np.asarray(values, dtype=float)
    n = x.size
    mean, se = float(x.mean()), float(x.std(ddof=1)) / math.sqrt(n)
    if se <= 1e-12 * float(np.abs(x).max()):  # spread at floating-point rounding: one number, no interval width
        return mean, mean
    index = np.random.default_rng(BOOTSTRAP_SEED).integers(0, n, (1, resamples, n), dtype=np.int32)[0]
    ts = []
    for row in index:
        r = x[row]
        r_se = float(r.std(ddof=1)) / math.sqrt(n)
        diff = float(r.mean()) - mean
        if r_se > 1e-12 * float(np.abs(x).max()):  # a resample of one repeated value has no t*: left out
            ts.append(diff / r_se)
    ts.sort()
    t_lo = ts[math.floor((0.5 - level / 2) * (len(ts) - 1))]
    t_hi = ts[math.floor((0.5 + level / 2) * (len(ts) - 1))]
    return mean - t_hi * se, mean - t_lo * se


def t_bounds(values, level: float = 0.95) -> tuple[float, float]:
    """The claims' t interval: the union of :func:`student_t_bounds` and :func:`bootstrap_t_bounds`."""
    s_lo, s_hi = student_t_bounds(values, level)
    b_lo, b_hi = bootstrap_t_bounds(values, level)
    return min(s_lo, b_lo), max(s_hi, b_hi)
