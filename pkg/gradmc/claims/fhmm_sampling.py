"""Claims of GWG Fig. 5 (EXPERIMENTS.md A4) on the tidy fhmm_sampling metrics."""

from __future__ import annotations

import pandas as pd

from gradmc.claims.base import Claim

__all__ = ["claims"]

PAPER_STEPS = 10000


def _final(df: pd.DataFrame, sampler: str, metric: str) -> float:
    """Mean over seeds of ``metric`` (already a mean over chains) at the sampler's last recorded step."""
    m = df[(df["sampler"] == sampler) & (df["metric"] == metric)]
    return float(m[m["step"] == m["step"].max()]["value"].mean())


def _note(df: pd.DataFrame, passed: bool, extra: str = "") -> str:
    steps = int(df[df["metric"] == "log_joint"]["step"].max())
    parts = [] if passed or steps >= PAPER_STEPS else [
        f"only {steps} steps (paper {PAPER_STEPS}); with quick sizes the samplers may not have separated yet"]
    return "; ".join(parts + ([extra] if extra else []))


def claims(df: pd.DataFrame) -> list[Claim]:
    """GWG's final log joint is above every other sampler's; GWG's final reconstruction error is below Block-HB's."""
    present = set(df[df["metric"] == "log_joint"]["sampler"])
    out = []
    if "GWG" not in present:
        return out
    others = sorted(present - {"GWG"})
    gwg = _final(df, "GWG", "log_joint")
    if others:
        values = {o: _final(df, o, "log_joint") for o in others}
        best = max(values, key=values.get)
        passed = all(gwg > v for v in values.values())
        measured = f"final mean log p(x, y): GWG {gwg:.1f} vs " + ", ".join(f"{o} {v:.1f}" for o, v in values.items())
        if not passed:
            measured += f" (best other: {best})"
        out.append(Claim("fhmm_sampling", "GWG Fig. 5",
                         "GWG reaches a higher log joint than every other sampler at the last step",
                         measured, passed, _note(df, passed)))
    if "Block-HB" in present:
        a, b = _final(df, "GWG", "recon_error"), _final(df, "Block-HB", "recon_error")
        passed = a < b
        out.append(Claim("fhmm_sampling", "GWG Fig. 5", "GWG reaches a lower reconstruction error than Block-HB",
                         f"final mean reconstruction error: GWG {a:.3g} vs Block-HB {b:.3g}", passed,
                         _note(df, passed, ("" if passed else "near the posterior every sampler's error is "
                                              "about L * sigma^2, so small runs separate it less than the log joint"))))
    return out
