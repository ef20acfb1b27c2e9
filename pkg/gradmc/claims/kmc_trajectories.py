"""Claims of KMC Fig. 2 (EXPERIMENTS.md B1) on the tidy kmc_trajectories metrics."""

from __future__ import annotations

import pandas as pd

from gradmc.claims.base import Claim

__all__ = ["claims", "mean_acceptance"]

PAPER_TRIALS = 100
TOLERANCE = 0.1


def mean_acceptance(df: pd.DataFrame, metric: str) -> pd.Series:
    """Trial-weighted mean of ``metric`` over chunks, indexed by (d, n)."""
    m = df[df["metric"] == metric]
    weighted = (m["value"] * m["trials"]).groupby([m["d"], m["n"]]).sum()
    return weighted / m["trials"].groupby([m["d"], m["n"]]).sum()


def _note(df: pd.DataFrame, passed: bool) -> str:
    m = df[df["metric"] == "acceptance_kmc"]
    trials = int(m.groupby(["d", "n"])["trials"].sum().min())
    if passed or trials >= PAPER_TRIALS:
        return ""
    return f"only {trials} trials per (d, n) (paper {PAPER_TRIALS}) and a reduced grid"


def claims(df: pd.DataFrame) -> list[Claim]:
    """KMC ~ HMC at the smallest d and largest n; KMC acceptance falls from smallest to largest d at the largest n."""
    if not {"acceptance_kmc", "acceptance_hmc"} <= set(df["metric"]):
        return []
    kmc, hmc = mean_acceptance(df, "acceptance_kmc"), mean_acceptance(df, "acceptance_hmc")
    dims = sorted(kmc.index.get_level_values("d").unique())
    n_max = max(kmc.index.get_level_values("n"))
    d_min, d_max = dims[0], dims[-1]
    out = []
    a, b = kmc[(d_min, n_max)], hmc[(d_min, n_max)]
    passed = bool(a >= b - TOLERANCE)
    out.append(Claim("kmc_trajectories", "KMC Fig. 2",
                     f"KMC acceptance is comparable to HMC in low dimension (KMC >= HMC - {TOLERANCE} at the "
                     "smallest d and largest n = m)",
                     f"d={d_min}, n=m={n_max}: KMC {a:.3f} vs HMC {b:.3f}", passed, _note(df, passed)))
    if len(dims) > 1:
        curve = {d: kmc[(d, n_max)] for d in dims}
        passed = bool(curve[d_max] < curve[d_min])
        out.append(Claim("kmc_trajectories", "KMC Fig. 2", "KMC acceptance degrades as d grows at fixed n = m",
                         f"n=m={n_max}: " + ", ".join(f"d={d} {v:.3f}" for d, v in curve.items()),
                         passed, _note(df, passed)))
    return out
