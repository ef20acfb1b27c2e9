"""Kernel HMC Fig. 3: acceptance rate, ||E_hat[x]|| and minimum ESS vs n = m on the 8-D banana.

Reads ``results/<config>/kmc_banana/metrics.parquet`` only (see :mod:`gradmc.experiments.kmc_banana`).

Lines are medians over runs. Bands: acceptance and ||E_hat[x]|| show the 10-90% quantiles over runs (the
spread of single runs); the minimum-ESS panel shows the 95% BOOTSTRAP PERCENTILE INTERVAL OF THE MEDIAN over
runs (:func:`bootstrap_median_interval`, 2,000 resamples of the runs, fixed seed), so a trend in n can be
judged against the uncertainty of the median itself. When the experiment cross-validated KMC's (s, lambda),
a fourth panel shows the chosen length scale s (median and 10-90% quantiles over runs) with the chosen
lambda's median as text. The table holds median, q10, q90, ci_lo, ci_hi (the 95% interval of the median)
and runs for every (sampler, n, metric), the ``surrogate_*`` metrics included.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from gradmc.figures.style import plt, sampler_color, save_figure, save_table
from gradmc.results import read_parquet

__all__ = ["figure", "summary_table", "bootstrap_median_interval", "METRICS", "CV_METRICS"]

METRICS = (("acceptance_rate", "Acceptance rate"), ("mean_norm", r"$\|\hat{E}[x]\|$"), ("min_ess", "Minimum ESS"))
#: KMC's cross-validated surrogate parameters (rows only when the experiment ran the CV).
CV_METRICS = ("surrogate_lengthscale", "surrogate_sigma", "surrogate_lambda")
#: The metric whose band is the 95% interval of the median (the others: 10-90% quantiles).
CI_METRIC = "min_ess"


def bootstrap_median_interval(values, level: float = 0.95, num_resamples: int = 2000,
                              seed: int = 0) -> tuple[float, float]:
    """Percentile-bootstrap interval of the median of ``values`` (R,) over runs (NaNs dropped first).

    Resamples the R finite values with replacement ``num_resamples`` times (numpy generator seeded with
    ``seed``: the same values give the same interval) and returns the (1 - level)/2 and (1 + level)/2
    quantiles of the resampled medians; (NaN, NaN) with no finite value; the value twice with one.

    Raises:
        ValueError: level not in (0, 1) or num_resamples < 1.
    """
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")
    if num_resamples < 1:
        raise ValueError(f"num_resamples must be >= 1, got {num_resamples}")
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return float("nan"), float("nan")
    idx = np.random.default_rng(seed).integers(0, v.size, size=(num_resamples, v.size))
    medians = np.median(v[idx], axis=1)
    lo, hi = np.quantile(medians, [(1.0 - level) / 2.0, (1.0 + level) / 2.0])
    return float(lo), float(hi)


def summary_table(df: pd.DataFrame) -> pd.DataFrame:
    """Per (sampler, n, metric): median, 10% and 90% quantiles over runs, the 95% bootstrap interval of the
    median (ci_lo, ci_hi; :func:`bootstrap_median_interval`) and the number of runs (non-NaN values).

    Covers :data:`METRICS` and, where present, :data:`CV_METRICS`.
    """
    d = df[df["metric"].isin([m for m, _ in METRICS] + list(CV_METRICS))]
    g = d.groupby(["sampler", "n", "metric"])["value"]
    ci = g.apply(lambda v: bootstrap_median_interval(v.to_numpy()))
    out = pd.DataFrame({"median": g.median(), "q10": g.quantile(0.1), "q90": g.quantile(0.9),
                        "ci_lo": ci.map(lambda t: t[0]), "ci_hi": ci.map(lambda t: t[1]),
                        "runs": g.count()}).reset_index()
    return out.sort_values(["metric", "sampler", "n"], kind="stable").reset_index(drop=True)


def figure(metrics_path: str | Path, out_prefix: str | Path, table_prefix: str | Path | None = None,
           config_name: str = "") -> list[Path]:
    """Draw Fig. 3 from the metrics Parquet; writes ``out_prefix``.{pdf,png} and ``table_prefix``.{csv,md}."""
    df, prov = read_parquet(metrics_path)
    table = summary_table(df)
    has_cv = bool((table["metric"] == "surrogate_lengthscale").any())
    fig, axes = plt.subplots(1, 3 + has_cv, figsize=(13 + 4 * has_cv, 3.6), layout="constrained")
    for ax, (metric, label) in zip(axes, METRICS, strict=False):
        t = table[table["metric"] == metric]
        lo, hi = ("ci_lo", "ci_hi") if metric == CI_METRIC else ("q10", "q90")
        plotted_curve = False
        for name in sorted(t["sampler"].unique()):
            s = t[t["sampler"] == name]
            if (s["n"] > 0).any():  # history-based samplers: curves over n
                s = s[s["n"] > 0]
                ax.plot(s["n"], s["median"], marker="o", color=sampler_color(name), label=name)
                plotted_curve |= bool(s["median"].notna().any())
                ax.fill_between(s["n"], s[lo], s[hi], color=sampler_color(name), alpha=0.2)
            else:  # reference samplers: horizontal median and band
                row = s.iloc[0]
                ax.axhline(row["median"], color=sampler_color(name), linestyle="--", label=name)
                ax.axhspan(row[lo], row[hi], color=sampler_color(name), alpha=0.1)
        if plotted_curve:  # a log axis needs finite data (tiny runs can leave ESS undefined: NaN)
            ax.set_xscale("log")
        ax.set_xlabel("n = m")
        ax.set_title(label + (" (band: 95% CI of median)" if metric == CI_METRIC else ""))
    if has_cv:
        _cv_panel(axes[3], table)
    axes[0].legend(fontsize=8)
    suffix = f" [{config_name} config, commit {prov.get('git_commit', '?')[:8]}]" if config_name else ""
    fig.suptitle(f"8-D banana (KMC Fig. 3){suffix}", fontsize=10)
    runs = int(df[df["metric"] == "min_ess"]["seed"].nunique())
    caption = (f"KMC Fig. 3 reproduction{suffix}. Lines: median over {runs} runs; bands: 10-90% quantiles over "
               "runs, except minimum ESS: 95% percentile-bootstrap interval of the median over runs. "
               "KMC finite vs n = m (history size = number of random features); HMC and RW do not depend on n "
               "(dashed lines). Acceptance and ESS over the kept iterations after burn-in; ESS: ArviZ bulk, "
               "minimum over dimensions, per run."
               + (" Right: KMC's (s, lambda) chosen by k-fold score-matching CV on the n history points, per run "
                  "(median and 10-90% quantiles of s; median lambda in the labels)." if has_cv else ""))
    paths = save_figure(fig, out_prefix)
    paths += save_table(table, table_prefix or out_prefix, caption)
    return paths


def _cv_panel(ax, table: pd.DataFrame) -> None:
    """KMC's chosen length scale s vs n (median, 10-90% band), median chosen lambda written at each point."""
    s = table[(table["metric"] == "surrogate_lengthscale") & (table["sampler"] == "KMC")]
    lam = table[(table["metric"] == "surrogate_lambda") & (table["sampler"] == "KMC")].set_index("n")["median"]
    ax.plot(s["n"], s["median"], marker="o", color=sampler_color("KMC"), label="KMC s")
    ax.fill_between(s["n"], s["q10"], s["q90"], color=sampler_color("KMC"), alpha=0.2)
    for n, med in zip(s["n"], s["median"], strict=True):
        if n in lam.index and np.isfinite(med):
            ax.annotate(f"{lam[n]:.0e}", (n, med), textcoords="offset points", xytext=(0, 6), fontsize=7,
                        ha="center")
    if s["median"].notna().any():
        ax.set_xscale("log")
        ax.set_yscale("log")
        ticks = sorted({float(v) for v in s["median"] if np.isfinite(v)})  # grid values (medians of a grid)
        ax.set_yticks(ticks, [f"{t:g}" for t in ticks])
        ax.minorticks_off()
        ax.margins(y=0.2)
    ax.set_xlabel("n = m")
    ax.set_title("CV choice: length scale s (label: lambda)")
