"""GWG paper Table 2, Fig. 8 and Fig. 14 from the EBM runs (EXPERIMENTS.md A7).

- Table 2: our test log-likelihoods (nats; bits per dimension for 256-level data), one row per trained
  sampler (GWG, Gibbs-1, DMALA), next to the paper's EBM(GWG) / EBM(Gibbs) numbers, the later papers' numbers
  for the later samplers (:data:`gradmc.specs.ebm_samplers.LATER_PAPERS`: DMALA, Zhang et al. 2022) and
  the literature baselines the paper quotes (constants with their sources, not reruns). AIS underestimates
  log Z, so every AIS likelihood is an optimistic (upper) estimate; the table says so.
- Fig. 8: samples from each trained model (its replay buffer after training, as the paper's long-run
  samples come from its persistent chains), read from the samples file ``train_ebm`` writes beside its
  checkpoint (:mod:`gradmc.training.ebm_samples`); the figure never loads a model.
- Fig. 14: estimated test log-likelihood vs the number of AIS intermediate distributions.
- Learning curve (not a paper figure; the issue's cost axis): validation log-likelihood of the EMA weights
  vs training seconds, from training's own short validation AIS (``ebm.ais.validation_intermediate``
  levels), and, at the end of training, the test estimate with the full AIS. Few levels over-estimate the
  likelihood (AIS's upward bias), so the curve lies above the final estimate by that bias; the figure
  draws both so the gap is visible, and the curve is never read as a test number.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from gradmc.config import for_dataset
from gradmc.experiments.ebm.claims import (
    PAPER_AIS_LEVELS,
    PAPER_BLOCKS,
    PAPER_CHANNELS,
    PAPER_GWG_STEPS,
    PAPER_ITERATIONS,
    TABLE2_BASELINES,
    TABLE2_NATS,
)
from gradmc.figures.style import plt, sampler_color, save_figure, save_table
from gradmc.results import read_parquet
from gradmc.specs.ebm_samplers import CATEGORICAL_DATASETS, LATER_PAPERS, sampler_steps
from gradmc.training.ebm_samples import read_samples

__all__ = ["PAPER", "LATER_PAPERS", "LITERATURE", "combine_runs", "table", "figure"]

#: The paper's Table 2 EBM numbers (nats; "—" where not run), owned by the claims (:data:`TABLE2_NATS`).
#: Categorical rows' EBM digits are lost in our copy of the paper's text and are left out rather than guessed.
PAPER = TABLE2_NATS
#: Literature baselines quoted in the paper's Table 2 (VAE: Tomczak & Welling 2018; RBM, DBN: Burda et
#: al. 2015): the binary sets' (nats) are the claims' :data:`TABLE2_BASELINES`; the categorical sets' (bits per
#: dimension, no claim reads them) are here. Only values legible in our copy.
LITERATURE = {
    **TABLE2_BASELINES,
    "frey": {"VAE (MLP)": 4.61},
    "histopathology": {"VAE (MLP)": 5.82, "VAE (Conv)": 5.59},
}
#: The paper's training and AIS settings (GWG App. I; EXPERIMENTS.md A7), against which each run's deviations
#: are listed in the table: (section, key, paper value, label). Buffer: 10,000 for the MNISTs and Omniglot.
PAPER_SETTINGS = (("train", "iterations", PAPER_ITERATIONS, "iterations"),
                  ("train", "num_steps", PAPER_GWG_STEPS, "sampler steps"),
                  ("train", "batch_size", 100, "batch"), ("train", "buffer_size", 10_000, "buffer"),
                  ("train", "lr", 1e-4, "lr"), ("train", "warmup", 10_000, "warm-up"),
                  ("train", "ema_decay", 0.999, "EMA decay"), ("train", "energy_l2", 0.0, "energy_l2"),
                  ("train", "lr_decay", "none", "lr decay"), ("model", "channels", PAPER_CHANNELS, "channels"),
                  ("model", "num_blocks", PAPER_BLOCKS, "residual blocks"),
                  ("ais", "num_intermediate", PAPER_AIS_LEVELS, "AIS levels"))
_SMALL_BUFFER = ("caltech", "frey", "histopathology")  # the paper's buffer of 1,000


def deviations(config: dict, dataset: str, iterations: float | None = None, sampler: str | None = None) -> str:
    """The run's departures from :data:`PAPER_SETTINGS` for ``dataset``, e.g. "iterations 2000 (paper 50,000);
    ...", from the ``ebm`` section of the config its metrics file carries; "" when it has none. ``iterations``:
    the run's own count when it differs from the config's (an equal wall-clock Gibbs run stops on GWG's time).
    ``sampler``: the run's sampler, whose steps per iteration are ``ebm.train.steps_by_sampler[sampler]`` when the
    config names it there (:func:`gradmc.specs.ebm_samplers.sampler_steps`); Gibbs-1's are not compared with
    GWG's 40 (the paper's Gibbs count is lost from its text) but listed as they are."""

    ebm = (config or {}).get("ebm") or {}
    parts = []
    for section, key, paper, label in PAPER_SETTINGS:
        part = ebm.get(section) or {}
        ours = (for_dataset(part, dataset) if section != "model" else part).get(key)
        if key == "num_steps" and sampler is not None and ours is not None:
            ours = sampler_steps(for_dataset(part, dataset), sampler)
            if sampler == "Gibbs-1":
                parts.append(f"Gibbs steps {ours:,} (paper: count lost from its text)")
                continue
        if key == "buffer_size":
            ours = (part.get("buffer_sizes") or {}).get(dataset, ours)
            paper = 1_000 if dataset in _SMALL_BUFFER else paper
        if key == "iterations" and iterations is not None and math.isfinite(iterations) and int(iterations) != ours:
            parts.append(f"{label} {int(iterations):,} (equal wall-clock with GWG; paper {paper:,})")
            continue
        if ours is not None and ours != paper:
            parts.append(f"{label} {ours:,} (paper {paper:,})" if isinstance(paper, int) and isinstance(ours, int)
                         else f"{label} {ours:g} (paper {paper:g})" if not isinstance(paper, str)
                         else f"{label} {ours} (paper {paper})")
    return "; ".join(parts)


def combine_runs(paths: list[str | Path]) -> pd.DataFrame:
    """Concatenate per-run metric files (sorted for a stable file)."""
    frames = [read_parquet(p)[0] for p in paths]
    df = pd.concat(frames, ignore_index=True)
    return df.sort_values(["target", "sampler", "metric", "step"], kind="stable").reset_index(drop=True)


def _doubling(d: pd.DataFrame, nats_per_unit: float = 1.0, unit: str = "nats") -> str:
    """"K' -> K levels: change" of the last AIS doubling in one run's rows (Fig. 14), or "". The change is
    divided by ``nats_per_unit`` (D log 2 for bits per dimension, where a likelihood gain is a bpd loss)."""
    conv = d[d["metric"] == "convergence_log_likelihood"].sort_values("step")
    if len(conv) < 2:
        return ""
    (k0, v0), (k1, v1) = conv[["step", "value"]].iloc[-2], conv[["step", "value"]].iloc[-1]
    sign = -1.0 if unit != "nats" else 1.0
    return f"{int(k0)} -> {int(k1)} levels: {sign * (v1 - v0) / nats_per_unit:+.3g} {unit}"


def table(df: pd.DataFrame, settings: dict | None = None) -> pd.DataFrame:
    """One row per (data set, model): ours (one per trained sampler), the paper's (GWG Table 2), the later
    papers' (:data:`gradmc.specs.ebm_samplers.LATER_PAPERS`) and the literature's numbers with units; our rows
    carry the last AIS doubling's change and, from ``settings`` ((data set, sampler) -> the run's config),
    its deviations from the paper's settings (:func:`deviations`); the data-fitted base's exact test
    log-likelihood is a row of its own."""
    rows = []
    for dataset in sorted(df["target"].unique()):
        d = df[df["target"] == dataset]
        categorical = dataset in CATEGORICAL_DATASETS
        unit = "bits/dim (lower is better)" if categorical else "nats (higher is better)"
        metric = "test_bits_per_dim" if categorical else "test_log_likelihood"
        for sampler in sorted(d["sampler"].unique()):
            s = d[d["sampler"] == sampler].set_index("metric")["value"]
            # bits per dimension = -LL / (D log 2): the same scale for the bound and the doubling
            per = (-float(s.get("test_log_likelihood", math.nan)) / float(s.get("test_bits_per_dim", math.nan))
                   if categorical else 1.0)
            ll, hard = float(s.get("test_log_likelihood", math.nan)), float(s.get("test_log_likelihood_upper_bound",
                                                                                   math.nan))
            note = deviations((settings or {}).get((dataset, sampler), {}), dataset,
                              float(s.get("train_iterations", math.nan)), sampler)
            if ll > hard:  # NaN compares False
                note = (f"INVALID: the AIS estimate lies above the hard bound {hard:.2f} nats, so it is wrong (AIS "
                        f"missed the model's mass; the true value is at most the bound); {note}")
            rows.append({"dataset": dataset, "model": f"EBM ({sampler})", "source": "this run", "unit": unit,
                         "value": float(s.get(metric, math.nan)), "ais_log_z_se": float(s.get("log_z_se", math.nan)),
                         "train_iterations": float(s.get("train_iterations", math.nan)),
                         "train_seconds": float(s.get("train_seconds", math.nan)),
                         "ais_doubling": _doubling(d[d["sampler"] == sampler], per,
                                                   "bits/dim" if categorical else "nats"),
                         "hard_upper_bound": -hard / per if categorical else hard,
                         "note": note})
            if sampler in PAPER.get(dataset, {}):
                rows.append({"dataset": dataset, "model": f"EBM ({sampler})", "source": "paper", "unit": unit,
                             "value": PAPER[dataset][sampler]})
            if sampler in LATER_PAPERS.get(dataset, {}):
                value, source = LATER_PAPERS[dataset][sampler]
                rows.append({"dataset": dataset, "model": f"EBM ({sampler})", "source": f"paper ({source})",
                             "unit": unit, "value": value})
        base = d[d["metric"] == "base_test_log_likelihood"]["value"]
        if len(base) and not categorical:
            rows.append({"dataset": dataset, "model": "data-fitted Bernoulli base", "source": "this run (exact)",
                         "unit": unit, "value": float(base.iloc[0])})
        if categorical and "Gibbs-1" not in set(d["sampler"]):
            rows.append({"dataset": dataset, "model": "EBM (Gibbs-1)", "source": "not run", "unit": unit,
                         "value": math.nan, "note": "infeasible: 256 energy evaluations per pixel (paper Sec. 5.5)"})
        for model, value in LITERATURE.get(dataset, {}).items():
            rows.append({"dataset": dataset, "model": model, "source": "literature (cited in the paper)",
                         "unit": unit, "value": value})
    return pd.DataFrame(rows)


def _grid(images: np.ndarray, ncols: int = 8) -> np.ndarray:
    n, h, w = images.shape
    nrows = math.ceil(n / ncols)
    out = np.ones((nrows * (h + 1) + 1, ncols * (w + 1) + 1))
    for i, img in enumerate(images):
        r, c = divmod(i, ncols)
        out[1 + r * (h + 1): 1 + r * (h + 1) + h, 1 + c * (w + 1): 1 + c * (w + 1) + w] = img
    return out


def _learning_curve(df: pd.DataFrame, out: str, suffix: str) -> list:
    """Validation log-likelihood vs training seconds per data set and sampler, with the final test estimate."""
    curve = df[df["metric"] == "learning_curve_log_likelihood"]
    datasets = sorted(curve["target"].unique())
    fig, axes = plt.subplots(1, max(len(datasets), 1), figsize=(4.5 * max(len(datasets), 1), 3.4), squeeze=False)
    for ax, dataset in zip(axes[0], datasets, strict=False):
        d = df[df["target"] == dataset]
        for sampler in sorted(curve[curve["target"] == dataset]["sampler"].unique()):
            c = curve[(curve["target"] == dataset) & (curve["sampler"] == sampler)].sort_values("step")
            color = sampler_color(sampler)
            ax.plot(c["wall_time_s"], c["value"], marker=".", color=color, label=f"{sampler}: validation, short AIS")
            s = d[d["sampler"] == sampler].set_index("metric")
            if {"test_log_likelihood", "train_seconds"} <= set(s.index):
                levels = int(s.loc["test_log_likelihood", "step"])
                ax.errorbar([float(s.loc["train_seconds", "value"])], [float(s.loc["test_log_likelihood", "value"])],
                            yerr=[1.96 * float(s["value"].get("test_log_likelihood_se", 0.0))], marker="*",
                            markersize=10, color=color, linestyle="none", label=f"{sampler}: test, {levels} levels")
        ax.set_xlabel("training seconds (sampler + update)")
        ax.set_ylabel("log-likelihood estimate (nats)")
        ax.set_title(dataset, fontsize=9)
        ax.legend(fontsize=7)
    fig.suptitle(f"EBM learning curve: short validation AIS (optimistic) and the final test AIS{suffix}", fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.94))
    return list(save_figure(fig, out))


def figure(metrics: list[str | Path], out: str | Path, table_out: str | Path, *, config_name: str = "",
           samples: dict[str, tuple[str, tuple[int, int]]] | None = None) -> list[Path]:
    """Write Table 2 (TABLE.csv/.md), Fig. 14 (OUT_fig14_ais.pdf/.png), the learning curve
    (OUT_ebm_learning_curve.pdf/.png; module docstring) and, given ``samples`` (label ->
    (samples file written by ``train_ebm`` beside its checkpoint, (H, W))), Fig. 8 (OUT_fig8_samples.pdf/.png).

    Raises:
        ValueError: a samples file that is not one, or whose rows are not H x W images.
    """
    df = combine_runs(metrics)
    suffix = f" [{config_name} config]" if config_name else ""
    settings = {}
    for path in metrics:
        frame, prov = read_parquet(path)
        for dataset, sampler in frame[["target", "sampler"]].drop_duplicates().itertuples(index=False):
            settings[(dataset, sampler)] = prov.get("config") or {}
    tab = table(df, settings)
    caption = (f"GWG Table 2 reproduction{suffix}: test log-likelihood by AIS (linear schedule, GWG transitions, "
               "data-fitted base). AIS underestimates log Z, so each likelihood is an optimistic (upper) estimate; "
               "hard_upper_bound is mean f(x_test) minus logsumexp f over the training images, the replay buffer and "
               "the states of a low-temperature GWG search for the model's modes (ebm.ais.bound_search_*), "
               "a bound the true log-likelihood cannot exceed (an AIS value above it is wrong and marked INVALID; "
               "for bits/dim rows it is a lower bound on bits/dim). "
               "Paper and literature rows are quoted constants.")
    paths = list(save_table(tab, table_out, caption=caption))
    conv = df[df["metric"] == "convergence_log_likelihood"]
    fig, axes = plt.subplots(1, max(conv["target"].nunique(), 1), figsize=(4.5 * max(conv["target"].nunique(), 1), 3.4),
                             squeeze=False)
    for ax, dataset in zip(axes[0], sorted(conv["target"].unique()), strict=False):
        for sampler in sorted(conv[conv["target"] == dataset]["sampler"].unique()):
            s = conv[(conv["target"] == dataset) & (conv["sampler"] == sampler)].sort_values("step")
            ax.plot(s["step"], s["value"], marker="o", color=sampler_color(sampler), label=f"EBM ({sampler})")
        ax.set_xscale("log")
        ax.set_xlabel("AIS intermediate distributions")
        ax.set_ylabel("test log-likelihood estimate (nats)")
        ax.set_title(dataset, fontsize=9)
        ax.legend(fontsize=7)
    fig.suptitle(f"AIS convergence (GWG Fig. 14){suffix}", fontsize=10)
    paths += save_figure(fig, f"{out}_fig14_ais")
    paths += _learning_curve(df, f"{out}_ebm_learning_curve", suffix)
    if samples:
        fig, axes = plt.subplots(1, len(samples), figsize=(3.2 * len(samples), 3.4), squeeze=False)
        for ax, (label, (path, shape)) in zip(axes[0], samples.items(), strict=True):
            ax.imshow(_grid(read_samples(path, shape)), cmap="gray_r" if "mnist" in label or "omniglot" in label
                      or "caltech" in label else "gray", vmin=0, vmax=1)
            ax.set_title(label, fontsize=8)
            ax.axis("off")
        fig.suptitle(f"Replay-buffer samples (GWG Fig. 8){suffix}", fontsize=10)
        paths += save_figure(fig, f"{out}_fig8_samples")
    return [Path(p) for p in paths]
