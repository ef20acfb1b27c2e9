"""GWG Fig. 7 / Fig. 12 (contact recall and precision vs k) and Fig. 13 (coupling norms beside the true contacts).

Reads ``results/<config>/potts_proteins/metrics.parquet`` only (see :mod:`gradmc.experiments.potts_proteins`).

- ``out_prefix``.pdf/.png (Fig. 7 / 12): one column per protein; top row recall vs k, bottom row precision vs
  k, of the top-k pairs ranked by ||J_ij||_F (solid: the paper's raw score; dashed: APC-corrected), for
  PLM, PCD-Gibbs and PCD-GWG; a dotted line marks k = L.
- ``out_prefix``_couplings.pdf/.png (Fig. 13): one row per protein: the true contact map (grey: unknown),
  then each method's coupling-norm matrix ||J_ij||_F (each panel on its own colour scale, as in the paper).
- ``table_prefix``.csv/.md: per protein and method, L, top-L/5 and top-L precision and recall (raw and APC),
  coupling RMSE vs the true J (synthetic benchmark, zero-sum gauge), iterations and fit wall time.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from gradmc.errors import InputError
from gradmc.figures.style import plt, sampler_color, save_figure, save_table
from gradmc.results import read_parquet

__all__ = ["figure", "summary_table", "matrix"]

_ORDER = ["PLM", "PCD-Gibbs", "PCD-GWG"]


def _methods(df: pd.DataFrame) -> list[str]:
    present = set(df["sampler"])
    return [m for m in _ORDER if m in present] + sorted(present - set(_ORDER))


def _value(df: pd.DataFrame, protein: str, method: str, metric: str, k: int | None = None) -> float:
    m = df[(df["target"] == protein) & (df["sampler"] == method) & (df["metric"] == metric)]
    if k is not None:
        m = m[m["k"] == k]
    return float(m["value"].iloc[0]) if len(m) else float("nan")


def summary_table(df: pd.DataFrame) -> pd.DataFrame:
    """One row per (protein, method): L, top-L/5 and top-L precision/recall (raw, APC), coupling RMSE (zero-sum
    gauge; NaN without known J), iterations and fit wall time in seconds."""
    rows = []
    for protein in sorted(df["target"].unique()):
        d = df[df["target"] == protein]
        L = int(d["length"].iloc[0])
        for method in _methods(d):
            row = {"protein": protein, "method": method, "L": L}
            for label, k in (("L5", max(1, L // 5)), ("L", L)):
                for metric in ("precision", "precision_apc", "recall", "recall_apc"):
                    row[f"{metric}_top_{label}"] = _value(d, protein, method, metric, k)
            for metric in ("coupling_rmse", "coupling_norm_rmse", "num_iterations", "train_time_s"):
                row[metric] = _value(d, protein, method, metric)
            rows.append(row)
    return pd.DataFrame(rows)


def matrix(df: pd.DataFrame, protein: str, method: str, metric: str) -> np.ndarray | None:
    """The L x L matrix stored as rows (one per cell, columns ``i``, ``j``) of ``metric``, or None if absent."""
    m = df[(df["target"] == protein) & (df["sampler"] == method) & (df["metric"] == metric)]
    if not len(m):
        return None
    L = int(m["length"].iloc[0])
    out = np.full((L, L), np.nan)
    out[m["i"].to_numpy(), m["j"].to_numpy()] = m["value"].to_numpy()
    return out


def _curves(df: pd.DataFrame, proteins: list[str], suffix: str) -> plt.Figure:
    fig, axes = plt.subplots(2, len(proteins), figsize=(4.2 * len(proteins), 6.4), layout="constrained",
                             squeeze=False)
    for col, protein in enumerate(proteins):
        d = df[df["target"] == protein]
        L = int(d["length"].iloc[0])
        for row, what in enumerate(("recall", "precision")):
            ax = axes[row, col]
            for method in _methods(d):
                for metric, style in ((what, "-"), (f"{what}_apc", "--")):
                    s = d[(d["sampler"] == method) & (d["metric"] == metric)].sort_values("k")
                    label = method if style == "-" else f"{method} (APC)"
                    ax.plot(s["k"], s["value"], linestyle=style, color=sampler_color(method),
                            label=label)
            ax.axvline(L, color="grey", linestyle=":", linewidth=1)
            ax.set_xlabel("number of predicted contacts k")
            ax.set_ylabel(what)
            ax.set_title(f"{protein} (L = {L})", fontsize=9)
    axes[0, 0].legend(fontsize=7)
    fig.suptitle(f"Contact prediction from Potts couplings (GWG Fig. 7 / 12){suffix}", fontsize=10)
    return fig


def _heatmaps(df: pd.DataFrame, proteins: list[str], suffix: str) -> plt.Figure:
    methods = _methods(df)
    fig, axes = plt.subplots(len(proteins), 1 + len(methods), figsize=(3.0 * (1 + len(methods)), 3.0 * len(proteins)),
                             layout="constrained", squeeze=False)
    for row, protein in enumerate(proteins):
        d = df[df["target"] == protein]
        first = _methods(d)[0]
        truth = matrix(d, protein, first, "contact")
        ax = axes[row, 0]
        ax.imshow(np.ma.masked_invalid(truth), cmap="Greys", vmin=0, vmax=1, interpolation="nearest")
        ax.set_facecolor("lightgrey")
        ax.set_title(f"{protein}: true contacts", fontsize=9)
        for col, method in enumerate(methods, start=1):
            ax = axes[row, col]
            norms = matrix(d, protein, method, "coupling_norm")
            if norms is None:
                ax.axis("off")
                continue
            ax.imshow(norms, cmap="viridis", interpolation="nearest")
            ax.set_title(f"{method}: ||J_ij||", fontsize=9)
        for ax in axes[row]:
            ax.set_xticks([])
            ax.set_yticks([])
    fig.suptitle(f"Inferred couplings beside the true contact map (GWG Fig. 13){suffix}", fontsize=10)
    return fig


def figure(metrics_path: str | Path, out_prefix: str | Path, table_prefix: str | Path | None = None,
           config_name: str = "") -> list[Path]:
    """Draw Fig. 7 / 12 and Fig. 13 from the metrics Parquet; write the summary table.

    Writes ``out_prefix``.{pdf,png}, ``out_prefix``_couplings.{pdf,png} and ``table_prefix``.{csv,md}
    (default ``out_prefix``); returns the paths.

    Raises:
        ValueError: the file holds no contact-prediction rows.
    """
    df, prov = read_parquet(metrics_path)
    if not (df["metric"] == "recall").any():
        raise InputError(f"{metrics_path} holds no 'recall' rows: not a potts_proteins metrics file")
    proteins = sorted(df["target"].unique())
    suffix = f" [{config_name} config, commit {prov.get('git_commit', '?')[:8]}]" if config_name else ""
    paths = save_figure(_curves(df, proteins, suffix), out_prefix)
    paths += save_figure(_heatmaps(df, proteins, suffix), f"{out_prefix}_couplings")
    table = summary_table(df)
    caption = (f"GWG Fig. 7 / 12 / 13 reproduction{suffix}. Pairs i < j with j - i >= the configured minimum "
               "separation ranked by ||J_ij||_F over all states (raw: the paper's score; apc: average product "
               "corrected); precision = true contacts among the top k / k, recall = / all contacts (distance < 5 A; "
               "the synthetic benchmark's contact matrix C). coupling_rmse: RMSE of learned vs true J over the "
               "blocks i < j, both in the zero-sum gauge (synthetic benchmark only); train_time_s: fit wall time.")
    paths += save_table(table, table_prefix or out_prefix, caption)
    return paths
