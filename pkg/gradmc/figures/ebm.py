"""GWG paper Table 2, Fig. 8 and Fig. 14 from the EBM runs (EXPERIMENTS.md A7).

- Table 2: our test log-likelihoods (nats; bits per dimension for 256-level data) next to the paper's
  EBM(GWG) / EBM(Gibbs) numbers and the literature baselines the paper quotes (constants with their
  sources, not reruns). AIS underestimates log Z, so every AIS likelihood is an optimistic (upper)
  estimate; the table says so.
- Fig. 8: samples from each trained model (its replay buffer after training, as the paper's long-run
  samples come from its persistent chains), read from the samples file ``train_ebm`` writes beside its
  checkpoint (:mod:`gradmc.training.ebm_samples`); the figure never loads a model.
- Fig. 14: estimated test log-likelihood vs the number of AIS intermediate distributions.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from gradmc.figures.style import plt, sampler_color, save_figure, save_table
from gradmc.results import read_parquet
from gradmc.training.ebm_samples import read_samples

__all__ = ["PAPER", "LITERATURE", "collect", "table", "figure"]

#: The paper's Table 2 EBM numbers (nats; "—" where not run). Categorical rows' EBM digits are lost in
#: our copy of the paper's text and are left out rather than guessed.
PAPER = {
    "static_mnist": {"GWG": -80.01, "Gibbs-1": -117.17},
    "dynamic_mnist": {"GWG": -80.51, "Gibbs-1": -121.19},
    "omniglot": {"GWG": -94.72, "Gibbs-1": -142.06},
    "caltech": {"GWG": -96.20, "Gibbs-1": -163.50},
}
#: Literature baselines quoted in the paper's Table 2 (VAE: Tomczak & Welling 2018; RBM, DBN: Burda et
#: al. 2015). Binary sets in nats, categorical in bits per dimension. Only values legible in our copy.
LITERATURE = {
    "static_mnist": {"VAE (MLP)": -86.05, "VAE (Conv)": -82.41, "RBM": -86.39, "DBN": -85.67},
    "dynamic_mnist": {"VAE (MLP)": -82.42, "VAE (Conv)": -80.40},
    "omniglot": {"VAE (MLP)": -103.52, "VAE (Conv)": -97.65, "RBM": -100.47, "DBN": -100.78},
    "caltech": {"VAE (MLP)": -112.08, "VAE (Conv)": -106.35},
    "frey": {"VAE (MLP)": 4.61},
    "histopathology": {"VAE (MLP)": 5.82, "VAE (Conv)": 5.59},
}
_CATEGORICAL = ("frey", "histopathology")


def collect(paths: list[str | Path]) -> pd.DataFrame:
    """Concatenate per-run metric files (sorted for a stable file)."""
    frames = [read_parquet(p)[0] for p in paths]
    df = pd.concat(frames, ignore_index=True)
    return df.sort_values(["target", "sampler", "metric", "step"], kind="stable").reset_index(drop=True)


def table(df: pd.DataFrame) -> pd.DataFrame:
    """One row per (data set, model): ours, the paper's and the literature's numbers with units."""
    rows = []
    for dataset in sorted(df["target"].unique()):
        d = df[df["target"] == dataset]
        categorical = dataset in _CATEGORICAL
        unit = "bits/dim (lower is better)" if categorical else "nats (higher is better)"
        metric = "test_bits_per_dim" if categorical else "test_log_likelihood"
        for sampler in sorted(d["sampler"].unique()):
            s = d[d["sampler"] == sampler].set_index("metric")["value"]
            rows.append({"dataset": dataset, "model": f"EBM ({sampler})", "source": "this run", "unit": unit,
                         "value": float(s.get(metric, math.nan)), "ais_log_z_se": float(s.get("log_z_se", math.nan)),
                         "train_iterations": float(s.get("train_iterations", math.nan)),
                         "train_seconds": float(s.get("train_seconds", math.nan))})
            if sampler in PAPER.get(dataset, {}):
                rows.append({"dataset": dataset, "model": f"EBM ({sampler})", "source": "paper", "unit": unit,
                             "value": PAPER[dataset][sampler]})
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


def figure(metrics: list[str | Path], out: str | Path, table_out: str | Path, *, config_name: str = "",
           samples: dict[str, tuple[str, tuple[int, int]]] | None = None) -> list[Path]:
    """Write Table 2 (TABLE.csv/.md), Fig. 14 (OUT_fig14_ais.pdf/.png) and, given ``samples`` (label ->
    (samples file written by ``train_ebm`` beside its checkpoint, (H, W))), Fig. 8 (OUT_fig8_samples.pdf/.png).

    Raises:
        ValueError: a samples file that is not one, or whose rows are not H x W images.
    """
    df = collect(metrics)
    suffix = f" [{config_name} config]" if config_name else ""
    tab = table(df)
    caption = (f"GWG Table 2 reproduction{suffix}: test log-likelihood by AIS (linear schedule, GWG transitions, "
               "data-fitted base). AIS underestimates log Z, so each likelihood is an optimistic (upper) estimate. "
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
