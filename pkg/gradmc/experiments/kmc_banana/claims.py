"""Claims of Kernel HMC Fig. 3 (EXPERIMENTS.md B2) on the tidy kmc_banana metrics, as effects with 95% intervals.

A replicate is a run (the ``seed`` column): one chain of 2,000 + 200 iterations per (sampler, n, run) on the
one fixed 8-D banana; runs are independent (each (sampler, n, run) has its own seed). The paper has 30 runs
and n = m up to 2,000; it prints no numbers for Fig. 3 (curves of acceptance rate, norm of the empirical mean
||E_hat[x]|| and minimum ESS against n = m, with 80% intervals over runs), so there are no agreement claims.
ESS and ||E_hat[x]|| effects are log ratios (scale free); acceptance effects are differences. Every claim
needs the paper's 30 runs (``kmc_banana.runs``).

Claims (quote key in :data:`QUOTES`, KMC Sec. 5 on Fig. 3; test; margin; needs beyond the runs):

- "KMC beats RW / KAMH" on min ESS (``outperforms``; superiority; largest n): mean over runs of
  log(min ESS KMC / min ESS other), paired t over runs (run i of KMC with run i of the other sampler; the
  pairs are independent, so the paired t is valid although the runs share no random numbers); > 0.
- "KMC beats RW / KAMH" on ||E_hat[x]|| (``outperforms``; superiority; largest n; the target's mean is 0, so
  smaller is better): mean over runs of log(||E_hat[x]|| KMC / other); < 0.
- "KMC approaches HMC as n grows" (``approaches``; superiority), rows that must all hold:
  (1) the min ESS trend over ALL n: per run, the least-squares slope of log min ESS of KMC against log n; t
  over runs; > 0 (a dip at an intermediate n lowers the slope);
  (2) the min ESS gap log(HMC / KMC) shrinks from the smallest to the largest n: per run i,
  log(HMC_i / KMC_i(n_min)) - log(HMC_i / KMC_i(n_max)); paired t over runs; > 0;
  (3) the acceptance trend: per run, the least-squares slope of KMC's acceptance rate against log n; > 0.
  The measured text lists the geometric mean of KMC's min ESS per n beside HMC's.
- "KMC eventually achieves performance close to HMC" (``outperforms``; equivalence at the largest n), one row
  per panel: acceptance KMC - HMC (margin :data:`CLOSE_MARGINS` 0.03), log ||E_hat[x]|| KMC / HMC (0.82), log
  min ESS KMC / HMC (0.54). Why: "close" = inside the band that HMC's own runs span in the paper's plot, i.e.
  the half-width of its 80% interval over runs, 1.28 sd, with the sd of HMC over the quick run's 30 runs
  (acceptance 0.022, log norm 0.64, log min ESS 0.42). Needs n = m up to >= 2,000 (``kmc_banana.n``; the
  paper's largest n, where "eventually" is read).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from gradmc.claims.base import Claim, Need, at_least
from gradmc.claims.stats import paired_t_interval, t_interval

__all__ = ["claims", "per_run_slopes", "QUOTES", "PAPER_RUNS", "PAPER_MAX_N", "CLOSE_MARGINS"]

QUOTES = {
    "outperforms": "KMC clearly outperforms RW and KAMH, and eventually achieves performance close to HMC as "
                   "$n=m$ grows.",
    "approaches": "We next show that KMC\u2019s performance approaches that of HMC as it sees more data.",
}
"""The sentences of the KMC paper (Sec. 5 on Fig. 3) the claims test, verbatim."""

CLOSE_MARGINS = {"acceptance_rate": 0.03, "mean_norm": 0.82, "min_ess": 0.54}
"""Equivalence margins of "close to HMC" per panel: 1.28 x HMC's sd over runs (acceptance: a difference; the
others: a log ratio), measured over the quick run's 30 runs (0.022, 0.64, 0.42)."""
_CLOSE_SD = {"acceptance_rate": 0.022, "mean_norm": 0.64, "min_ess": 0.42}
_PANEL = {"acceptance_rate": "acceptance rate", "mean_norm": "||E_hat[x]||", "min_ess": "minimum ESS"}

PAPER_RUNS = 30
PAPER_MAX_N = 2000
PAPER_STEPS = 2200
_FIG = "KMC Fig. 3"
_EXP = "kmc_banana"


def _log_ess(df: pd.DataFrame, sampler: str) -> pd.DataFrame:
    """log min ESS of ``sampler``, a frame indexed by run (seed) with one column per n."""
    m = df[(df["metric"] == "min_ess") & (df["sampler"] == sampler)]
    return np.log(m.pivot_table(index="seed", columns="n", values="value", aggfunc="mean"))


def per_run_slopes(values: pd.DataFrame) -> np.ndarray:
    """Least-squares slope of the values (e.g. log min ESS, acceptance rate) against log n, one per run (row) with
    values at >= 2 n."""
    slopes = []
    for _, row in values.iterrows():
        row = row.dropna()
        if len(row) >= 2:
            slopes.append(float(np.polyfit(np.log(row.index.to_numpy(dtype=float)), row.to_numpy(), 1)[0]))
    return np.asarray(slopes)


def _values(df: pd.DataFrame, metric: str, sampler: str) -> pd.DataFrame:
    """``metric`` of ``sampler`` (log for min ESS and the norm), a frame indexed by run with one column per n."""
    m = df[(df["metric"] == metric) & (df["sampler"] == sampler)]
    table = m.pivot_table(index="seed", columns="n", values="value", aggfunc="mean")
    return table if metric == "acceptance_rate" else np.log(table)


def _runs_need(config: dict | None) -> Need:
    return at_least(config, "kmc_banana.runs", PAPER_RUNS, "runs", reduce=len, why="the paper's 30 runs")


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


def _against_baselines(kmc_hi: pd.Series, present: set, n_hi: int, table):
    """KMC at the largest n paired by run with RW (its one column: RW has no n) and with KAMH at the same n.

    Yields (other, at, where, kmc values, other's values) per baseline present with paired runs; ``at`` is the
    baseline's n (None for RW), ``where`` its wording; ``table(sampler)`` is that sampler's frame (runs x n)."""
    for other, at in (("RW", None), ("KAMH", n_hi)):
        if other not in present:
            continue
        theirs = table(other)
        col = at if at is not None else theirs.columns[0]
        if col not in theirs.columns:
            continue
        a, b = _pair(kmc_hi, theirs[col])
        if len(a):
            yield other, at, ("at the same n" if at is not None else f"(KMC at the largest n = {n_hi})"), a, b


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
    runs = _runs_need(config)
    out: list[Claim] = []
    for other, at, where, a, b in _against_baselines(kmc[n_hi], present, n_hi, lambda s: _log_ess(df, s)):
        out.append(Claim(
            _EXP, _FIG, f"KMC's minimum ESS beats {other} {where}",
            f"mean over runs of log(min ESS KMC (n = {n_hi}) / min ESS {other}); > 0: KMC larger",
            paired_t_interval(a, b, "runs"), +1,
            f"geometric mean min ESS: KMC (n = {n_hi}) {_gm(a):.1f} vs {other}"
            + (f" (n = {at})" if at is not None else "") + f" {_gm(b):.1f}", note,
            quote=QUOTES["outperforms"], test="superiority", needs=(runs,)))
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
        f"geometric mean min ESS of KMC: {trend}{hmc_text}", note,
        quote=QUOTES["approaches"], test="superiority", needs=(runs,)))
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
                f"{gap_hi.mean():.2f} (HMC {_gm(both['hmc']):.1f}; KMC {trend})", note,
                quote=QUOTES["approaches"], test="superiority", needs=(runs,)))
    return out + _panel_claims(df, present, n_hi, note, config)


def _panel_claims(df: pd.DataFrame, present: set, n_hi: int, note: str, config: dict | None) -> list[Claim]:
    """||E_hat[x]|| of KMC vs RW and KAMH, KMC's acceptance trend, and KMC close to HMC at the largest n."""
    runs = _runs_need(config)
    metrics = set(df["metric"])
    out: list[Claim] = []
    if "mean_norm" in metrics:
        kmc = _values(df, "mean_norm", "KMC")
        pairs = (_against_baselines(kmc[n_hi], present, n_hi, lambda s: _values(df, "mean_norm", s))
                 if n_hi in kmc.columns else ())
        for other, _, where, a, b in pairs:
            out.append(Claim(
                _EXP, _FIG, f"KMC's norm of the empirical mean is below {other}'s {where}",
                f"mean over runs of log(||E_hat[x]|| KMC (n = {n_hi}) / {other}); < 0: KMC closer to the true mean 0",
                paired_t_interval(a, b, "runs"), -1,
                f"geometric mean ||E_hat[x]||: KMC (n = {n_hi}) {_gm(a):.3g} vs {other} {_gm(b):.3g}", note,
                quote=QUOTES["outperforms"], test="superiority", needs=(runs,)))
    if "acceptance_rate" in metrics:
        acc = _values(df, "acceptance_rate", "KMC")
        if acc.shape[1] >= 2:
            slopes = per_run_slopes(acc)
            out.append(Claim(
                _EXP, _FIG, "KMC's acceptance rate rises with n = m (trend over all n; KMC approaches HMC)",
                "mean over runs of the least-squares slope of KMC's acceptance rate against log n; > 0: rises",
                t_interval(slopes, "runs"), +1,
                "mean acceptance of KMC: " + ", ".join(f"n = {n}: {acc[n].mean():.3f}" for n in acc.columns)
                + (f"; HMC {_values(df, 'acceptance_rate', 'HMC').iloc[:, 0].mean():.3f}" if "HMC" in present else ""),
                note, quote=QUOTES["approaches"], test="superiority", needs=(runs,)))
    if "HMC" not in present:
        return out
    largest = at_least(config, "kmc_banana.n", PAPER_MAX_N, "largest n = m", reduce=max,
                       why="the paper's largest n = m = 2,000, where 'eventually' is read")
    for metric in ("acceptance_rate", "mean_norm", "min_ess"):
        if metric not in metrics:
            continue
        kmc, hmc = _values(df, metric, "KMC"), _values(df, metric, "HMC")
        if n_hi not in kmc.columns or not hmc.shape[1]:
            continue
        a, b = _pair(kmc[n_hi], hmc.iloc[:, 0])
        if not len(a):
            continue
        log = metric != "acceptance_rate"
        margin = CLOSE_MARGINS[metric]
        shown = (lambda x: f"{_gm(x):.3g}") if log else (lambda x: f"{np.mean(x):.3f}")
        out.append(Claim(
            _EXP, _FIG, f"KMC's {_PANEL[metric]} at n = m = {n_hi} is close to HMC's",
            (f"mean over runs of log({_PANEL[metric]} KMC / HMC)" if log else
             "mean over runs of acceptance KMC - HMC") + f", n = {n_hi}; equivalence band +-{margin:g}",
            paired_t_interval(a, b, "runs"), 0,
            f"{'geometric ' if log else ''}mean {_PANEL[metric]}: KMC (n = {n_hi}) {shown(a)} vs HMC {shown(b)}",
            note, 0.0, margin, quote=QUOTES["outperforms"], test="equivalence",
            margin_why=(f"the half-width of HMC's own 80% band over runs (1.28 sd; sd {_CLOSE_SD[metric]:g}"
                        f"{' in log' if log else ''} over the quick run's 30 runs), the band Fig. 3 plots"),
            needs=(runs, largest)))
    return out
