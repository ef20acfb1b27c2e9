"""GWG paper Fig. 3: log MMD to the block-Gibbs ground truth over steps, and ESS box plots over chains.

Reads ``results/rbm_sampling/metrics.parquet`` only (see :mod:`gradmc.experiments.rbm_sampling`).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from gradmc.figures.style import plt, sampler_color, save_figure, save_table
from gradmc.results import read_parquet

__all__ = ["figure", "summary_table"]

ESS_METHOD = "ArviZ rank-normalised bulk ESS per chain of the Hamming distance to a fixed random state"


def summary_table(df: pd.DataFrame) -> pd.DataFrame:
    """Per sampler: final log MMD (mean over seeds), ESS median/quartiles over chains, ESS/s, acceptance."""
    rows = []
    samplers = [s for s in df["sampler"].unique() if s != "Target"]
    for name in samplers:
        d = df[df["sampler"] == name]
        mmd = d[d["metric"] == "log_mmd"]
        final = mmd[mmd["step"] == mmd["step"].max()]["value"].mean()
        ess = d[d["metric"] == "ess"]["value"]
        rows.append({
            "sampler": name,
            "final_log_mmd": final,
            "ess_median": ess.median(),
            "ess_q25": ess.quantile(0.25),
            "ess_q75": ess.quantile(0.75),
            "ess_all_chains": d[d["metric"] == "ess_all_chains"]["value"].mean(),
            "ess_per_second_median": d[d["metric"] == "ess_per_second"]["value"].median(),
            "ess_per_energy_eval_median": d[d["metric"] == "ess_per_energy_eval"]["value"].median(),
            "acceptance_rate": d[d["metric"] == "acceptance_rate"]["value"].mean(),
            "sampler_time_s": d[d["metric"] == "ess_all_chains"]["wall_time_s"].mean(),
        })
    target = df[df["metric"] == "log_mmd_target"]["value"]
    if len(target):
        rows.append({"sampler": "Target (block Gibbs vs block Gibbs)", "final_log_mmd": float(target.iloc[0])})
    return pd.DataFrame(rows)


def figure(metrics_path: str | Path, out_prefix: str | Path, table_prefix: str | Path | None = None,
           config_name: str = "") -> list[Path]:
    """Draw Fig. 3 from the metrics Parquet.

    Writes ``out_prefix``.{pdf,png} and the plotted numbers as ``table_prefix``.{csv,md} (default: next to
    the figure); returns the paths.
    """
    df, prov = read_parquet(metrics_path)
    samplers = [s for s in df["sampler"].unique() if s != "Target"]
    fig, (ax_mmd, ax_ess, ax_eps) = plt.subplots(1, 3, figsize=(13, 3.8), layout="constrained")
    mmd = df[df["metric"] == "log_mmd"]
    for name in samplers:
        curve = mmd[mmd["sampler"] == name].groupby("step")["value"].agg(["mean", "min", "max"])
        ax_mmd.plot(curve.index, curve["mean"], label=name, color=sampler_color(name))
        ax_mmd.fill_between(curve.index, curve["min"], curve["max"], color=sampler_color(name), alpha=0.2)
    target = df[df["metric"] == "log_mmd_target"]["value"]
    if len(target):
        ax_mmd.axhline(float(target.iloc[0]), color="grey", linestyle="--", label="Target")
    ax_mmd.set_xlabel("Iterations")
    ax_mmd.set_ylabel("log10 MMD$^2$")
    ax_mmd.set_title("log MMD to block-Gibbs samples")
    ax_mmd.legend(fontsize=8)
    for ax, metric, label in ((ax_ess, "ess", "ESS"), (ax_eps, "ess_per_second", "ESS per second")):
        data = [df[(df["sampler"] == s) & (df["metric"] == metric)]["value"].to_numpy() for s in samplers]
        box = ax.boxplot(data, tick_labels=samplers, patch_artist=True, showfliers=False)
        for patch, name in zip(box["boxes"], samplers, strict=True):
            patch.set_facecolor(sampler_color(name))
            patch.set_alpha(0.6)
        ax.set_yscale("log")
        ax.set_ylabel(label)
        ax.set_title(f"{label} over chains")
    suffix = f" [{config_name} config, commit {prov.get('git_commit', '?')[:8]}]" if config_name else ""
    fig.suptitle(f"RBM on MNIST (GWG Fig. 3){suffix}", fontsize=10)
    caption = (f"GWG Fig. 3 reproduction{suffix}. log MMD: log10 of the biased MMD^2 estimate (as in the "
               f"authors' code), kernel exp(-mean Hamming), mean and range over seeds. ESS: {ESS_METHOD}, "
               f"after burn-in; boxes pool chains of all seeds; ESS per second counts sampler time only.")
    paths = save_figure(fig, out_prefix)
    paths += save_table(summary_table(df), table_prefix or out_prefix, caption)
    return paths
