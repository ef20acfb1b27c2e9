"""GWG paper Fig. 4: log ESS over the coupling theta, per sampler, one panel per lattice size (+ per second).

Reads ``results/<config>/ising_sampling/metrics.parquet`` only (see :mod:`gradmc.experiments.ising_sampling`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from gradmc.figures.style import plt, sampler_color, save_figure, save_table
from gradmc.results import read_parquet
from gradmc.targets.ising import THETA_CRITICAL

__all__ = ["ESS_METHOD", "seed_means", "summary_table", "figure"]

ESS_METHOD = ("ArviZ rank-normalised bulk ESS, per chain, of the Hamming distance to a fixed random "
              "configuration (one per lattice and theta) after burn-in, averaged over the chains of a seed")

_PER_CHAIN = ("ess", "ess_per_second", "ess_per_energy_eval", "acceptance_rate")


def seed_means(df: pd.DataFrame) -> pd.DataFrame:
    """Per (side, theta, sampler, seed): the mean over chains of each per-chain metric, one column each."""
    d = df[df["metric"].isin(_PER_CHAIN) & (df["chain"] >= 0)]
    wide = d.pivot_table(index=["side", "theta", "sampler", "seed"], columns="metric", values="value",
                         aggfunc="mean")
    return wide.reset_index()


def _mean_se(values: pd.Series) -> tuple[float, float]:
    v = values.dropna().to_numpy(dtype=np.float64)
    if len(v) == 0:
        return float("nan"), float("nan")
    se = float(v.std(ddof=1) / np.sqrt(len(v))) if len(v) > 1 else float("nan")
    return float(v.mean()), se


def summary_table(df: pd.DataFrame) -> pd.DataFrame:
    """The plotted numbers: per (side, theta, sampler), mean and standard error over seeds of log10 ESS and
    log10 ESS per second (ESS = mean over chains of a seed), plus ESS per energy evaluation and acceptance."""
    per_seed = seed_means(df)
    order = list(dict.fromkeys(df["sampler"]))
    rows = []
    for (side, theta, name), g in per_seed.groupby(["side", "theta", "sampler"], sort=True):
        ess_m, ess_se = _mean_se(np.log10(g["ess"]))
        eps_m, eps_se = _mean_se(np.log10(g["ess_per_second"]))
        rows.append({"side": int(side), "theta": float(theta), "sampler": name, "seeds": len(g),
                     "log10_ess_mean": ess_m, "log10_ess_se": ess_se,
                     "log10_ess_per_s_mean": eps_m, "log10_ess_per_s_se": eps_se,
                     "ess_per_energy_eval_mean": float(g["ess_per_energy_eval"].mean()),
                     "acceptance_rate": float(g["acceptance_rate"].mean())})
    out = pd.DataFrame(rows)
    if len(out):
        out["_order"] = out["sampler"].map({s: i for i, s in enumerate(order)})
        out = out.sort_values(["side", "_order", "theta"], kind="stable").drop(columns="_order")
    return out.reset_index(drop=True)


def figure(metrics_path: str | Path, out_prefix: str | Path, table_prefix: str | Path | None = None,
           config_name: str = "") -> list[Path]:
    """Draw Fig. 4 from the metrics Parquet: row 1 log10 ESS vs theta, row 2 log10 ESS per second, one
    column per lattice side. Writes ``out_prefix``.{pdf,png} and ``table_prefix``.{csv,md}; returns paths."""
    df, prov = read_parquet(metrics_path)
    table = summary_table(df)
    sides = sorted(table["side"].unique())
    samplers = list(dict.fromkeys(table["sampler"]))
    fig, axes = plt.subplots(2, len(sides), figsize=(4.2 * len(sides), 6.4), layout="constrained",
                             squeeze=False)
    for j, side in enumerate(sides):
        t = table[table["side"] == side]
        for i, (col, label) in enumerate((("log10_ess", "log10 ESS"), ("log10_ess_per_s", "log10 ESS per second"))):
            ax = axes[i][j]
            for name in samplers:
                s = t[t["sampler"] == name].sort_values("theta")
                color = sampler_color(name)
                ax.plot(s["theta"], s[f"{col}_mean"], marker="o", markersize=3, label=name, color=color)
                se = s[f"{col}_se"].fillna(0.0)
                ax.fill_between(s["theta"], s[f"{col}_mean"] - se, s[f"{col}_mean"] + se, color=color, alpha=0.2)
            ax.axvline(THETA_CRITICAL, color="grey", linestyle=":", linewidth=1)
            ax.set_xlabel(r"$\theta$")
            ax.set_ylabel(label)
            ax.set_title(f"{side}x{side} lattice" + (" (per second)" if i else ""))
    axes[0][0].legend(fontsize=8)
    suffix = f" [{config_name} config, commit {prov.get('git_commit', '?')[:8]}]" if config_name else ""
    fig.suptitle(f"Lattice Ising (GWG Fig. 4){suffix}", fontsize=10)
    steps = int(df["step"].max()) if len(df) else 0
    caption = (f"GWG Fig. 4 reproduction{suffix}. ESS: {ESS_METHOD}; curves show the mean and band the "
               f"standard error over seeds of log10 ESS, {steps} steps per chain. ESS per second counts "
               f"sampler time only (chains of a shard run as one batch, one thread). The dotted line marks "
               f"the critical coupling theta_c = log(1 + sqrt 2) / 4 ~= {THETA_CRITICAL:.3f} "
               f"(log p = theta s^T A s, s = 2x - 1, A the cyclic lattice adjacency).")
    paths = save_figure(fig, out_prefix)
    paths += save_table(table, table_prefix or out_prefix, caption)
    return paths
