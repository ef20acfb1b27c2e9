"""GWG paper Fig. 5: factorial HMM posterior sampling - log joint and log reconstruction error vs steps.

Reads ``results/<config>/fhmm_sampling/metrics.parquet`` only (see :mod:`gradmc.experiments.fhmm_sampling`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from gradmc import sampler_catalog
from gradmc.figures.style import plt, sampler_color, save_figure, save_table
from gradmc.results import read_parquet

__all__ = ["figure", "summary_table"]

def _samplers(df: pd.DataFrame) -> list[str]:
    """Legend / table order: the paper's samplers, then the later ones, then plugins, as the catalog orders them
    (:func:`gradmc.sampler_catalog.order_key`)."""
    return sorted(df["sampler"].unique(), key=sampler_catalog.order_key)


def _final(d: pd.DataFrame, metric: str) -> pd.Series:
    """Per seed, the value of ``metric`` at the last recorded step."""
    m = d[d["metric"] == metric]
    return m[m["step"] == m["step"].max()].groupby("seed")["value"].mean()


def summary_table(df: pd.DataFrame) -> pd.DataFrame:
    """Per sampler: final log joint, reconstruction error and bit error (mean and std over seeds), costs."""
    rows = []
    for name in _samplers(df):
        d = df[df["sampler"] == name]
        lj, rec, bit = _final(d, "log_joint"), _final(d, "recon_error"), _final(d, "bit_error")
        last = d[d["metric"] == "log_joint"]
        last = last[last["step"] == last["step"].max()]
        rows.append({
            "sampler": name,
            "steps": int(last["step"].max()) if len(last) else 0,
            "seeds": int(lj.size),
            "final_log_joint": lj.mean(),
            "final_log_joint_std": lj.std(ddof=0),
            "final_recon_error": rec.mean(),
            "final_log10_recon_error": float(np.log10(rec).mean()) if len(rec) else float("nan"),
            "final_bit_error": bit.mean(),
            "acceptance_rate": d[d["metric"] == "acceptance_rate"]["value"].mean(),
            "energy_evals_per_chain": last["energy_evals"].mean(),
            "sampler_time_s": last["wall_time_s"].mean(),
        })
    truth = df[df["metric"] == "log_joint_true"].groupby("seed")["value"].first()
    if len(truth):
        rec_true = df[df["metric"] == "recon_error_true"].groupby("seed")["value"].first()
        rows.append({"sampler": "x_true (reference)", "seeds": int(truth.size), "final_log_joint": truth.mean(),
                     "final_log_joint_std": truth.std(ddof=0), "final_recon_error": rec_true.mean(),
                     "final_log10_recon_error": float(np.log10(rec_true).mean()), "final_bit_error": 0.0})
    return pd.DataFrame(rows)


def figure(metrics_path: str | Path, out_prefix: str | Path, table_prefix: str | Path | None = None,
           config_name: str = "") -> list[Path]:
    """Draw Fig. 5 from the metrics Parquet.

    Writes ``out_prefix``.{pdf,png} and the final values as ``table_prefix``.{csv,md} (default: next to
    the figure); returns the paths.
    """
    df, prov = read_parquet(metrics_path)
    fig, (ax_lj, ax_rec) = plt.subplots(1, 2, figsize=(10, 3.8), layout="constrained")
    for ax, metric, transform in ((ax_lj, "log_joint", None), (ax_rec, "recon_error", np.log10)):
        m = df[df["metric"] == metric]
        for name in _samplers(df):
            d = m[m["sampler"] == name]
            if not len(d):
                continue
            values = d["value"] if transform is None else transform(d["value"].clip(lower=1e-12))
            curve = values.groupby(d["step"]).agg(["mean", "min", "max"])
            ax.plot(curve.index, curve["mean"], label=name, color=sampler_color(name))
            ax.fill_between(curve.index, curve["min"], curve["max"], color=sampler_color(name), alpha=0.2)
        ax.set_xlabel("Iterations")
    truth = df[df["metric"] == "log_joint_true"]["value"]
    if len(truth):
        ax_lj.axhline(float(truth.mean()), color="grey", linestyle="--", label="x_true")
    rec_true = df[df["metric"] == "recon_error_true"]["value"]
    if len(rec_true):
        ax_rec.axhline(float(np.log10(rec_true.clip(lower=1e-12)).mean()), color="grey", linestyle="--",
                       label="x_true")
    ax_lj.set_ylabel("log p(x, y)")
    ax_lj.set_title("Log joint density")
    ax_rec.set_ylabel("log10 reconstruction error")
    ax_rec.set_title(r"log10 $\sum_t (W^T x_t + b - y_t)^2$")
    ax_lj.legend(fontsize=8)
    sizes = df[df["metric"] == "log_joint"]
    suffix = f" [{config_name} config, commit {prov.get('git_commit', '?')[:8]}]" if config_name else ""
    fig.suptitle(f"Factorial HMM posterior (GWG Fig. 5){suffix}", fontsize=10)
    caption = (f"GWG Fig. 5 reproduction{suffix}. Curves: mean over chains within a seed, then mean (line) "
               f"and range (band) over {sizes['seed'].nunique()} seeds; dashed: the true x that generated y. "
               "Table: values at the last step, mean (and std) over seeds; energy evaluations per chain; "
               "sampler time only.")
    paths = save_figure(fig, out_prefix)
    paths += save_table(summary_table(df), table_prefix or out_prefix, caption)
    return paths
