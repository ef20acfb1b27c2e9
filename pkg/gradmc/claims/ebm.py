"""Claims of GWG Table 2 (EXPERIMENTS.md A7) on the combined ebm metrics."""

from __future__ import annotations

import pandas as pd

from gradmc.claims.base import Claim

__all__ = ["claims"]

PAPER_ITERATIONS = 50000


def claims(df: pd.DataFrame) -> list[Claim]:
    """Per binary data set with both runs: EBM(GWG) has a higher test log-likelihood than EBM(Gibbs-1) trained
    for the same wall-clock time (the paper: -80.01 vs -117.17 on static MNIST)."""
    out: list[Claim] = []
    ll = df[df["metric"] == "test_log_likelihood"]
    for dataset in sorted(ll["target"].unique()):
        d = ll[ll["target"] == dataset].set_index("sampler")["value"]
        if not {"GWG", "Gibbs-1"} <= set(d.index):
            continue
        its = df[(df["target"] == dataset) & (df["metric"] == "train_iterations")].set_index("sampler")["value"]
        passed = bool(d["GWG"] > d["Gibbs-1"])
        note = "" if passed or its.get("GWG", 0) >= PAPER_ITERATIONS else (
            f"only {int(its.get('GWG', 0))} GWG training iterations (paper {PAPER_ITERATIONS}): quick sizes")
        out.append(Claim("ebm", "GWG Table 2", f"EBM trained with GWG beats Gibbs at equal wall-clock ({dataset})",
                         f"test log-likelihood (AIS, nats): GWG {d['GWG']:.2f} vs Gibbs-1 {d['Gibbs-1']:.2f} "
                         f"({int(its.get('GWG', 0))} vs {int(its.get('Gibbs-1', 0))} iterations)", passed, note))
    return out
