"""GWG paper Fig. 2: final log MMD versus RBM dimension for GWG, R-MALA, R-HMC and D-SVGD.

Reads ``results/rbm_relaxed/metrics.parquet`` only (see :mod:`gradmc.experiments.rbm_relaxed`). For each
(sampler, D) the plotted setting is the BEST hyper-parameter setting by mean final log MMD over seeds
(as the paper reports "the best results obtained over all tested hyper-parameters"); points are the
mean over seeds with the standard error (std with ddof=1 / sqrt(seeds); 0 for one seed).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from gradmc.experiments.rbm_relaxed.claims import best_settings, standard_error
from gradmc.figures.style import plt, sampler_color, save_figure, save_table
from gradmc.results import read_parquet

__all__ = ["figure"]


def _target(df: pd.DataFrame) -> pd.DataFrame:
    t = df[df["metric"] == "log_mmd_target"]
    return (t.groupby("num_visible")["value"].agg(final_log_mmd="mean", sem=standard_error, num_seeds="count")
            .reset_index())


def figure(metrics_path: str | Path, out_prefix: str | Path, table_prefix: str | Path | None = None,
           config_name: str = "") -> list[Path]:
    """Draw Fig. 2 from the metrics Parquet.

    Writes ``out_prefix``.{pdf,png} and the plotted numbers (with the chosen setting) as
    ``table_prefix``.{csv,md} (default: next to the figure); returns the paths.
    """
    df, prov = read_parquet(metrics_path)
    best = best_settings(df)
    target = _target(df)
    fig, ax = plt.subplots(figsize=(5.5, 3.8), layout="constrained")
    order = [s for s in ("GWG", "R-MALA", "R-HMC", "D-SVGD") if s in set(best["sampler"])]
    order += sorted(set(best["sampler"]) - set(order))
    for name in order:
        part = best[best["sampler"] == name].sort_values("num_visible")
        color = sampler_color(name)
        ax.errorbar(part["num_visible"], part["final_log_mmd"], yerr=part["sem"], label=name, color=color,
                    marker="o", markersize=4, capsize=3)
    if len(target):
        ax.plot(target["num_visible"], target["final_log_mmd"], color="grey", linestyle="--",
                label="Target (block Gibbs)")
    ax.set_xscale("log")
    dims = sorted(best["num_visible"].unique())
    ax.set_xticks(dims)
    ax.set_xticklabels([str(d) for d in dims])
    ax.minorticks_off()
    ax.set_xlabel("RBM visible dimension D")
    ax.set_ylabel("final log10 MMD$^2$")
    ax.legend(fontsize=8)
    suffix = f" [{config_name} config, commit {prov.get('git_commit', '?')[:8]}]" if config_name else ""
    steps = int(best["steps"].max()) if len(best) else 0
    ax.set_title(f"Random RBMs (GWG Fig. 2), {steps} steps{suffix}", fontsize=9)
    caption = (f"GWG Fig. 2 reproduction{suffix}. Final log10 of the biased MMD^2 estimate (kernel exp(-mean "
               "Hamming)) between the samplers' chains and block-Gibbs ground truth, after "
               f"{steps} steps; mean and standard error over seeds. For each (sampler, D) the hyper-parameter "
               "setting with the lowest mean final log MMD is shown (column setting; num_settings compared). "
               "Target: a second independent block-Gibbs set of the same size vs the ground truth.")
    table = best.copy()
    if len(target):
        table = pd.concat([table, target.assign(sampler="Target", setting="-", num_settings=1, steps=steps)],
                          ignore_index=True)
    paths = save_figure(fig, out_prefix)
    paths += save_table(table, table_prefix or out_prefix, caption)
    return paths
