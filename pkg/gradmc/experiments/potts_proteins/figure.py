"""GWG Fig. 7 / Fig. 12 (contact recall and precision vs k) and Fig. 13 (coupling norms beside the true contacts).

Reads ``results/<config>/potts_proteins/metrics.parquet`` only (see :mod:`gradmc.experiments.potts_proteins`),
which holds one fit per (protein, method, seed). PLM fitted to all rows is deterministic and runs once (with
the first seed); with a subsample it runs once per seed like PCD. Every summary is over the seeds present for
that (protein, method): the mean and a 95% Student-t interval, mean +- t_{0.975, n-1} s / sqrt(n) with s the
sample standard deviation over the n seeds (:func:`seed_interval`); a single seed has no interval (NaN bounds,
no band).

- ``out_prefix``.pdf/.png (Fig. 7 / 12): one column per protein; top row recall vs k, bottom row precision vs
  k, of the top-k pairs ranked by ||J_ij||_F (solid: the paper's raw score; dashed: APC-corrected), for
  PLM, PCD-Gibbs and PCD-GWG (and PCD-DMALA / PCD-DLMC, later samplers, when configured): the mean over seeds at each k
  (line) and its 95% t interval (band, drawn clipped to [0, 1]; none for a single seed); the legend gives each
  method's number of seeds; a dotted line marks k = L.
- ``out_prefix``_couplings.pdf/.png (Fig. 13): one row per protein: the true contact map (grey: unknown),
  then each method's coupling-norm matrix ||J_ij||_F of one fit, that of the lowest seed present (seed 0 in
  the shipped configs; the same seed for every method, so the panels compare fits on the same data), each
  panel on its own colour scale, as in the paper. A single fit, not the mean over seeds: averaging the norms
  would blur the sparse pattern that the figure is there to show, and no fit ever produced it.
- ``table_prefix``.csv/.md: per protein and method, L, the number of seeds, and for top-L/5 and top-L
  precision and recall (raw and APC), coupling RMSE vs the true J (synthetic benchmark, zero-sum gauge),
  iterations and fit wall time: the mean over seeds (column ``<metric>``) and its 95% t interval
  (``<metric>_low``, ``<metric>_high``).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from gradmc.errors import InputError
from gradmc.figures.style import plt, sampler_color, save_figure, save_table
from gradmc.results import read_parquet

__all__ = ["LEVEL", "figure", "summary_table", "matrix", "seed_interval", "curve_table"]

LEVEL = 0.95
"""Coverage of the t intervals over seeds (bands and table)."""

#: Legend, panel and table order: the paper's methods, then PCD-DMALA, PCD-DLMC; any other name present follows, sorted.
_ORDER = ["PLM", "PCD-Gibbs", "PCD-GWG", "PCD-DMALA", "PCD-DLMC"]
_TABLE_METRICS = ("coupling_rmse", "coupling_norm_rmse", "num_iterations", "train_time_s")


def _methods(df: pd.DataFrame) -> list[str]:
    present = set(df["sampler"])
    return [m for m in _ORDER if m in present] + sorted(present - set(_ORDER))


def seed_interval(values, level: float = LEVEL) -> tuple[float, float, float, int]:
    """Mean and Student-t interval of per-seed values.

    Args:
        values: one number per seed (NaNs are dropped).
        level: coverage (0.95).

    Returns:
        (mean, low, high, n): low/high = mean -+ t_{(1+level)/2, n-1} * s / sqrt(n), s the standard deviation
        with ddof = 1; NaN bounds for n = 1 (no interval), all NaN for n = 0; bounds equal to the mean when the
        seeds agree exactly.
    """
    a = np.asarray(values, dtype=float).ravel()
    a = a[~np.isnan(a)]
    n = int(a.size)
    if n == 0:
        return math.nan, math.nan, math.nan, 0
    mean = float(a.mean())
    if n == 1:
        return mean, math.nan, math.nan, 1
    half = float(stats.t.ppf(0.5 + level / 2.0, n - 1) * a.std(ddof=1) / math.sqrt(n))
    return mean, mean - half, mean + half, n


def _per_seed(df: pd.DataFrame, protein: str, method: str, metric: str, k: int | None = None) -> pd.Series:
    """One value per seed (the mean if a seed holds several rows), indexed by seed."""
    m = df[(df["target"] == protein) & (df["sampler"] == method) & (df["metric"] == metric)]
    if k is not None:
        m = m[m["k"] == k]
    return m.groupby("seed")["value"].mean()


def summary_table(df: pd.DataFrame) -> pd.DataFrame:
    """One row per (protein, method): ``L``, ``seeds`` (the number of fits) and, for top-L/5 and top-L
    precision/recall (raw, APC), coupling RMSE (zero-sum gauge; NaN without known J), iterations and fit wall
    time in seconds, the mean over seeds (column named after the metric) and its 95% t interval (``_low``,
    ``_high``; NaN for a single seed), see :func:`seed_interval`."""
    rows = []
    for protein in sorted(df["target"].unique()):
        d = df[df["target"] == protein]
        L = int(d["length"].iloc[0])
        for method in _methods(d):
            row = {"protein": protein, "method": method, "L": L,
                   "seeds": int(d.loc[d["sampler"] == method, "seed"].nunique())}
            cells = [(f"{metric}_top_{label}", metric, k) for label, k in (("L5", max(1, L // 5)), ("L", L))
                     for metric in ("precision", "precision_apc", "recall", "recall_apc")]
            cells += [(metric, metric, None) for metric in _TABLE_METRICS]
            for column, metric, k in cells:
                mean, low, high, _ = seed_interval(_per_seed(d, protein, method, metric, k))
                row.update({column: mean, f"{column}_low": low, f"{column}_high": high})
            rows.append(row)
    return pd.DataFrame(rows)


def curve_table(df: pd.DataFrame, protein: str, method: str, metric: str) -> pd.DataFrame:
    """Per k, the mean over seeds of ``metric`` (e.g. ``recall_apc``) for one (protein, method): columns ``k``,
    ``mean``, ``low``, ``high`` (95% t interval, NaN for a single seed) and ``seeds``, sorted by k."""
    m = df[(df["target"] == protein) & (df["sampler"] == method) & (df["metric"] == metric)]
    per_seed = m.groupby(["k", "seed"])["value"].mean()
    rows = [(int(k), *seed_interval(g.to_numpy())) for k, g in per_seed.groupby(level="k")]
    return pd.DataFrame(rows, columns=["k", "mean", "low", "high", "seeds"])


def _first_seed(df: pd.DataFrame, protein: str, method: str, metric: str) -> int | None:
    m = df[(df["target"] == protein) & (df["sampler"] == method) & (df["metric"] == metric)]
    return int(m["seed"].min()) if len(m) else None


def matrix(df: pd.DataFrame, protein: str, method: str, metric: str, seed: int | None = None) -> np.ndarray | None:
    """The L x L matrix stored as rows (one per cell, columns ``i``, ``j``) of ``metric`` for one fit, or None if
    absent. ``seed``: which fit; None: the lowest seed present (the only one in a single-seed file)."""
    if seed is None:
        seed = _first_seed(df, protein, method, metric)
        if seed is None:
            return None
    m = df[(df["target"] == protein) & (df["sampler"] == method) & (df["metric"] == metric) & (df["seed"] == seed)]
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
                    c = curve_table(d, protein, method, metric)
                    if not len(c):
                        continue
                    n = int(c["seeds"].max())
                    seeds = f"{n} seed{'s' if n != 1 else ''}"
                    label = f"{method} ({seeds})" if style == "-" else f"{method} APC ({seeds})"
                    color = sampler_color(method)
                    ax.plot(c["k"], c["mean"], linestyle=style, color=color, label=label)
                    band = c["low"].notna()
                    if band.any():
                        # precision and recall lie in [0, 1]: the band is drawn clipped to it (the table is not)
                        ax.fill_between(c["k"][band], c["low"][band].clip(0, 1), c["high"][band].clip(0, 1),
                                        color=color, alpha=0.18 if style == "-" else 0.10, linewidth=0)
            ax.axvline(L, color="grey", linestyle=":", linewidth=1)
            ax.set_xlabel("number of predicted contacts k")
            ax.set_ylabel(f"{what} (mean over seeds)")
            ax.set_title(f"{protein} (L = {L})", fontsize=9)
    axes[0, 0].legend(fontsize=7)
    fig.suptitle("Contact prediction from Potts couplings (GWG Fig. 7 / 12): mean over seeds, band = 95% t "
                 f"interval{suffix}", fontsize=10)
    return fig


def _heatmaps(df: pd.DataFrame, proteins: list[str], suffix: str) -> plt.Figure:
    methods = _methods(df)
    fig, axes = plt.subplots(len(proteins), 1 + len(methods), figsize=(3.0 * (1 + len(methods)), 3.0 * len(proteins)),
                             layout="constrained", squeeze=False)
    for row, protein in enumerate(proteins):
        d = df[df["target"] == protein]
        first = _methods(d)[0]
        truth = matrix(d, protein, first, "contact")  # the structure's contacts: the same for every fit
        ax = axes[row, 0]
        ax.imshow(np.ma.masked_invalid(truth), cmap="Greys", vmin=0, vmax=1, interpolation="nearest")
        ax.set_facecolor("lightgrey")
        ax.set_title(f"{protein}: true contacts", fontsize=9)
        for col, method in enumerate(methods, start=1):
            ax = axes[row, col]
            seed = _first_seed(d, protein, method, "coupling_norm")
            if seed is None:
                ax.axis("off")
                continue
            ax.imshow(matrix(d, protein, method, "coupling_norm", seed), cmap="viridis", interpolation="nearest")
            n = int(d.loc[d["sampler"] == method, "seed"].nunique())
            ax.set_title(f"{method}: ||J_ij||, seed {seed} (of {n})", fontsize=9)
        for ax in axes[row]:
            ax.set_xticks([])
            ax.set_yticks([])
    fig.suptitle("Inferred couplings beside the true contact map (GWG Fig. 13): one fit per method, the lowest "
                 f"seed{suffix}", fontsize=10)
    return fig


def figure(metrics_path: str | Path, out_prefix: str | Path, table_prefix: str | Path | None = None,
           config_name: str = "") -> list[Path]:
    """Draw Fig. 7 / 12 (mean over seeds with 95% t bands) and Fig. 13 (the lowest seed's fit) from the metrics
    Parquet; write the summary table (mean and 95% t interval over seeds).

    Writes ``out_prefix``.{pdf,png}, ``out_prefix``_couplings.{pdf,png} and ``table_prefix``.{csv,md}
    (default ``out_prefix``); returns the paths.

    Raises:
        InputError (a ValueError): the file holds no contact-prediction rows.
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
               "blocks i < j, both in the zero-sum gauge (synthetic benchmark only); train_time_s: fit wall time. "
               "Each value is the mean over the `seeds` fits of that protein and method; `_low` / `_high`: its "
               "95% t interval, mean -+ t_{0.975, n-1} s / sqrt(n) (empty for a single fit: PLM on all rows is "
               "deterministic and runs once).")
    paths += save_table(table, table_prefix or out_prefix, caption)
    return paths
