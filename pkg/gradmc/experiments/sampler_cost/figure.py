"""The sampler cost table: measured cost per step relative to Gibbs-1, beside the GWG paper's ratios."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from gradmc.experiments.sampler_cost.claims import PAPER_RELATIVE_COST as _PAPER_RATIOS
from gradmc.figures.style import save_table
from gradmc.results import read_parquet

__all__ = ["cost_table", "table_sampler_cost"]

#: Relative cost per step reported in the GWG paper (Sec. 5.1), Gibbs-1 = 1 (the ratios are the claims').
PAPER_RELATIVE_COST = {"Gibbs-1": 1.0, **_PAPER_RATIOS}


def cost_table(df: pd.DataFrame) -> pd.DataFrame:
    """Wide table: one row per sampler; ms/step and relative cost per target; the paper's ratio."""
    wide = df[df["metric"].isin(["ms_per_step", "relative_cost"])].pivot_table(
        index="sampler", columns=["target", "metric"], values="value", sort=False)
    wide.columns = [f"{target} {metric}" for target, metric in wide.columns]
    wide = wide.reset_index()
    wide["paper relative_cost"] = wide["sampler"].map(PAPER_RELATIVE_COST)
    evals = df[df["metric"] == "energy_evals_per_step"].groupby("sampler", sort=False)["value"].first()
    wide["energy_evals_per_step"] = wide["sampler"].map(evals)
    return wide


def table_sampler_cost(metrics_path: str | Path, out_prefix: str | Path) -> list[Path]:
    """Write ``out_prefix``.csv and .md from the sampler-cost Parquet; return the paths."""
    df, prov = read_parquet(metrics_path)
    try:  # the run's config, as its provenance recorded it
        threads = prov["config"]["sampler_cost"]["threads"]
    except (KeyError, TypeError):
        threads = "?"
    caption = ("Sampler cost per step (median of timed runs after warm-up, sampler time only, "
               f"{threads} threads, commit "
               f"{str(prov.get('git_commit', '?'))[:8]}); relative to Gibbs-1 on the same target. "
               "The paper's ratios (GWG Sec. 5.1) are for its own GPU implementation.")
    return save_table(cost_table(df), out_prefix, caption)
