"""Claims of KMC Fig. 2 (EXPERIMENTS.md B1) on the tidy kmc_trajectories metrics, as effects with 95% intervals.

A replicate is a shard (the ``seed`` column = chunk index): the mean acceptance over its ``trials_per_shard``
trials, each trial with its own Gamma-Gaussian target (pkg/gradmc/experiments/kmc_trajectories.py). The
targets, starts and trajectory lengths of trial t depend on (d, t) only, so shard c at every n holds the same
trials, and its HMC and KMC rows integrate the same starts: comparisons along n, and KMC vs HMC, are paired
by shard. Across d the shards hold different targets; pairing shard c at one d with shard c at another pairs
independent replicates (the paired t stays valid). All intervals are t over shards (unbounded below 5); every
claim needs >= 5 shards per (d, n) (``kmc_trajectories.num_trials`` / ``trials_per_shard``).

Claims (quote key in :data:`QUOTES`, KMC Sec. 5 on Fig. 2; test; margin; needs beyond the shards):

- "KMC's acceptance is comparable to plain HMC's in low to moderate d" (``comparable``; equivalence), one claim
  per d <= :data:`MODERATE_D` (the paper's d = 8 slice) at the largest n: mean over shards of KMC - HMC;
  margin :data:`MARGIN` = 0.05. Why: the trial-to-trial spread of HMC's own acceptance across random targets at
  d = 8 (sd 0.04: per-shard sd 0.020 over the quick run's 5 shards of 4 trials, times sqrt(4)), rounded up: a
  difference within the variation of HMC itself over the paper's random targets is "comparable". Needs the
  paper's grid: n = m up to >= 5,000 (``num_samples``; its slice of Fig. 2 at n = 5,000; the sentence names no
  n, and at small n the estimator has not converged by design) and 100 trials (``num_trials``).
- "KMC acceptance degrades as d grows at fixed n = m" (``comparable``, which limits comparability to low to
  moderate d; superiority): at the largest n, per shard, KMC acceptance at the smallest d - at the largest d;
  > 0: it falls with d.
- "KMC falls behind HMC as d grows at fixed n = m" (``comparable``; superiority): at the largest n, per shard,
  (HMC - KMC at the largest d) - (HMC - KMC at the smallest d); > 0: the gap grows with d.
- "KMC approaches HMC as n = m grows in low dimension" (origin "other": the stored excerpt has no sentence on
  the trend along n of Fig. 2; a sanity check of the estimator; superiority): at the smallest d, per shard
  (HMC - KMC at the smallest n) - (HMC - KMC at the largest n); > 0: the gap shrinks.
- "On targets with more 'regular' smoothness the estimator performs well up to d ~ 100" (``regular``): NOT RUN,
  the experiment runs only the Gamma-spectrum Gaussian.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from gradmc.claims.base import Claim, Need, at_least, config_value
from gradmc.claims.stats import MIN_T_REPLICATES, Interval, paired_t_interval

__all__ = ["claims", "mean_acceptance", "QUOTES", "PAPER_TRIALS", "PAPER_SLICE_N", "MODERATE_D", "MARGIN"]

QUOTES = {
    "comparable": "In low to moderate dimensions, gradients of the finite estimator lead to acceptance rates "
                  "comparable to plain HMC.",
    "regular": "On targets with more \u2018regular\u2019 smoothness, the estimator performs well in up to "
               "$d\\approx 100$, with less variance.",
}
"""The sentences of the KMC paper (Sec. 5 on Fig. 2) the claims test, verbatim."""

PAPER_TRIALS = 100
PAPER_SLICE_N = 5000
MODERATE_D = 8
MARGIN = 0.05
_MARGIN_WHY = ("the trial-to-trial spread of HMC's own acceptance over random targets at d = 8 (sd 0.04: per-shard "
               "sd 0.020 over the quick run's 5 shards of 4 trials, x sqrt(4)), rounded up")
_FIG = "KMC Fig. 2"
_EXP = "kmc_trajectories"


def mean_acceptance(df: pd.DataFrame, metric: str) -> pd.Series:
    """Trial-weighted mean of ``metric`` over shards, indexed by (d, n)."""
    m = df[df["metric"] == metric]
    weighted = (m["value"] * m["trials"]).groupby([m["d"], m["n"]]).sum()
    return weighted / m["trials"].groupby([m["d"], m["n"]]).sum()


def _shards(df: pd.DataFrame, metric: str, d: int, n: int) -> pd.Series:
    """Per-shard acceptance (index: shard) at (d, n)."""
    m = df[(df["metric"] == metric) & (df["d"] == d) & (df["n"] == n)]
    return m.groupby("seed")["value"].mean()


def _paired(a: pd.Series, b: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    both = pd.concat([a.rename("a"), b.rename("b")], axis=1).dropna()
    return both["a"].to_numpy(), both["b"].to_numpy()


def _note(df: pd.DataFrame) -> str:
    m = df[df["metric"] == "acceptance_kmc"]
    trials = int(m.groupby(["d", "n"])["trials"].sum().min())
    text = f"a replicate is a shard of {int(m['trials'].min())}-{int(m['trials'].max())} trials"
    return text + (f"; only {trials} trials per (d, n) (paper {PAPER_TRIALS}) and a reduced grid"
                   if trials < PAPER_TRIALS else "")


def _shard_need(config: dict | None) -> Need:
    """>= 5 shards per (d, n): ceil(num_trials / trials_per_shard), read from the config."""
    trials = config_value(config, "kmc_trajectories.num_trials")
    per = config_value(config, "kmc_trajectories.trials_per_shard")
    have = None if trials is None else float(math.ceil(int(trials) / int(per)))
    return Need("shards per (d, n)", float(MIN_T_REPLICATES), have, "scale",
                "kmc_trajectories.num_trials / trials_per_shard", "the fewest for a t interval over shards")


def claims(df: pd.DataFrame, config: dict | None = None) -> list[Claim]:
    """KMC comparable to HMC in low to moderate d, its degradation along d at the largest n, the approach to HMC
    along n at the smallest d, and the not-run claim on regular targets (module docstring)."""
    if not {"acceptance_kmc", "acceptance_hmc"} <= set(df["metric"]):
        return []
    kmc = mean_acceptance(df, "acceptance_kmc")
    dims = sorted(int(d) for d in kmc.index.get_level_values("d").unique())
    d_min, d_max = dims[0], dims[-1]
    sizes = sorted(int(n) for n in kmc.index.get_level_values("n").unique())
    n_min, n_max = sizes[0], sizes[-1]
    note = _note(df)

    def gap(d: int, n: int) -> pd.Series:
        return _shards(df, "acceptance_hmc", d, n) - _shards(df, "acceptance_kmc", d, n)

    shards = _shard_need(config)
    grid = (shards,
            at_least(config, "kmc_trajectories.num_samples", PAPER_SLICE_N, "largest n = m", reduce=max,
                     why="the paper's slice of Fig. 2 at n = 5,000 (its grid: up to 16,000); the sentence names no n"),
            at_least(config, "kmc_trajectories.num_trials", PAPER_TRIALS, "trials per (d, n)",
                     why="the paper's 100 trials"))
    out: list[Claim] = []
    for d in [d for d in dims if d <= MODERATE_D]:
        a, b = _paired(_shards(df, "acceptance_kmc", d, n_max), _shards(df, "acceptance_hmc", d, n_max))
        if not len(a):
            continue
        out.append(Claim(
            _EXP, _FIG, f"KMC's acceptance is comparable to plain HMC's at d = {d} (n = m = {n_max})",
            f"mean over shards of KMC - HMC acceptance, d = {d}, n = m = {n_max}; equivalence band +-{MARGIN:g}",
            paired_t_interval(a, b, "shards"), 0, f"d = {d}, n = m = {n_max}: KMC {a.mean():.3f}, HMC {b.mean():.3f}",
            note, 0.0, MARGIN, quote=QUOTES["comparable"], test="equivalence", margin_why=_MARGIN_WHY, needs=grid))
    if n_max > n_min:
        a, b = _paired(gap(d_min, n_min), gap(d_min, n_max))
        hmc = _shards(df, "acceptance_hmc", d_min, n_max).mean()
        out.append(Claim(
            _EXP, "sanity check on KMC Fig. 2 data",
            f"KMC acceptance approaches HMC's as n = m grows in low dimension (d = {d_min})",
            f"mean over shards of (HMC - KMC at n = {n_min}) - (HMC - KMC at n = {n_max}), d = {d_min}; "
            "> 0: the gap shrinks", paired_t_interval(a, b, "shards"), +1,
            f"d = {d_min}: KMC " + ", ".join(f"n = {n} {kmc[(d_min, n)]:.3f}" for n in sizes
                                            if (d_min, n) in kmc.index) + f"; HMC {hmc:.3f}",
            "the stored excerpt has no sentence on the trend along n of Fig. 2: a sanity check of the estimator; "
            + note, origin="other", test="superiority", needs=(shards,)))
    if d_max > d_min:
        a, b = _paired(_shards(df, "acceptance_kmc", d_min, n_max), _shards(df, "acceptance_kmc", d_max, n_max))
        out.append(Claim(
            _EXP, _FIG, "KMC acceptance degrades as d grows at fixed n = m",
            f"mean over shards of KMC acceptance at d = {d_min} - at d = {d_max}, n = m = {n_max}; > 0: falls with d",
            paired_t_interval(a, b, "shards"), +1,
            f"n = m = {n_max}: KMC " + ", ".join(f"d = {d} {kmc[(d, n_max)]:.3f}" for d in dims
                                              if (d, n_max) in kmc.index),
            "the quoted sentence limits comparability to low to moderate d; " + note,
            quote=QUOTES["comparable"], test="superiority", needs=(shards,)))
        a, b = _paired(gap(d_max, n_max), gap(d_min, n_max))
        hmc = mean_acceptance(df, "acceptance_hmc")
        out.append(Claim(
            _EXP, _FIG, "KMC falls behind HMC as d grows at fixed n = m",
            f"mean over shards of (HMC - KMC at d = {d_max}) - (HMC - KMC at d = {d_min}), n = m = {n_max}; "
            "> 0: the gap grows with d", paired_t_interval(a, b, "shards"), +1,
            f"n = m = {n_max}: gap HMC - KMC d = {d_min} {hmc[(d_min, n_max)] - kmc[(d_min, n_max)]:.3f}, "
            f"d = {d_max} {hmc[(d_max, n_max)] - kmc[(d_max, n_max)]:.3f}",
            "the quoted sentence limits comparability to low to moderate d; " + note,
            quote=QUOTES["comparable"], test="superiority", needs=(shards,)))
    out.append(Claim(
        _EXP, _FIG, "On a target with 'regular' smoothness, KMC's acceptance stays high up to d ~ 100",
        "acceptance of KMC on a regular-smoothness target (e.g. an isotropic Gaussian) up to d = 100",
        Interval(math.nan, math.nan, math.nan, 0, "shards", "not run"), +1, "", note,
        quote=QUOTES["regular"], test="superiority",
        not_run=("the experiment runs only the Gamma(1,1)-spectrum Gaussian ('non-singular smoothness'); a target "
                 "with regular smoothness up to d ~ 100 would have to be added to "
                 "gradmc.experiments.kmc_trajectories")))
    return out
