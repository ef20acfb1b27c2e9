"""Kernel HMC Fig. 3: acceptance rate, ||E_hat[x]|| and minimum ESS vs n = m on the 8-D banana.

Reads ``results/<config>/kmc_banana/metrics.parquet`` only (see :mod:`gradmc.experiments.kmc_banana`).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from gradmc.figures.style import plt, sampler_color, save_figure, save_table
from gradmc.results import read_parquet

__all__ = ["figure", "summary_table", "METRICS"]

METRICS = (("acceptance_rate", "Acceptance rate"), ("mean_norm", r"$\|\hat{E}[x]\|$"), ("min_ess", "Minimum ESS"))


def summary_table(df: pd.DataFrame) -> pd.DataFrame:
    """Per (sampler, n, metric): median, 10% and 90% quantiles over runs, and the number of runs."""
    d = df[df["metric"].isin([m for m, _ in METRICS])]
    g = d.groupby(["sampler", "n", "metric"])["value"]
    out = pd.DataFrame({"median": g.median(), "q10": g.quantile(0.1), "q90": g.quantile(0.9),
                        "runs": g.count()}).reset_index()
    return out.sort_values(["metric", "sampler", "n"], kind="stable").reset_index(drop=True)


def figure(metrics_path: str | Path, out_prefix: str | Path, table_prefix: str | Path | None = None,
           config_name: str = "") -> list[Path]:
    """Draw Fig. 3 from the metrics Parquet; writes ``out_prefix``.{pdf,png} and ``table_prefix``.{csv,md}."""
    df, prov = read_parquet(metrics_path)
    table = summary_table(df)
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6), layout="constrained")
    for ax, (metric, label) in zip(axes, METRICS, strict=True):
        t = table[table["metric"] == metric]
        plotted_curve = False
        for name in sorted(t["sampler"].unique()):
            s = t[t["sampler"] == name]
            if (s["n"] > 0).any():  # history-based samplers: curves over n
                s = s[s["n"] > 0]
                ax.plot(s["n"], s["median"], marker="o", color=sampler_color(name), label=name)
                plotted_curve |= bool(s["median"].notna().any())
                ax.fill_between(s["n"], s["q10"], s["q90"], color=sampler_color(name), alpha=0.2)
            else:  # reference samplers: horizontal median and 10/90% band
                row = s.iloc[0]
                ax.axhline(row["median"], color=sampler_color(name), linestyle="--", label=name)
                ax.axhspan(row["q10"], row["q90"], color=sampler_color(name), alpha=0.1)
        if plotted_curve:  # a log axis needs finite data (tiny runs can leave ESS undefined: NaN)
            ax.set_xscale("log")
        ax.set_xlabel("n = m")
        ax.set_title(label)
    axes[0].legend(fontsize=8)
    suffix = f" [{config_name} config, commit {prov.get('git_commit', '?')[:8]}]" if config_name else ""
    fig.suptitle(f"8-D banana (KMC Fig. 3){suffix}", fontsize=10)
    runs = int(df[df["metric"] == "min_ess"]["seed"].nunique())
    caption = (f"KMC Fig. 3 reproduction{suffix}. Lines: median over {runs} runs; bands: 10-90% quantiles. "
               "KMC finite vs n = m (history size = number of random features); HMC and RW do not depend on n "
               "(dashed lines). Acceptance and ESS over the kept iterations after burn-in; ESS: ArviZ bulk, "
               "minimum over dimensions, per run.")
    paths = save_figure(fig, out_prefix)
    paths += save_table(table, table_prefix or out_prefix, caption)
    return paths
