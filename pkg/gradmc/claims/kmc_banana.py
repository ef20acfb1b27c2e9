"""Claims of Kernel HMC Fig. 3 (EXPERIMENTS.md B2) on the tidy kmc_banana metrics."""

from __future__ import annotations

import pandas as pd

from gradmc.claims.base import Claim

__all__ = ["claims"]

PAPER_RUNS = 30
PAPER_MAX_N = 2000


def _median(df: pd.DataFrame, sampler: str, metric: str, n: int | None = None) -> float:
    m = df[(df["sampler"] == sampler) & (df["metric"] == metric)]
    if n is not None:
        m = m[m["n"] == n]
    return float(m["value"].median())


def _note(df: pd.DataFrame, passed: bool, n_max: int) -> str:
    if passed:
        return ""
    runs = int(df[df["metric"] == "min_ess"]["seed"].nunique())
    if runs >= PAPER_RUNS and n_max >= PAPER_MAX_N:
        return ""
    return f"only {runs} runs and n up to {n_max} (paper {PAPER_RUNS} runs, n up to {PAPER_MAX_N}): quick sizes"


def claims(df: pd.DataFrame) -> list[Claim]:
    """KMC's median min ESS at the largest n beats RW's and KAMH's (same n); and is closer to HMC's than at the
    smallest n."""
    ess = df[df["metric"] == "min_ess"]
    kmc = ess[ess["sampler"] == "KMC"]
    out: list[Claim] = []
    if not len(kmc):
        return out
    sizes = sorted(int(n) for n in kmc["n"].unique())
    n_lo, n_hi = sizes[0], sizes[-1]
    k_hi = _median(df, "KMC", "min_ess", n_hi)
    present = set(ess["sampler"])
    if "RW" in present:
        rw = _median(df, "RW", "min_ess")
        passed = bool(k_hi > rw)
        out.append(Claim("kmc_banana", "KMC Fig. 3", "KMC's minimum ESS beats random-walk Metropolis (largest n)",
                         f"median min ESS: KMC (n = {n_hi}) {k_hi:.1f} vs RW {rw:.1f}", passed,
                         _note(df, passed, n_hi)))
    if "KAMH" in present and n_hi in set(int(n) for n in ess[ess["sampler"] == "KAMH"]["n"]):
        kamh = _median(df, "KAMH", "min_ess", n_hi)
        passed = bool(k_hi > kamh)
        out.append(Claim("kmc_banana", "KMC Fig. 3", "KMC's minimum ESS beats KAMH at the same history size",
                         f"median min ESS at n = {n_hi}: KMC {k_hi:.1f} vs KAMH {kamh:.1f}", passed,
                         _note(df, passed, n_hi)))
    if "HMC" in present and len(sizes) >= 2:
        hmc = _median(df, "HMC", "min_ess")
        k_lo = _median(df, "KMC", "min_ess", n_lo)
        passed = bool(abs(hmc - k_hi) < abs(hmc - k_lo))
        out.append(Claim("kmc_banana", "KMC Fig. 3", "KMC approaches HMC as n = m grows (minimum ESS)",
                         f"median min ESS: HMC {hmc:.1f}; KMC n = {n_lo}: {k_lo:.1f}, n = {n_hi}: {k_hi:.1f}",
                         passed, _note(df, passed, n_hi)))
    return out
