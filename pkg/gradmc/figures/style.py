"""Shared matplotlib set-up: headless backend, paper-like sizes, a fixed colour per sampler name."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from gradmc import sampler_catalog  # noqa: E402
from gradmc.atomic import atomic_path  # noqa: E402
from gradmc.errors import UserError  # noqa: E402

__all__ = ["plt", "sampler_color", "save_figure", "save_table", "UNASSIGNED_COLOR"]

#: One colour per method and per sampler the catalog does not hold, the same in every figure; the samplers'
#: own colours are declared with their kernels (:func:`gradmc.sampler_catalog.colour`). Figure modules take
#: colours only from :func:`sampler_color`.
_COLORS = {
    "Target": "grey",
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
    """The colour of sampler (or method) ``name``, the same in every figure: the method table's, else the
    sampler's declared colour (options ignored: "DMALA(adapt=500)" is drawn as DMALA); :data:`UNASSIGNED_COLOR`
    for a name with neither."""
    if name in _COLORS:
        return _COLORS[name]
    try:
        declared = sampler_catalog.colour(name)
    except UserError:  # not a sampler reference at all (e.g. a method name with parentheses)
        declared = None
    return declared or UNASSIGNED_COLOR


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
