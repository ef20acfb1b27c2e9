"""GWG Fig. 6 and Fig. 11 (EXPERIMENTS.md A5): log RMSE of PCD-learned Ising couplings, Gibbs-1 vs GWG.

Reads ``results/<config>/ising_pcd/metrics.parquet`` only (see :mod:`gradmc.experiments.ising_pcd`).

- Fig. 6 (``out_prefix``.pdf/.png), two columns: the lattice model (25x25 at theta = 0.25, the paper's
  setting, or the closest lattice in the results) and the Erdos-Renyi model. Top row, as the paper's caption
  ("increasing MCMC steps"): final log RMSE vs K. Bottom row: log RMSE vs PCD iteration for every K
  (colour = K, solid GWG, dashed Gibbs-1).
- Fig. 11 (``out_prefix``_vs_steps.pdf/.png): final log RMSE vs K, one panel per true model (every lattice
  side and theta, then ER); the paper's panels over theta and over the lattice size are slices of it.
- Tables: ``table_prefix``.csv/.md (final log RMSE per model, sampler, K: mean, min, max over seeds, and
  times) and ``table_prefix``_curves.csv/.md (the plotted training curves, mean over seeds).
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from gradmc.figures.style import plt, sampler_color, save_figure, save_table
from gradmc.results import read_parquet

__all__ = ["figure", "final_table", "curves_table", "fig6_lattice"]

_KEYS = ["target", "model", "dim", "side", "theta", "sampler", "K"]
_STYLE = {"GWG": "-", "Gibbs-1": "--"}


def final_table(df: pd.DataFrame) -> pd.DataFrame:
    """Per (target, model, dim, side, theta, sampler, K): final log RMSE mean/min/max over seeds, number of
    seeds, iterations, mean training time and mean sampler time (seconds)."""
    fin = df[df["metric"] == "final_log_rmse"]
    g = fin.groupby(_KEYS, dropna=False)
    out = pd.DataFrame({"final_log_rmse_mean": g["value"].mean(), "final_log_rmse_min": g["value"].min(),
                        "final_log_rmse_max": g["value"].max(), "seeds": g["seed"].nunique(),
                        "iterations": g["step"].max(), "sampler_time_s": g["wall_time_s"].mean()})
    times = df[df["metric"] == "train_time_s"].groupby(_KEYS, dropna=False)["value"].mean().rename("train_time_s")
    out = out.join(times).reset_index()
    return out.sort_values(["model", "dim", "theta", "sampler", "K"], kind="stable").reset_index(drop=True)


def curves_table(df: pd.DataFrame) -> pd.DataFrame:
    """Mean over seeds of log RMSE per (target, sampler, K, iteration)."""
    cur = df[df["metric"] == "log_rmse"]
    out = cur.groupby(["target", "sampler", "K", "step"])["value"].mean().rename("log_rmse_mean").reset_index()
    return out.rename(columns={"step": "iteration"})


def fig6_lattice(table: pd.DataFrame, side: int = 25, theta: float = 0.25) -> str | None:
    """Target key of the lattice closest to (side, theta) (exact match first), or None without lattices."""
    lat = table[table["model"] == "lattice"]
    if not len(lat):
        return None
    dist = (lat["side"] - side).abs() * 100 + (lat["theta"] - theta).abs()
    return str(lat.loc[dist.idxmin(), "target"])


def _title(row: pd.Series) -> str:
    if row["model"] == "lattice":
        return f"{row['side']}x{row['side']} lattice, theta = {row['theta']:g}"
    return f"Erdos-Renyi, D = {row['dim']}"


def _vs_k(ax, table: pd.DataFrame, target: str) -> None:
    t = table[table["target"] == target]
    for name in sorted(t["sampler"].unique()):
        s = t[t["sampler"] == name].sort_values("K")
        ax.plot(s["K"], s["final_log_rmse_mean"], marker="o", color=sampler_color(name), label=name,
                linestyle=_STYLE.get(name, "-"))
        ax.fill_between(s["K"], s["final_log_rmse_min"], s["final_log_rmse_max"], color=sampler_color(name), alpha=0.2)
    ax.set_xscale("log")
    ax.set_xticks(sorted(t["K"].unique()), [str(k) for k in sorted(t["K"].unique())])
    ax.minorticks_off()
    ax.set_xlabel("MCMC steps per iteration K")
    ax.set_ylabel("final log RMSE(J)")
    ax.set_title(_title(t.iloc[0]), fontsize=9)


def _vs_iteration(ax, curves: pd.DataFrame, target: str) -> None:
    c = curves[curves["target"] == target]
    ks = sorted(c["K"].unique())
    cmap = plt.get_cmap("viridis")
    for i, k in enumerate(ks):
        for name in sorted(c["sampler"].unique()):
            s = c[(c["K"] == k) & (c["sampler"] == name)]
            ax.plot(s["iteration"], s["log_rmse_mean"], color=cmap(0.85 * i / max(len(ks) - 1, 1)),
                    linestyle=_STYLE.get(name, ":"), label=f"{name}, K = {k}")
    ax.set_xlabel("PCD iteration")
    ax.set_ylabel("log RMSE(J)")


def figure(metrics_path: str | Path, out_prefix: str | Path, table_prefix: str | Path | None = None,
           config_name: str = "") -> list[Path]:
    """Draw Fig. 6 and Fig. 11 from the metrics Parquet and write the tables (see the module docstring)."""
    df, prov = read_parquet(metrics_path)
    table, curves = final_table(df), curves_table(df)
    suffix = f" [{config_name} config, commit {prov.get('git_commit', '?')[:8]}]" if config_name else ""
    lattice = fig6_lattice(table)
    er = table[table["model"] == "er"]["target"].unique()
    columns = [t for t in (lattice, er[0] if len(er) else None) if t is not None]
    fig, axes = plt.subplots(2, max(len(columns), 1), figsize=(5.0 * max(len(columns), 1), 7.0),
                             layout="constrained", squeeze=False)
    for j, target in enumerate(columns):
        _vs_k(axes[0][j], table, target)
        _vs_iteration(axes[1][j], curves, target)
    axes[0][0].legend(fontsize=8)
    axes[1][0].legend(fontsize=6, ncol=2)
    fig.suptitle(f"Training Ising models with PCD (GWG Fig. 6){suffix}", fontsize=10)
    paths = save_figure(fig, out_prefix)

    order = table.assign(er=table["model"] != "lattice").sort_values(["er", "side", "theta"], kind="stable")
    targets = list(dict.fromkeys(order["target"]))  # lattices (by side, theta), then ER
    ncols = min(5, max(len(targets), 1))
    nrows = max(math.ceil(len(targets) / ncols), 1)
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.4 * ncols, 2.9 * nrows), layout="constrained", squeeze=False)
    for ax in axes.flat[len(targets):]:
        ax.set_visible(False)
    for ax, target in zip(axes.flat, targets, strict=False):
        _vs_k(ax, table, target)
    axes[0][0].legend(fontsize=7)
    fig.suptitle(f"Final log RMSE of J vs MCMC steps per iteration (GWG Fig. 11){suffix}", fontsize=10)
    paths += save_figure(fig, f"{out_prefix}_vs_steps")

    seeds = int(table["seeds"].max()) if len(table) else 0
    iters = int(table["iterations"].max()) if len(table) else 0
    caption = (f"GWG Fig. 6 / Fig. 11 reproduction{suffix}. PCD with {iters} iterations; final log RMSE (natural "
               f"log) between learned and true J over all D^2 entries; mean and min-max over {seeds} seed(s). "
               f"Fig. 6 lattice panel: {lattice} (the paper's is 25x25 at theta = 0.25). One K step is one site "
               "update (Gibbs-1) or one proposed flip (GWG); sampler_time_s is sampler time only, train_time_s "
               "the whole PCD run (one thread).")
    paths += save_table(table, table_prefix or out_prefix, caption)
    paths += save_table(curves, f"{table_prefix or out_prefix}_curves",
                        f"Training curves of GWG Fig. 6{suffix}: log RMSE(J), mean over seeds, per iteration.")
    return paths
