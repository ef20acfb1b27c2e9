"""Claims of Kernel HMC Fig. 3 (EXPERIMENTS.md B2) on the tidy kmc_banana metrics, as effects with 95% intervals.

A replicate is a run (the ``seed`` column): one chain of 2,000 + 200 iterations per (sampler, n, run) on the
one fixed 8-D banana; runs are independent (each (sampler, n, run) has its own seed). The paper has 30 runs
and n = m up to 2,000; it prints no numbers for Fig. 3 (curves only), so there are no agreement claims.
Every effect is on log min ESS (min over dimensions of the ESS of a run), so ratios are scale free:

- "KMC beats RW" / "KMC beats KAMH" (largest n): effect = mean over runs of
  log(min ESS KMC / min ESS other), paired t over runs (run i of KMC with run i of the other sampler;
  the pairs are independent, so the paired t is valid although the runs share no random numbers);
  > 0: KMC larger.
- "KMC approaches HMC as n grows", two rows that must both hold:
  (1) the trend over ALL n: per run, the least-squares slope of log min ESS of KMC against log n over the
  n of that run; t over runs; > 0: KMC's ESS rises with n (a dip at an intermediate n lowers the slope);
  (2) the gap log(HMC / KMC) shrinks from the smallest to the largest n: per run i,
  log(HMC_i / KMC_i(n_min)) - log(HMC_i / KMC_i(n_max)); paired t over runs; > 0: the gap shrinks.
  The measured text lists the geometric mean of KMC's min ESS per n beside HMC's, so a non-monotone curve
  is visible even when the endpoints agree with the trend.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from gradmc.claims.base import Claim
from gradmc.claims.stats import paired_t_interval, t_interval

__all__ = ["claims", "per_run_slopes", "PAPER_RUNS", "PAPER_MAX_N"]

PAPER_RUNS = 30
PAPER_MAX_N = 2000
PAPER_STEPS = 2200
_FIG = "KMC Fig. 3"
_EXP = "kmc_banana"


def _log_ess(df: pd.DataFrame, sampler: str) -> pd.DataFrame:
    """log min ESS of ``sampler``, a frame indexed by run (seed) with one column per n."""
    m = df[(df["metric"] == "min_ess") & (df["sampler"] == sampler)]
    return np.log(m.pivot_table(index="seed", columns="n", values="value", aggfunc="mean"))


def per_run_slopes(log_ess: pd.DataFrame) -> np.ndarray:
    """Least-squares slope of log min ESS against log n, one per run (row) with values at >= 2 n."""
    slopes = []
    for _, row in log_ess.iterrows():
        row = row.dropna()
        if len(row) >= 2:
            slopes.append(float(np.polyfit(np.log(row.index.to_numpy(dtype=float)), row.to_numpy(), 1)[0]))
    return np.asarray(slopes)


def _pair(a: pd.Series, b: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Values of the runs present in both (a, b)."""
    both = a.dropna().index.intersection(b.dropna().index)
    return a[both].to_numpy(), b[both].to_numpy()


def _note(runs: int, n_max: int, steps: int) -> str:
    text = f"a replicate is a run; {steps} iterations per run in all (paper {PAPER_STEPS} = 2,000 + 200)"
    if runs >= PAPER_RUNS and n_max >= PAPER_MAX_N:
        return text
    return text + f"; {runs} runs and n up to {n_max} (paper {PAPER_RUNS} runs, n up to {PAPER_MAX_N})"


def _gm(x: np.ndarray | pd.Series) -> float:
    """Geometric mean of the ESS whose logs are x."""
    return float(np.exp(np.nanmean(x)))


def claims(df: pd.DataFrame, config: dict | None = None) -> list[Claim]:
    """KMC vs RW and KAMH at the largest n; KMC's trend over n and its gap to HMC (module docstring)."""
    ess = df[df["metric"] == "min_ess"]
    if not (ess["sampler"] == "KMC").any():
        return []
    kmc = _log_ess(df, "KMC")
    sizes = sorted(int(n) for n in kmc.columns)
    n_lo, n_hi = sizes[0], sizes[-1]
    note = _note(int(kmc[n_hi].notna().sum()), n_hi, int(ess["step"].max()))
    present = set(ess["sampler"])
    out: list[Claim] = []
    for other, at in (("RW", None), ("KAMH", n_hi)):
        if other not in present:
            continue
        theirs = _log_ess(df, other)
        col = at if at is not None else theirs.columns[0]
        if col not in theirs.columns:
            continue
        a, b = _pair(kmc[n_hi], theirs[col])
        if not len(a):
            continue
        where = "at the same n" if at is not None else f"(KMC at the largest n = {n_hi})"
        out.append(Claim(
            _EXP, _FIG, f"KMC's minimum ESS beats {other} {where}",
            f"mean over runs of log(min ESS KMC (n = {n_hi}) / min ESS {other}); > 0: KMC larger",
            paired_t_interval(a, b, "runs"), +1,
            f"geometric mean min ESS: KMC (n = {n_hi}) {_gm(a):.1f} vs {other}"
            + (f" (n = {at})" if at is not None else "") + f" {_gm(b):.1f}", note))
    if len(sizes) < 2:
        return out
    trend = ", ".join(f"n = {n}: {_gm(kmc[n]):.1f}" for n in sizes)
    hmc_text = ""
    if "HMC" in present:
        hmc_text = f"; HMC {_gm(_log_ess(df, 'HMC').iloc[:, 0]):.1f}"
    slopes = per_run_slopes(kmc)
    out.append(Claim(
        _EXP, _FIG, "KMC's minimum ESS rises with n = m (trend over all n; KMC approaches HMC as n grows)",
        "mean over runs of the least-squares slope of log min ESS KMC against log n (all n); > 0: rises with n",
        t_interval(slopes, "runs"), +1,
        f"geometric mean min ESS of KMC: {trend}{hmc_text}", note))
    if "HMC" in present:
        hmc = _log_ess(df, "HMC").iloc[:, 0]
        both = kmc[[n_lo, n_hi]].join(hmc.rename("hmc")).dropna()
        if len(both):
            gap_lo = both["hmc"] - both[n_lo]
            gap_hi = both["hmc"] - both[n_hi]
            out.append(Claim(
                _EXP, _FIG, f"KMC's gap to HMC (minimum ESS) shrinks from n = {n_lo} to n = {n_hi}",
                f"mean over runs of log(HMC / KMC at n = {n_lo}) - log(HMC / KMC at n = {n_hi}); > 0: gap shrinks",
                paired_t_interval(gap_lo.to_numpy(), gap_hi.to_numpy(), "runs"), +1,
                f"gap log(HMC / KMC), mean over runs: n = {n_lo} {gap_lo.mean():.2f}, n = {n_hi} "
                f"{gap_hi.mean():.2f} (HMC {_gm(both['hmc']):.1f}; KMC {trend})", note))
    return out
