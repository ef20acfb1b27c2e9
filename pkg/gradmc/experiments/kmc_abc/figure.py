"""Kernel HMC Fig. 4 right (EXPERIMENTS.md B4): autocorrelation and marginal of theta_1 on the ABC skew normal.

Reads ``results/<config>/kmc_abc/metrics.parquet`` only (rows: :mod:`gradmc.experiments.kmc_abc`).
Left: autocorrelation of theta_1 over lags 0..max_lag, median over runs with a 20-80% band. Right: the
marginal density of theta_1 per sampler, a density histogram of the kept samples pooled over runs on
common bins (reference mean +- 5 reference sd), and the exact ABC posterior marginal (reference, black).
The share of each sampler's samples outside the plotted range is in the table (HABC's is not small).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from gradmc.errors import InputError
from gradmc.figures.style import plt, sampler_color, save_figure, save_table
from gradmc.results import read_parquet

__all__ = ["figure", "acf_table", "density_table", "summary_table", "NUM_BINS", "RANGE_SD"]

NUM_BINS = 50
RANGE_SD = 5.0
_SUMMARY = ("ess_theta1", "mean_theta1", "std_theta1", "acceptance_rate", "simulations_per_iteration")


def _reference(df: pd.DataFrame) -> tuple[float, float, pd.DataFrame]:
    ref = df[df["sampler"] == "reference"]
    if ref.empty:
        raise InputError("kmc_abc metrics have no 'reference' rows (exact ABC marginal); rerun the experiment")
    v = ref.set_index("metric")["value"]
    return float(v["mean_theta1"]), float(v["std_theta1"]), ref[ref["metric"] == "density_theta1"]


def acf_table(df: pd.DataFrame) -> pd.DataFrame:
    """Per (sampler, lag): median, 20% and 80% quantiles of the theta_1 autocorrelation over runs."""
    g = df[df["metric"] == "acf_theta1"].groupby(["sampler", "step"])["value"]
    out = pd.DataFrame({"median": g.median(), "q20": g.quantile(0.2), "q80": g.quantile(0.8), "runs": g.count()})
    return out.reset_index().rename(columns={"step": "lag"})


def density_table(df: pd.DataFrame) -> pd.DataFrame:
    """Per (sampler, bin): pooled density histogram of theta_1 on mean +- RANGE_SD sd of the reference,
    the exact reference density at the bin centres (sampler "reference"), and ``outside``: the share of
    a sampler's samples outside the range."""
    mean, sd, ref = _reference(df)
    edges = np.linspace(mean - RANGE_SD * sd, mean + RANGE_SD * sd, NUM_BINS + 1)
    centres = 0.5 * (edges[1:] + edges[:-1])
    rows = []
    for name, part in df[df["metric"] == "theta1"].groupby("sampler"):
        x = part["value"].to_numpy()
        counts, _ = np.histogram(x, edges)
        dens = counts / (len(x) * np.diff(edges))
        outside = float(np.mean((x < edges[0]) | (x > edges[-1])))
        rows += [(name, c, d, outside) for c, d in zip(centres, dens, strict=True)]
    ref_d = np.interp(centres, ref["x"].to_numpy(), ref["value"].to_numpy())
    rows += [("reference", c, d, 0.0) for c, d in zip(centres, ref_d, strict=True)]
    return pd.DataFrame(rows, columns=["sampler", "theta1", "density", "outside"])


def summary_table(df: pd.DataFrame) -> pd.DataFrame:
    """Per (sampler, metric): median, 20% / 80% quantiles over runs, and the value pooled over all kept
    samples (mean / std of theta_1 only); reference rows carry the exact value."""
    d = df[df["metric"].isin(_SUMMARY)]
    g = d.groupby(["sampler", "metric"])["value"]
    out = pd.DataFrame({"median": g.median(), "q20": g.quantile(0.2), "q80": g.quantile(0.8),
                        "runs": g.count()}).reset_index()
    pooled = df[df["metric"] == "theta1"].groupby("sampler")["value"].agg(mean_theta1="mean", std_theta1="std")
    out["pooled"] = [pooled[m].get(s, np.nan) if m in pooled.columns else np.nan
                     for s, m in zip(out["sampler"], out["metric"], strict=True)]
    ref = out["sampler"] == "reference"
    out.loc[ref, "pooled"] = out.loc[ref, "median"]
    return out.sort_values(["metric", "sampler"], kind="stable").reset_index(drop=True)


def figure(metrics_path: str | Path, out_prefix: str | Path, table_prefix: str | Path | None = None,
           config_name: str = "") -> list[Path]:
    """Draw KMC Fig. 4 right from the metrics Parquet; writes ``out_prefix``.{pdf,png} and
    ``table_prefix``.{csv,md} (long table: panel acf / density / summary).

    Raises:
        ValueError: the metrics hold no reference rows or no autocorrelation rows.
    """
    df, prov = read_parquet(metrics_path)
    acf, dens, summ = acf_table(df), density_table(df), summary_table(df)
    if acf.empty:
        raise InputError("kmc_abc metrics have no 'acf_theta1' rows")
    fig, (ax_acf, ax_den) = plt.subplots(1, 2, figsize=(10, 3.6), layout="constrained")
    samplers = sorted(acf["sampler"].unique())
    for name in samplers:
        a = acf[acf["sampler"] == name]
        ax_acf.plot(a["lag"], a["median"], color=sampler_color(name), label=name)
        ax_acf.fill_between(a["lag"], a["q20"], a["q80"], color=sampler_color(name), alpha=0.2)
        h = dens[dens["sampler"] == name]
        ax_den.step(h["theta1"], h["density"], where="mid", color=sampler_color(name), label=name)
    r = dens[dens["sampler"] == "reference"]
    ax_den.plot(r["theta1"], r["density"], color="black", linewidth=2, label="exact ABC posterior")
    ax_acf.axhline(0.0, color="grey", linewidth=0.5)
    ax_acf.set_xlabel("lag")
    ax_acf.set_title(r"Autocorrelation of $\theta_1$")
    ax_den.set_xlabel(r"$\theta_1$")
    ax_den.set_title(r"Marginal density of $\theta_1$")
    ax_acf.legend(fontsize=8)
    ax_den.legend(fontsize=8)
    suffix = f" [{config_name} config, commit {prov.get('git_commit', '?')[:8]}]" if config_name else ""
    fig.suptitle(f"ABC, 10-D skew normal (KMC Fig. 4 right){suffix}", fontsize=10)
    runs = int(df[df["metric"] == "acf_theta1"]["seed"].nunique())
    caption = (f"KMC Fig. 4 right reproduction{suffix}. Left: median autocorrelation of theta_1 over {runs} runs "
               "(ArviZ FFT estimator on the kept iterations), band 20-80% quantiles. Right: density histograms of "
               "theta_1 pooled over runs, reference mean +- 5 sd; 'outside' = share of samples beyond that range. "
               "Black: the exact ABC posterior marginal (Gaussian mixture over the mean of 10 half-normals, see "
               "gradmc.experiments.kmc_abc). ESS: ArviZ bulk, per run. Summary 'pooled': over all kept samples.")
    table = pd.concat([acf.assign(panel="acf").rename(columns={"lag": "x"}),
                       dens.assign(panel="density").rename(columns={"theta1": "x", "density": "median"}),
                       summ.assign(panel="summary")], ignore_index=True)
    cols = ["panel", "sampler", "metric", "x", "median", "q20", "q80", "runs", "pooled", "outside"]
    paths = save_figure(fig, out_prefix)
    paths += save_table(table.reindex(columns=cols), table_prefix or out_prefix, caption)
    return paths
