"""Data sets: registry of canonical files with checksums, verified downloads, and loaders.

The data folder is ``$GRADMC_DATA_DIR`` (default ``data``); ``$GRADMC_DATA_BASE_URL`` points downloads at
a mirror. Loaders never download unless asked (``allow_download=True``).
"""

from __future__ import annotations

from gradmc.data.download import fetch
from gradmc.data.image_remotes import IMAGE_REMOTES  # noqa: E402 (after the registry it extends)
from gradmc.data.mnist import (
    load_idx_images,
    load_idx_labels,
    load_mnist_quick,
    load_mnist_thresholded,
    load_static_binarized,
    static_test_labels,
)
from gradmc.data.prepare import prepare_mnist
from gradmc.data.registry import REGISTRY, RemoteFile, data_dir, get_remote

REGISTRY.update(IMAGE_REMOTES)

__all__ = [
    "REGISTRY",
    "RemoteFile",
    "data_dir",
    "get_remote",
    "fetch",
    "load_mnist_quick",
    "load_static_binarized",
    "static_test_labels",
    "load_idx_images",
    "load_idx_labels",
    "load_mnist_thresholded",
    "prepare_mnist",
]
