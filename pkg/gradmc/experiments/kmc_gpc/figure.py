"""Kernel HMC Fig. 4 left: MMD^2 to the benchmark vs iterations, and minimum ESS, on GP classification (Glass).

Reads ``results/<config>/kmc_gpc/metrics.parquet`` only (see :mod:`gradmc.experiments.kmc_gpc`).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from gradmc.errors import InputError
from gradmc.experiments.kmc_gpc.claims import PAPER_ITERATIONS, PAPER_MIN_ESS
from gradmc.figures.style import plt, sampler_color, save_figure, save_table
from gradmc.results import read_parquet

__all__ = ["figure", "summary_table", "PAPER_MIN_ESS", "LOW", "HIGH"]

LOW, HIGH = 0.2, 0.8  # the paper's 20% / 80% quantile bands over runs
_ORDER = ("KMC", "KAMH", "RW")
_SUMMARY = ("min_ess", "acceptance_rate", "likelihood_estimates", "kmc_sigma", "kmc_lambda")


def summary_table(df: pd.DataFrame) -> pd.DataFrame:
    """Per (sampler, metric, step): median, 20% and 80% quantiles over runs, and the number of runs.

    Metrics: ``mmd2`` at every grid step, the end-of-run metrics, and ``wall_time_s`` (sampler seconds
    of the whole run, from the ``min_ess`` rows).
    """
    d = df[df["metric"].isin(("mmd2", *_SUMMARY))][["sampler", "seed", "metric", "step", "value"]]
    wall = df[df["metric"] == "min_ess"][["sampler", "seed", "step", "wall_time_s"]]
    d = pd.concat([d, wall.rename(columns={"wall_time_s": "value"}).assign(metric="wall_time_s")], ignore_index=True)
    g = d.groupby(["sampler", "metric", "step"])["value"]
    out = pd.DataFrame({"median": g.median(), "q20": g.quantile(LOW), "q80": g.quantile(HIGH),
                        "runs": g.count()}).reset_index()
    out["paper"] = [PAPER_MIN_ESS.get(s, float("nan")) if m == "min_ess" else float("nan")
                    for s, m in zip(out["sampler"], out["metric"], strict=True)]
    return out.sort_values(["metric", "sampler", "step"], kind="stable").reset_index(drop=True)


def figure(metrics_path: str | Path, out_prefix: str | Path, table_prefix: str | Path | None = None,
           config_name: str = "") -> list[Path]:
    """Draw Fig. 4 left from the metrics Parquet; writes ``out_prefix``.{pdf,png} and ``table_prefix``.{csv,md}.

    Raises:
        FileNotFoundError / ValueError: from :func:`gradmc.results.read_parquet` (names the file);
            ValueError if the file has no ``mmd2`` rows.
    """
    df, prov = read_parquet(metrics_path)
    if not (df["metric"] == "mmd2").any():
        raise InputError(f"{metrics_path}: no mmd2 rows (not a kmc_gpc metrics file?)")
    table = summary_table(df)
    present = set(table["sampler"])
    samplers = [s for s in _ORDER if s in present] + sorted(present - set(_ORDER))
    fig, (ax_mmd, ax_ess) = plt.subplots(1, 2, figsize=(11, 3.8), layout="constrained",
                                         gridspec_kw={"width_ratios": [2, 1]})
    for name in samplers:
        s = table[(table["sampler"] == name) & (table["metric"] == "mmd2")]
        ax_mmd.plot(s["step"], s["median"], color=sampler_color(name), label=name)
        ax_mmd.fill_between(s["step"], s["q20"], s["q80"], color=sampler_color(name), alpha=0.2)
    if (table.loc[table["metric"] == "mmd2", "q20"] > 0).all():
        ax_mmd.set_yscale("log")
    ax_mmd.set_xlabel("iterations")
    ax_mmd.set_ylabel(r"MMD$^2$ to benchmark (V-statistic)")
    ax_mmd.legend(fontsize=8)
    ess = df[df["metric"] == "min_ess"]
    for i, name in enumerate(samplers):
        values = ess[ess["sampler"] == name]["value"]
        ax_ess.scatter([i] * len(values), values, color=sampler_color(name), alpha=0.5, s=12)
        ax_ess.scatter([i], [values.median()], color=sampler_color(name), marker="_", s=400)
        if name in PAPER_MIN_ESS:
            ax_ess.scatter([i + 0.25], [PAPER_MIN_ESS[name]], color="black", marker="x", s=30,
                           label=f"paper ({PAPER_ITERATIONS:,} it.)" if i == 0 else None)
    ax_ess.set_xticks(range(len(samplers)), samplers)
    ax_ess.set_ylabel("minimum ESS over the 9 dimensions")
    ax_ess.legend(fontsize=8, loc="best")
    suffix = f" [{config_name} config, commit {prov.get('git_commit', '?')[:8]}]" if config_name else ""
    fig.suptitle(f"GP classification on Glass, pseudo-marginal (KMC Fig. 4 left){suffix}", fontsize=10)
    runs = int(ess["seed"].nunique())
    size = df.loc[df["metric"] == "benchmark_size", "value"]
    iterations = int(df.loc[df["metric"] == "mmd2", "step"].max())
    caption = (f"KMC Fig. 4 left reproduction{suffix}. Left: biased V-statistic of MMD^2 between the first t states "
               f"of each chain (no burn-in removed) and {int(size.iloc[0]) if len(size) else '?'} benchmark samples, "
               "kernel (1 + <theta, theta'>)^3; lines: median over "
               f"{runs} runs, bands: 20-80% quantiles. Right: minimum over dimensions of ArviZ bulk ESS of all "
               f"{iterations} states per run (dots: runs; bar: median; x: the paper's values after "
               f"{PAPER_ITERATIONS:,} iterations). wall_time_s: sampler seconds per run (cross-validation excluded).")
    paths = save_figure(fig, out_prefix)
    paths += save_table(table, table_prefix or out_prefix, caption)
    return paths
