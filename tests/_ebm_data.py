"""A tiny prepared image data set for the deep-EBM tests, shared by the suites."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from gradmc.data.prepare_images import FORMAT


def prepared_images(tmp_path: Path, levels: int = 2, name: str = "static_mnist", n: int = 40,
                    shape: tuple[int, ...] = (6, 5)) -> Path:
    """A tiny prepared data set (the format of gradmc.data.prepare_images) written to ``tmp_path/<name>.npz``:
    ``n`` images of ``shape`` per split, binary (``levels`` 2, pixels on with probability 0.3) or ``levels``
    uniform grey levels, drawn from a fixed seed."""
    g = np.random.default_rng(0)
    if levels == 2:
        splits = {s: (g.random((n, *shape)) < 0.3).astype(np.uint8) for s in ("train", "valid", "test")}
    else:
        splits = {s: g.integers(0, levels, (n, *shape)).astype(np.uint8) for s in ("train", "valid", "test")}
    manifest = {"format": FORMAT, "dataset": name, "levels": levels, "image_shape": list(shape),
                "binarization": "static", "splits": {s: {"shape": list(x.shape)} for s, x in splits.items()}}
    path = tmp_path / f"{name}.npz"
    np.savez(path, manifest=np.array(json.dumps(manifest)), **splits)
    return path
