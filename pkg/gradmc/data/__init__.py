"""Data sets: registry of canonical files with checksums, verified downloads, and loaders.

The data folder is ``$GRADMC_DATA_DIR`` (default ``data``); ``$GRADMC_DATA_BASE_URL`` points downloads at
a mirror. Loaders never download unless asked (``allow_download=True``).

Errors a user can cause are of the :mod:`gradmc.errors` family (the ``gradmc`` command prints them in one
line): a data file that is missing (:class:`~gradmc.errors.MissingDataError`, a FileNotFoundError), not the
registered file or malformed (:class:`~gradmc.errors.DataError`, a ValueError), not downloadable
(:class:`~gradmc.errors.DownloadError`, a ConnectionError), an unusable data folder
(:class:`~gradmc.errors.DataFolderError`, an OSError), and a bad name or option
(:class:`~gradmc.errors.InputError`, a ValueError). Checks that only a caller's bug can fail (a split name, an
argument's type) stay plain ValueError / TypeError.
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
