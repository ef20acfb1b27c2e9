"""Caltech-101 Silhouettes, 28x28 (Marlin et al. 2010; GWG paper Table 2, binary).

Canonical file ``caltech/caltech101_silhouettes_28_split1.mat`` (MATLAB v5) with ``train_data`` (4100, 784),
``val_data`` (2264, 784) and ``test_data`` (2307, 784) in {0, 1}, one image per ROW stored in column-major
(MATLAB) order, 0 = silhouette (black on white). The VAE/GWG loaders (Tomczak & Welling 2018) use
``1 - x`` so that 1 = silhouette; so do we. The split is the file's own (standard): train/val/test.
"""

from __future__ import annotations

import os

import numpy as np

from gradmc.data.image_common import check_binary_images, column_major_to_images, fetch_and_parse, read_mat
from gradmc.data.image_remotes import CALTECH_MAT
from gradmc.errors import DataError

__all__ = ["CALTECH_KEYS", "parse_caltech", "load_caltech"]

CALTECH_KEYS = {"train": "train_data", "valid": "val_data", "test": "test_data"}


def parse_caltech(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """Parse the Caltech-101 Silhouettes ``.mat``.

    Returns:
        ``{"train", "valid", "test"}`` -> (N, 28, 28) uint8 in {0, 1}, 1 = silhouette (4100 / 2264 / 2307
        images in the canonical file).

    Raises:
        ValueError: unreadable file, a missing key, a matrix not (N, 784), or a value other than 0/1.
    """
    mat = read_mat(path, tuple(CALTECH_KEYS.values()))
    out = {}
    for split, key in CALTECH_KEYS.items():
        where = f"{path}[{key!r}]"
        x = mat[key]
        if x.size and not np.isin(x, (0, 1)).all():
            raise DataError(f"{where}: expected binary values in {{0, 1}}, found {np.unique(x)[:8]}")
        images = column_major_to_images(x, where=where)
        out[split] = check_binary_images(1 - images.astype(np.int16), where=where)
    return out


def load_caltech(
    data_dir: str | os.PathLike | None = None, *, allow_download: bool = False, base_url: str | None = None
) -> dict[str, np.ndarray]:
    """:func:`parse_caltech` of the canonical file in the data folder (downloaded when allowed; a download
    that does not parse is removed again).

    Raises:
        FileNotFoundError: the file is missing (and not downloaded); names it and its URL.
        ValueError: verification or parse failure.
    """
    return fetch_and_parse(CALTECH_MAT, data_dir, parse_caltech, allow_download=allow_download, base_url=base_url)
