"""KMC paper Fig. 2: mean acceptance along KMC finite trajectories over (n = m, d), slices with HMC.

Reads ``results/<config>/kmc_trajectories/metrics.parquet`` only (see :mod:`gradmc.experiments.kmc_trajectories`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from gradmc.experiments.kmc_trajectories.claims import MODERATE_D, PAPER_SLICE_N, mean_acceptance
from gradmc.figures.style import plt, sampler_color, save_figure, save_table
from gradmc.results import read_parquet

__all__ = ["figure", "summary_table", "PAPER_SLICE_N", "PAPER_SLICE_D"]

PAPER_SLICE_D = MODERATE_D  # the paper's slices (KMC Fig. 2): d = 8 and n = PAPER_SLICE_N, from the claims


def _closest(values, target: int) -> int:
    values = sorted(values)
    return min(values, key=lambda v: (abs(np.log(v) - np.log(target)), -v))


def summary_table(df: pd.DataFrame) -> pd.DataFrame:
    """Per (d, n): trials, mean KMC and HMC acceptance (trial-weighted over chunks)."""
    kmc, hmc = mean_acceptance(df, "acceptance_kmc"), mean_acceptance(df, "acceptance_hmc")
    m = df[df["metric"] == "acceptance_kmc"]
    trials = m.groupby(["d", "n"])["trials"].sum()
    out = pd.DataFrame({"trials": trials, "acceptance_kmc": kmc, "acceptance_hmc": hmc}).reset_index()
    return out.sort_values(["d", "n"]).reset_index(drop=True)


def figure(metrics_path: str | Path, out_prefix: str | Path, table_prefix: str | Path | None = None,
           config_name: str = "") -> list[Path]:
    """Draw Fig. 2 from the metrics Parquet.

    Left: heat map of mean KMC acceptance over (n = m, d). Middle: acceptance vs n at the d closest to
    8 (paper's slice). Right: acceptance vs d at the n closest to 5,000. HMC (true gradient) for reference.
    Writes ``out_prefix``.{pdf,png} and the (d, n) table as ``table_prefix``.{csv,md}; returns the paths.
    """
    df, prov = read_parquet(metrics_path)
    table = summary_table(df)
    dims, ns = sorted(table["d"].unique()), sorted(table["n"].unique())
    grid = table.pivot(index="d", columns="n", values="acceptance_kmc").reindex(index=dims, columns=ns)
    d_slice, n_slice = _closest(dims, PAPER_SLICE_D), _closest(ns, PAPER_SLICE_N)

    fig, (ax_h, ax_n, ax_d) = plt.subplots(1, 3, figsize=(13, 3.8), layout="constrained")
    im = ax_h.imshow(grid.to_numpy(), origin="lower", aspect="auto", vmin=0.0, vmax=1.0, cmap="viridis")
    ax_h.set_xticks(range(len(ns)), [str(n) for n in ns], rotation=45)
    ax_h.set_yticks(range(len(dims)), [str(d) for d in dims])
    ax_h.set_xlabel("n = m")
    ax_h.set_ylabel("d")
    ax_h.set_title("KMC mean acceptance")
    fig.colorbar(im, ax=ax_h)
    for ax, key, fixed, value, xlabel in ((ax_n, "n", "d", d_slice, "n = m"), (ax_d, "d", "n", n_slice, "d")):
        s = table[table[fixed] == value].sort_values(key)
        ax.plot(s[key], s["acceptance_kmc"], marker="o", label="KMC finite", color=sampler_color("KMC"))
        ax.plot(s[key], s["acceptance_hmc"], marker="s", linestyle="--", label="HMC", color=sampler_color("HMC"))
        ax.set_xscale("log", base=2 if key == "d" else 10)
        ax.set_xticks(list(s[key]), [str(v) for v in s[key]])
        ax.minorticks_off()
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("mean acceptance")
        ax.set_title(f"{fixed} = {value}")
        ax.legend(fontsize=8)
    suffix = f" [{config_name} config, commit {prov.get('git_commit', '?')[:8]}]" if config_name else ""
    fig.suptitle(f"Trajectory acceptance on the Gamma Gaussian (KMC Fig. 2){suffix}", fontsize=10)
    trials = int(table["trials"].min()) if len(table) else 0
    caption = (f"KMC Fig. 2 reproduction{suffix}. Mean over the L points of a leapfrog trajectory (eps fixed, "
               "L ~ U{L_min..L_max}) of min(1, exp(H_0 - H_t)) with the true H, averaged over "
               f"{trials} or more trials per (d, n); KMC: gradient of a KMC finite surrogate with m = n "
               "rational-quadratic features fitted on n target samples; HMC: true gradient (does not depend "
               f"on n). Slices at d = {d_slice} and n = {n_slice} (paper: d = {PAPER_SLICE_D}, n = {PAPER_SLICE_N:,}).")
    paths = save_figure(fig, out_prefix)
    paths += save_table(table, table_prefix or out_prefix, caption)
    return paths
