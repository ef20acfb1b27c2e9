"""The claims dashboard: a forest plot of every claim's effect and 95% interval against its null.

Reads ``results/<config>/claims.parquet`` (:mod:`gradmc.claims.base`). One row per claim, grouped by paper
and figure, coloured by verdict; the claims the config cannot decide (or that were not run) stand apart
below the decided ones, in grey. The title counts decidable claims only, per paper. Effects have different
units (log ESS ratios, nats, log MMD), so each row is drawn on its own scale: the effect and interval divided
by the row's largest finite distance from the null (so every row spans at most [-1, 1]), and flipped so that
the paper's side is always to the right.
The null is the vertical line at 0; an agreement claim's band (+- tolerance around the paper's value) is
shaded. An unbounded interval (too few replicates) is drawn to the edge with an arrow. The printed numbers
beside each row are in the claim's own units.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from gradmc.claims.base import summary
from gradmc.figures.style import plt, save_figure
from gradmc.results import read_parquet

__all__ = ["figure", "VERDICT_COLORS", "scaled_rows"]

VERDICT_COLORS = {"PASS": "tab:green", "FAIL": "tab:red", "INCONCLUSIVE": "tab:orange",
                  "NOT DECIDABLE AT THIS SCALE": "tab:gray", "NOT DECIDABLE ON THIS HARDWARE": "tab:gray",
                  "NOT RUN": "tab:gray"}
_DECIDED = ("PASS", "FAIL", "INCONCLUSIVE")
_EDGE = 1.15  # where unbounded intervals end (scaled units)


def _paper_order(paper: str) -> tuple:
    """Sort key: paper, then figure/table number, e.g. "GWG Fig. 4 right" -> ("GWG", "Fig.", 4, "right")."""
    parts = paper.split()
    num = next((float(p.rstrip(".")) for p in parts[2:3] if p.rstrip(".").replace(".", "", 1).isdigit()), math.inf)
    return parts[0], parts[1] if len(parts) > 1 else "", num, " ".join(parts[3:])


def scaled_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """Per claim: x (effect), lo, hi (interval) and band (tolerance) on the row's own scale, paper's side > 0.

    Returns:
        frame sorted by paper/figure with added columns ``x``, ``lo``, ``hi``, ``band`` (NaN when none);
        unbounded bounds stay +-inf.
    """
    out = frame.copy()
    out["_key"] = [(s not in _DECIDED, *_paper_order(p)) for p, s in zip(out["paper"], out["status"], strict=True)]
    out = out.sort_values(["_key", "claim"], kind="stable").drop(columns="_key").reset_index(drop=True)
    xs, los, his, bands = [], [], [], []
    for r in out.itertuples(index=False):
        sign = -1.0 if r.direction < 0 else 1.0
        e, lo, hi = (sign * (v - r.null) for v in (r.effect, r.ci_low, r.ci_high))
        lo, hi = min(lo, hi), max(lo, hi)
        tol = r.tolerance if r.direction == 0 and np.isfinite(r.tolerance) else math.nan
        if not all(np.isfinite(v) or np.isinf(v) for v in (e, lo, hi)):  # NOT RUN: nothing measured
            e = lo = hi = math.nan
        finite = [abs(v) for v in (e, lo, hi, tol) if np.isfinite(v)]
        scale = max(finite) if finite and max(finite) > 0 else 1.0
        xs.append(e / scale)
        los.append(lo / scale)
        his.append(hi / scale)
        bands.append(tol / scale)
    return out.assign(x=xs, lo=los, hi=his, band=bands)


def figure(claims_path: str | Path, out_prefix: str | Path, config_name: str = "") -> list[Path]:
    """Draw the dashboard from claims.parquet; write ``out_prefix``.{pdf,png}; return the paths.

    Raises:
        gradmc.errors.InputError: an unreadable claims file (from :func:`gradmc.results.read_parquet`).
        ValueError: a claims file without rows.
    """
    frame, _ = read_parquet(claims_path)
    if frame.empty:
        raise ValueError(f"{claims_path} holds no claims: nothing to draw")
    rows = scaled_rows(frame)
    n = len(rows)
    fig, ax = plt.subplots(figsize=(12.5, 0.28 * n + 1.6), layout="constrained")
    y = np.arange(n)[::-1]
    for yi, r in zip(y, rows.itertuples(index=False), strict=True):
        color = VERDICT_COLORS.get(r.status, "grey")
        if np.isfinite(r.band):
            ax.add_patch(plt.Rectangle((-r.band, yi - 0.35), 2 * r.band, 0.7, color="0.85", zorder=0))
        lo, hi = max(r.lo, -_EDGE), min(r.hi, _EDGE)
        ax.plot([lo, hi], [yi, yi], color=color, lw=2, solid_capstyle="butt")
        for bound, edge in ((r.lo, -_EDGE), (r.hi, _EDGE)):
            if not np.isfinite(bound):
                ax.annotate("", xy=(edge, yi), xytext=(edge - 0.12 * np.sign(edge), yi),
                            arrowprops={"arrowstyle": "->", "color": color})
        ax.plot([r.x], [yi], "o", color=color, ms=5)
        text = ("" if not np.isfinite(r.effect) else
                f": {r.effect:.3g} [{r.ci_low:.3g}, {r.ci_high:.3g}], n={r.replicates} {r.replicate_unit}")
        ax.text(_EDGE + 0.05, yi, f"{r.status}{text}", va="center", fontsize=7, color=color)
    ax.axvline(0.0, color="black", lw=0.8)
    labels = [f"{r.paper}: {r.claim}" for r in rows.itertuples(index=False)]
    ax.set_yticks(y, [lab if len(lab) <= 95 else lab[:92] + "..." for lab in labels], fontsize=7)
    # group separators between figures; a heavy line and a heading between decided and not decidable claims
    decided = rows["status"].isin(_DECIDED).to_numpy()
    for i in range(1, n):
        if decided[i] != decided[i - 1]:
            ax.axhline(y[i] + 0.5, color="black", lw=1.5)
            ax.text(-_EDGE, y[i] + 0.1, "not decidable by this config, or not run (grey: our value, not a verdict)",
                    fontsize=8, va="center", style="italic")
        elif rows["paper"].iloc[i] != rows["paper"].iloc[i - 1]:
            ax.axhline(y[i] + 0.5, color="0.8", lw=0.5)
    ax.set_xlim(-_EDGE - 0.05, _EDGE + 0.05)
    ax.set_ylim(-0.7, n - 0.3)
    ax.set_xlabel("effect on its own scale (null at 0, the paper's side to the right; grey: agreement band)")
    label = f" ({config_name} config)" if config_name else ""
    ax.set_title(f"Claims, measured{label}\n" + summary(frame).replace("; ", "\n"), fontsize=9)
    return save_figure(fig, out_prefix)
