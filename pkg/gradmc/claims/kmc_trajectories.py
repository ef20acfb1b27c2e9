"""Claims of KMC Fig. 2 (EXPERIMENTS.md B1) on the tidy kmc_trajectories metrics, as effects with 95% intervals.

A replicate is a shard (the ``seed`` column = chunk index): the mean acceptance over its ``trials_per_shard``
trials, each trial with its own Gamma-Gaussian target (pkg/gradmc/experiments/kmc_trajectories.py). The
targets, starts and trajectory lengths of trial t depend on (d, t) only, so shard c at every n holds the same
trials, and its HMC and KMC rows integrate the same starts: comparisons along n, and KMC vs HMC, are paired
by shard. Across d the shards hold different targets; pairing shard c at one d with shard c at another pairs
independent replicates (the paired t stays valid). All intervals are t over shards (unbounded below 5).

- "KMC approaches HMC as n = m grows in low dimension" (the paper: acceptance "comparable to plain HMC" in low
  to moderate d; it gives no margin, so the former "KMC >= HMC - 0.1" is replaced by a direction test): at the
  smallest d, per shard (HMC - KMC at the smallest n) - (HMC - KMC at the largest n); > 0: the gap shrinks.
- "KMC acceptance degrades as d grows at fixed n = m": at the largest n, per shard, KMC acceptance at the
  smallest d - at the largest d; > 0: it falls with d.
- "KMC falls behind HMC as d grows at fixed n = m" (the degradation is KMC's, not HMC's): at the largest n,
  per shard, (HMC - KMC at the largest d) - (HMC - KMC at the smallest d); > 0: the gap grows with d.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from gradmc.claims.base import Claim
from gradmc.claims.stats import paired_t_interval

__all__ = ["claims", "mean_acceptance", "PAPER_TRIALS"]

PAPER_TRIALS = 100
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


def claims(df: pd.DataFrame, config: dict | None = None) -> list[Claim]:
    """The approach to HMC along n at the smallest d, and the degradation along d at the largest n."""
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

    out: list[Claim] = []
    if n_max > n_min:
        a, b = _paired(gap(d_min, n_min), gap(d_min, n_max))
        hmc = _shards(df, "acceptance_hmc", d_min, n_max).mean()
        out.append(Claim(
            _EXP, _FIG, f"KMC acceptance approaches HMC's as n = m grows in low dimension (d = {d_min})",
            f"mean over shards of (HMC - KMC at n = {n_min}) - (HMC - KMC at n = {n_max}), d = {d_min}; "
            "> 0: the gap shrinks", paired_t_interval(a, b, "shards"), +1,
            f"d = {d_min}: KMC " + ", ".join(f"n = {n} {kmc[(d_min, n)]:.3f}" for n in sizes
                                            if (d_min, n) in kmc.index) + f"; HMC {hmc:.3f}", note))
    if d_max > d_min:
        a, b = _paired(_shards(df, "acceptance_kmc", d_min, n_max), _shards(df, "acceptance_kmc", d_max, n_max))
        out.append(Claim(
            _EXP, _FIG, "KMC acceptance degrades as d grows at fixed n = m",
            f"mean over shards of KMC acceptance at d = {d_min} - at d = {d_max}, n = m = {n_max}; > 0: falls with d",
            paired_t_interval(a, b, "shards"), +1,
            f"n = m = {n_max}: KMC " + ", ".join(f"d = {d} {kmc[(d, n_max)]:.3f}" for d in dims
                                              if (d, n_max) in kmc.index), note))
        a, b = _paired(gap(d_max, n_max), gap(d_min, n_max))
        hmc = mean_acceptance(df, "acceptance_hmc")
        out.append(Claim(
            _EXP, _FIG, "KMC falls behind HMC as d grows at fixed n = m",
            f"mean over shards of (HMC - KMC at d = {d_max}) - (HMC - KMC at d = {d_min}), n = m = {n_max}; "
            "> 0: the gap grows with d", paired_t_interval(a, b, "shards"), +1,
            f"n = m = {n_max}: gap HMC - KMC d = {d_min} {hmc[(d_min, n_max)] - kmc[(d_min, n_max)]:.3f}, "
            f"d = {d_max} {hmc[(d_max, n_max)] - kmc[(d_max, n_max)]:.3f}", note))
    return out
