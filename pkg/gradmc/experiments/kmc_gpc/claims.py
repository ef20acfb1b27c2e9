"""Claims of Kernel HMC Fig. 4 left (EXPERIMENTS.md B3) on the tidy kmc_gpc metrics, as effects with 95% intervals.

The paper (KMC Sec. 5, text on Fig. 4 left) runs 6,000 iterations per chain without discarding a burn-in, KMC
and KAMH with 1,000 history samples, and plots MMD^2 to the benchmark against the iterations. A replicate is
a run (the ``seed`` column): one chain per (sampler, run) on the one fixed GP classification posterior (UCI
Glass); the samplers of run i share its start point, so comparisons are paired by run. With fewer than 5 runs
every t interval is unbounded (INCONCLUSIVE). MMD^2 is the biased V-statistic with the cubic polynomial kernel,
recorded every ``mmd_every`` iterations (``mmd2`` rows, step = iteration).

Needs (read from the config, :func:`_needs`): ``kmc_gpc.num_iterations`` >= 6,000 and ``kmc_gpc.num_history``
>= 1,000 (the paper's setting: its ESS values, its MMD curves and its plateau are of 6,000-iteration chains,
without burn-in removal, with 1,000 history points), and >= 5 runs (``kmc_gpc.runs``; the fewest for a t
interval; the paper does not say how many runs its values summarise).

Claims (quote key in :data:`QUOTES`; test; margin):

- "KMC beats RW / KAMH on minimum ESS" (``ess``; superiority): mean over runs of log(min ESS KMC / min ESS
  other); > 0: KMC larger.
- "From around 500 iterations KMC clearly outperforms RW / KAMH" (``mmd``; superiority): per run, the mean over
  the recorded iterations t >= :data:`FROM_ITERATION` of log(MMD^2 KMC(t) / MMD^2 other(t)); paired t over
  runs; < 0: KMC closer to the benchmark.
- "All samplers effectively stop improving from 3000 iterations" (``plateau``; equivalence, one claim per
  sampler): per run log MMD^2(last iteration) - log MMD^2(3,000); band +- :data:`PLATEAU_MARGIN` = log(2) / 2.
  Why: the variance term of an unbiased chain's MMD^2 falls as 1 / (its ESS), i.e. by log 2 from 3,000 to
  6,000 iterations; a chain that still improves at half that rate has not stopped improving.
- Agreement with the minimum ESS the paper prints (``ess``; 415 KMC, 35 KAMH, 25 RW), on the log scale: the
  ratios KMC / RW and KMC / KAMH (ours: mean over runs of the per-run log ratio), and each sampler's log min
  ESS (mean over runs). Band +- :data:`TOLERANCE` = log 2: the paper prints rounded "around" values without
  error bars; an ESS estimate of order 25-400 has a relative standard error of about 25-35%, so a single ESS
  (or a ratio of two) is known to within about a factor of 2 at 95%.

What to expect of the ratio claims at the paper's size (measured on our target, 6,000 iterations, 1,000
history points, runs 0-2): KMC 198, RW 71, KAMH 73 (geometric means of the minimum ArviZ bulk ESS), ratios 2.8
and 2.7 against the paper's 16.6 and 11.9. The gap is not in KMC: an exact-gradient HMC with the paper's
leapfrog settings (1-10 steps, size uniform in the stated range) reaches min ESS about 260 on a Gaussian with the
benchmark's mean and covariance, where an adaptive RW reaches about 100, so no surrogate can give a ratio above
about 3 on this target; a perfect surrogate (the exact Laplace gradient) gives KMC only 1.35x its lite surrogate's
ESS. Our RW and KAMH mix about 3x better than the paper's 25 and 35 (the paper's target whitens the inputs and
puts its prior on the log ARD weight; ours standardises them and puts N(0, 5) on log lengthscale^2, EXPERIMENTS.md
B3), and our KMC about 2x worse than its 415 (its step sizes are shorter relative to our posterior's width).
These claims are therefore expected to FAIL at the paper's size for reasons of the target, not of KMC: a finding
the verdict reports, not a threshold to move.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from gradmc.claims.base import Claim, Need, agreement, at_least
from gradmc.claims.stats import MIN_T_REPLICATES, Interval, paired_t_interval, t_interval

__all__ = ["claims", "QUOTES", "PAPER_MIN_ESS", "PAPER_ITERATIONS", "PAPER_HISTORY", "TOLERANCE",
           "FROM_ITERATION", "PLATEAU_ITERATION", "PLATEAU_MARGIN"]

QUOTES = {
    "ess": "These results are backed by the minimum ESS (not plotted), which is around 415 for KMC and is around 35 "
           "and 25 for KAMH and RW, respectively.",
    "mmd": "From around 500 iterations, however, KMC clearly outperforms both RW and the earlier state-of-the-art "
           "KAMH.",
    "plateau": "Note that all samplers effectively stop improving from 3000 iterations",
}
"""The sentences of the KMC paper (Sec. 5, on Fig. 4 left) that the claims test, verbatim."""

PAPER_MIN_ESS = {"KMC": 415.0, "KAMH": 35.0, "RW": 25.0}
"""Minimum ESS the paper reports in the text after :data:`PAPER_ITERATIONS` iterations ("around"); the figure marks
them too."""
PAPER_ITERATIONS = 6000
PAPER_HISTORY = 1000
FROM_ITERATION = 500
PLATEAU_ITERATION = 3000
PLATEAU_MARGIN = math.log(2.0) / 2.0
TOLERANCE = math.log(2.0)
_WHY = ("a factor of 2: the paper prints rounded 'around' values without error bars; a single ESS estimate "
        "of order 25-400 has a relative SE of about 25-35%")
_PLATEAU_WHY = ("half the fall an unbiased chain's MMD^2 would still make from 3,000 to 6,000 iterations (its "
                "variance term falls as 1 / ESS: log 2 = 0.69), i.e. an improvement the paper's 'effectively stop "
                "improving' excludes")
_SOURCE = "KMC Sec. 5 (text on Fig. 4 left)"
_FIG = "KMC Fig. 4 left"
_EXP = "kmc_gpc"


def _needs(config: dict | None, history: bool = True) -> tuple[Need, ...]:
    """The paper's chain length and history size, and the runs a t interval needs (module docstring)."""
    out = [at_least(config, "kmc_gpc.num_iterations", PAPER_ITERATIONS, "iterations per chain",
                    why="the paper's 6,000 iterations without burn-in removal (KMC Sec. 5)")]
    if history:
        out.append(at_least(config, "kmc_gpc.num_history", PAPER_HISTORY, "history samples of KMC and KAMH",
                            why="the paper's 1,000 samples from the chain history (KMC Sec. 5)"))
    out.append(at_least(config, "kmc_gpc.runs", MIN_T_REPLICATES, "runs", reduce=len,
                        why="the fewest for a t interval; the paper does not say how many runs it summarises"))
    return tuple(out)


def _per_run(df: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Per run (rows) and sampler (columns): min ESS, or the value at the run's last step for mmd2."""
    m = df[df["metric"] == metric]
    m = m.loc[m.groupby(["sampler", "seed"])["step"].idxmax()]
    return m.pivot_table(index="seed", columns="sampler", values="value", aggfunc="mean")


def _mmd_at(df: pd.DataFrame, sampler: str) -> pd.DataFrame:
    """log MMD^2 of ``sampler``: rows runs (seed), columns the recorded iterations."""
    m = df[(df["metric"] == "mmd2") & (df["sampler"] == sampler)]
    return np.log(m.pivot_table(index="seed", columns="step", values="value", aggfunc="mean"))


def _pair(table: pd.DataFrame, a: str, b: str) -> tuple[np.ndarray, np.ndarray]:
    both = table[[a, b]].dropna()
    return both[a].to_numpy(), both[b].to_numpy()


def _note(df: pd.DataFrame) -> str:
    iterations = int(df.loc[df["metric"] == "min_ess", "step"].max())
    runs = int(df.loc[df["metric"] == "min_ess", "seed"].nunique())
    text = f"a replicate is a run; {runs} runs"
    if iterations < PAPER_ITERATIONS:
        text += f", {iterations} iterations per run (paper {PAPER_ITERATIONS})"
    return text


def _gm(x: np.ndarray) -> float:
    return float(np.exp(np.mean(np.log(x))))


def _unmeasured(what: str) -> Interval:
    return Interval(math.nan, math.nan, math.nan, 0, "runs", f"not measured: {what}")


def _mmd_claims(df: pd.DataFrame, others: list[str], needs: tuple[Need, ...], note: str) -> list[Claim]:
    """KMC below RW / KAMH in MMD^2 from iteration 500 on (superiority, per run mean of the log ratios)."""
    out: list[Claim] = []
    kmc = _mmd_at(df, "KMC")
    for other in others:
        theirs = _mmd_at(df, other)
        steps = [s for s in kmc.columns if s >= FROM_ITERATION and s in theirs.columns]
        runs = kmc.index.intersection(theirs.index)
        if not steps or not len(runs):
            continue
        diff = (kmc.loc[runs, steps] - theirs.loc[runs, steps]).dropna()
        per_run = diff.mean(axis=1).to_numpy()
        worst = diff.mean(axis=0)
        out.append(Claim(
            _EXP, _FIG, f"From around iteration {FROM_ITERATION} on, KMC's MMD to the benchmark is below {other}'s",
            f"mean over runs of the mean over iterations {steps[0]}-{steps[-1]} of log(MMD^2 KMC / MMD^2 {other}); "
            "< 0: KMC closer", t_interval(per_run, "runs"), -1,
            f"geometric mean MMD^2 (V-statistic, cubic kernel) KMC vs {other}: "
            + ", ".join(f"t = {s}: {_gm(np.exp(kmc.loc[runs, s].dropna())):.4g} vs "
                        f"{_gm(np.exp(theirs.loc[runs, s].dropna())):.4g}" for s in sorted({steps[0], steps[-1]}))
            + f"; largest per-iteration mean log ratio {worst.max():.2f} (t = {int(worst.idxmax())})",
            note, quote=QUOTES["mmd"], test="superiority", needs=needs))
    return out


def _plateau_claims(df: pd.DataFrame, samplers: list[str], config: dict | None, note: str) -> list[Claim]:
    """Each sampler's MMD^2 at the end is equivalent to that at 3,000 iterations (module docstring)."""
    out: list[Claim] = []
    for s in samplers:
        needs = _needs(config, history=s != "RW")
        mmd = _mmd_at(df, s)
        later = [t for t in mmd.columns if t >= PLATEAU_ITERATION]
        what = f"log MMD^2 of {s} at the last iteration - at iteration {PLATEAU_ITERATION}"
        claim = dict(quote=QUOTES["plateau"], test="equivalence", margin_why=_PLATEAU_WHY, needs=needs)
        if len(later) >= 2:
            both = mmd[[later[0], later[-1]]].dropna()
            iv = paired_t_interval(both[later[-1]].to_numpy(), both[later[0]].to_numpy(), "runs")
            measured = (f"geometric mean MMD^2 of {s}: t = {later[0]}: {_gm(np.exp(both[later[0]])):.4g}, "
                        f"t = {later[-1]}: {_gm(np.exp(both[later[-1]])):.4g}")
            out.append(Claim(_EXP, _FIG, f"{s} effectively stops improving from iteration {PLATEAU_ITERATION} "
                             "(MMD to the benchmark)", f"mean over runs of {what}; equivalence band "
                             f"+-{PLATEAU_MARGIN:.3f}", iv, 0, measured, note, 0.0, PLATEAU_MARGIN, **claim))
            continue
        if all(n.met for n in needs) and len(mmd):
            claim["not_run"] = (f"the metrics hold no MMD^2 of {s} at and after iteration {PLATEAU_ITERATION}; "
                                f"rerun kmc_gpc with num_iterations >= {PAPER_ITERATIONS}")
        if len(mmd):
            out.append(Claim(_EXP, _FIG, f"{s} effectively stops improving from iteration {PLATEAU_ITERATION} "
                             "(MMD to the benchmark)", f"mean over runs of {what}; equivalence band "
                             f"+-{PLATEAU_MARGIN:.3f}", _unmeasured(f"runs end at iteration {int(mmd.columns.max())}"),
                             0, f"runs end at iteration {int(mmd.columns.max())}", note, 0.0, PLATEAU_MARGIN, **claim))
    return out


def claims(df: pd.DataFrame, config: dict | None = None) -> list[Claim]:
    """ESS and MMD direction claims of KMC vs RW and KAMH, the plateau of each sampler's MMD, and agreement with
    the paper's min ESS (module docstring). Each claim needs KMC and the compared sampler in ``df``."""
    ess = _per_run(df, "min_ess")
    if not {"KMC", "RW"} <= set(ess.columns):
        return []
    note = _note(df)
    needs = _needs(config)
    iterations = int(df.loc[df["metric"] == "min_ess", "step"].max())
    others = [s for s in ("RW", "KAMH") if s in ess.columns]
    out: list[Claim] = []
    for other in others:
        a, b = _pair(ess, "KMC", other)
        out.append(Claim(_EXP, _FIG, f"KMC beats {other} on minimum ESS (GP classification, Glass)",
                         f"mean over runs of log(min ESS KMC / min ESS {other}); > 0: KMC larger",
                         paired_t_interval(np.log(a), np.log(b), "runs"), +1,
                         f"geometric mean min ESS: KMC {_gm(a):.1f} vs {other} {_gm(b):.1f} (paper: KMC ~415, "
                         f"{other} ~{PAPER_MIN_ESS[other]:.0f})", note, quote=QUOTES["ess"], test="superiority",
                         needs=needs))
    if "mmd2" in set(df["metric"]):
        mmd_samplers = set(df.loc[df["metric"] == "mmd2", "sampler"])
        if "KMC" in mmd_samplers:
            out += _mmd_claims(df, [s for s in others if s in mmd_samplers], needs, note)
        out += _plateau_claims(df, [s for s in ("KMC", *others) if s in mmd_samplers], config, note)
    for other in others:
        a, b = _pair(ess, "KMC", other)
        ratio = PAPER_MIN_ESS["KMC"] / PAPER_MIN_ESS[other]
        out.append(agreement(_EXP, _FIG, f"log min ESS ratio KMC / {other}", t_interval(np.log(a / b), "runs"),
                             math.log(ratio), TOLERANCE, _SOURCE, f"(= log 415/{PAPER_MIN_ESS[other]:.0f})",
                             _WHY, note, quote=QUOTES["ess"], needs=needs))
    short = (f"; {iterations} iterations vs the paper's {PAPER_ITERATIONS}: ESS grows about linearly with "
             f"iterations, so about {iterations / PAPER_ITERATIONS:.2g}x the paper's value is expected"
             if iterations < PAPER_ITERATIONS else "")
    for s in ["KMC", *others]:
        values = ess[s].dropna().to_numpy()
        out.append(agreement(_EXP, _FIG, f"{s} log min ESS", t_interval(np.log(values), "runs"),
                             math.log(PAPER_MIN_ESS[s]), TOLERANCE, _SOURCE,
                             f"(= log {PAPER_MIN_ESS[s]:.0f})", _WHY, note + short, quote=QUOTES["ess"],
                             needs=_needs(config, history=s != "RW")))
    return out
