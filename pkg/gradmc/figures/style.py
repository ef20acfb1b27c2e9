"""Shared matplotlib set-up: headless backend, paper-like sizes, a fixed colour per sampler name."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from gradmc.atomic import atomic_path  # noqa: E402

__all__ = ["plt", "sampler_color", "save_figure", "save_table", "UNASSIGNED_COLOR"]

#: One colour per sampler (and per fitting method), the same in every figure; no two names share one.
#: Figure modules take colours only from :func:`sampler_color`.
_COLORS = {
    # GWG paper samplers
    "Gibbs-1": "tab:blue", "Gibbs-2": "tab:orange", "HB-10-1": "tab:green", "GWG": "tab:red",
    "GWG-3": "tab:purple", "GWG-5": "tab:brown", "BlockGibbs": "black", "Target": "grey",
    "Block-HB": "tab:olive", "R-MALA": "tab:cyan", "R-HMC": "tab:pink", "D-SVGD": "slategray",
    # samplers after GWG (issue 17)
    "PAS-3": "darkorange", "DMALA": "darkgreen", "DULA": "yellowgreen", "DLMC": "mediumblue",
    "DLMC-Euler": "cornflowerblue", "ACS": "magenta",
    # Potts fitting methods (GWG Fig. 7)
    "PLM": "darkgoldenrod", "PCD-Gibbs": "royalblue", "PCD-GWG": "firebrick", "PCD-DMALA": "chocolate",
    "PCD-DLMC": "darkcyan",
    # text EBM baselines (GWG App. J; the EBM itself is drawn in GWG's colour)
    "LSTM LM": "darkviolet", "unigram": "saddlebrown", "uniform": "dimgray",
    # Kernel HMC paper samplers
    "HMC": "navy", "KMC": "crimson", "KAMH": "darkorchid", "RW": "seagreen", "HABC": "teal",
}
#: Colour of a name missing from the table (a new sampler shows up, but visibly unassigned).
UNASSIGNED_COLOR = "lightgray"


def sampler_color(name: str) -> str:
    """The colour of sampler (or method) ``name``, the same in every figure; :data:`UNASSIGNED_COLOR` for a
    name not in the table."""
    return _COLORS.get(name, UNASSIGNED_COLOR)


def save_figure(fig, prefix: str | Path) -> list[Path]:
    """Write ``prefix``.pdf and ``prefix``.png atomically; close the figure; return the paths."""
    paths = []
    for ext in ("pdf", "png"):
        path = Path(f"{prefix}.{ext}")
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format=ext, dpi=150, bbox_inches="tight")
        paths.append(path)
    plt.close(fig)
    return paths


def save_table(df, prefix: str | Path, caption: str) -> list[Path]:
    """Write the plotted numbers as ``prefix``.csv and ``prefix``.md (with ``caption``) atomically."""
    csv, md = Path(f"{prefix}.csv"), Path(f"{prefix}.md")
    with atomic_path(csv) as tmp:
        df.to_csv(tmp, index=False)
    with atomic_path(md) as tmp:
        tmp.write_text(f"{caption}\n\n{df.to_markdown(index=False, floatfmt='.4g')}\n")
    return [csv, md]
