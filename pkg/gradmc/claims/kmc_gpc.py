"""Claims of Kernel HMC Fig. 4 left (EXPERIMENTS.md B3) on the tidy kmc_gpc metrics."""

from __future__ import annotations

import pandas as pd

from gradmc.claims.base import Claim

__all__ = ["claims", "PAPER_MIN_ESS", "PAPER_ITERATIONS"]

PAPER_MIN_ESS = {"KMC": 415.0, "KAMH": 35.0, "RW": 25.0}
PAPER_ITERATIONS = 6000
_FIG = "KMC Fig. 4 left"


def _median(df: pd.DataFrame, sampler: str, metric: str) -> float:
    return float(df[(df["sampler"] == sampler) & (df["metric"] == metric)]["value"].median())


def _note(df: pd.DataFrame, passed: bool) -> str:
    iterations = int(df.loc[df["metric"] == "min_ess", "step"].max())
    if passed or iterations >= PAPER_ITERATIONS:
        return ""
    return f"only {iterations} iterations per run (paper {PAPER_ITERATIONS}): quick sizes"


def claims(df: pd.DataFrame) -> list[Claim]:
    """KMC's median min ESS beats RW's and KAMH's; KMC's median final MMD^2 to the benchmark <= RW's.

    Each claim needs KMC and the compared samplers in ``df``; missing samplers give no claim.
    """
    present = set(df.loc[df["metric"] == "min_ess", "sampler"])
    out: list[Claim] = []
    if not {"KMC", "RW"} <= present:
        return out
    others = [s for s in ("RW", "KAMH") if s in present]
    ess = {s: _median(df, s, "min_ess") for s in ["KMC", *others]}
    passed = all(ess["KMC"] > ess[s] for s in others)
    measured = "median min ESS: " + ", ".join(f"{s} {v:.1f}" for s, v in ess.items()) + \
        " (paper: " + ", ".join(f"{s} ~{PAPER_MIN_ESS[s]:.0f}" for s in ess) + ")"
    out.append(Claim("kmc_gpc", _FIG, f"KMC beats {' and '.join(others)} on minimum ESS (GP classification, Glass)",
                     measured, bool(passed), _note(df, passed)))
    mmd = df[df["metric"] == "mmd2"]
    last = mmd.loc[mmd.groupby(["sampler", "seed"])["step"].idxmax()]
    final = {s: float(last[last["sampler"] == s]["value"].median()) for s in ("KMC", "RW")}
    passed = final["KMC"] <= final["RW"]
    out.append(Claim("kmc_gpc", _FIG, "KMC's final MMD to the benchmark is at most RW's (GP classification, Glass)",
                     f"median final MMD^2 (V-statistic, cubic kernel): KMC {final['KMC']:.4g} vs RW {final['RW']:.4g}",
                     bool(passed), _note(df, passed)))
    return out
