"""Claims of GWG Fig. 3 / Fig. 9 (EXPERIMENTS.md A1) on the tidy rbm_sampling metrics."""

from __future__ import annotations

import pandas as pd

from gradmc.claims.base import Claim

__all__ = ["claims"]


def _median_ess(df: pd.DataFrame, sampler: str) -> float:
    return float(df[(df["sampler"] == sampler) & (df["metric"] == "ess")]["value"].median())


def _final_mmd(df: pd.DataFrame, sampler: str) -> float:
    mmd = df[(df["sampler"] == sampler) & (df["metric"] == "log_mmd")]
    return float(mmd[mmd["step"] == mmd["step"].max()]["value"].mean())


def claims(df: pd.DataFrame) -> list[Claim]:
    """GWG's median ESS is above every other sampler's; GWG gets within 0.5 (log10 MMD^2) of the target."""
    present = set(df["sampler"]) - {"Target"}
    out = []
    if "GWG" in present:
        gwg = _median_ess(df, "GWG")
        for other in sorted(present & {"Gibbs-1", "Gibbs-2", "HB-10-1"}):
            value = _median_ess(df, other)
            out.append(Claim("rbm_sampling", "GWG Fig. 3", f"GWG ESS > {other} ESS on the MNIST RBM",
                             f"median ESS over chains: GWG {gwg:.3g} vs {other} {value:.3g}", gwg > value))
        target = float(df[df["metric"] == "log_mmd_target"]["value"].iloc[0])
        final = _final_mmd(df, "GWG")
        steps = int(df[df["metric"] == "log_mmd"]["step"].max())
        out.append(Claim("rbm_sampling", "GWG Fig. 3", "GWG reaches the block-Gibbs target log MMD",
                         f"GWG {final:.3f} vs target {target:.3f} after {steps} steps (log10 MMD^2)",
                         final <= target + 0.5,
                         "PASS means within 0.5 of the target; the paper runs 10,000 steps" if steps < 10000 else ""))
    for multi in sorted(present & {"GWG-3", "GWG-5"}):
        if "GWG" in present:
            a, b = _final_mmd(df, multi), _final_mmd(df, "GWG")
            out.append(Claim("rbm_sampling", "GWG Fig. 9", f"{multi} converges faster than GWG (lower log MMD)",
                             f"final log10 MMD^2: {multi} {a:.3f} vs GWG {b:.3f}", a < b))
    return out
