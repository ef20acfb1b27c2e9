"""Frey faces (Roweis; GWG paper Table 2, categorical with 256 levels, reported in bits per dimension).

1965 grey images of 28 rows x 20 columns, uint8 levels 0..255 kept as they are (the categorical EBM
embeds each one-hot level). Two files are read:

- canonical ``frey_rawface.mat``: key ``ff`` uint8 (560, 1965), one image per column, row-major, so
  ``images = ff.T.reshape(-1, 28, 20)``;
- our conversion ``frey_faces_uint8.npz``: key ``images`` uint8 (1965, 28, 20) (checksum-verified).

There is no canonical split: ``gradmc.data.prepare_images`` draws a fixed seeded permutation and uses
the sizes of Tomczak & Welling (2018): 1565 train / 200 validation / 200 test.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from gradmc.data.image_common import check_level_images, fetch_and_parse, folder, read_mat
from gradmc.data.image_remotes import FREY_MAT, FREY_NPZ
from gradmc.data.registry import RemoteFile
from gradmc.errors import DataError, InputError, MissingDataError

__all__ = ["FREY_SHAPE", "parse_frey", "frey_remote", "load_frey_faces"]

FREY_SHAPE = (28, 20)
_PIXELS = FREY_SHAPE[0] * FREY_SHAPE[1]


def parse_frey(path: str | os.PathLike) -> np.ndarray:
    """Frey faces from ``frey_rawface.mat`` (key ``ff``) or ``frey_faces_uint8.npz`` (key ``images``),
    chosen by the file suffix.

    Returns:
        (N, 28, 20) uint8 grey levels 0..255 (N = 1965 in the canonical file).

    Raises:
        ValueError: unreadable file, missing key, wrong shape (``ff`` must be (560, N), ``images``
            (N, 28, 20)) or a dtype other than uint8.
    """
    path = Path(path)
    if path.suffix == ".npz":
        with np.load(path, allow_pickle=False) as npz:
            if "images" not in npz.files:
                raise DataError(f"{path}: missing key 'images'; the file has {npz.files}")
            images = npz["images"]
        if images.shape[1:] != FREY_SHAPE:
            raise DataError(f"{path}['images']: expected shape (N, 28, 20), got {images.shape}")
        return check_level_images(images, where=f"{path}['images']")
    ff = read_mat(path, ("ff",))["ff"]
    if ff.ndim != 2 or ff.shape[0] != _PIXELS or ff.dtype != np.uint8:
        raise DataError(f"{path}['ff']: expected uint8 of shape ({_PIXELS}, N), got {ff.dtype} {ff.shape}")
    return np.ascontiguousarray(ff.T.reshape(-1, *FREY_SHAPE))


def frey_remote(data_dir: str | os.PathLike | None = None, source: str = "auto") -> RemoteFile:
    """The Frey file to read: ``FREY_NPZ`` for source "npz", ``FREY_MAT`` for "mat"; for "auto" the
    ``.npz`` when it is in the data folder, else the canonical ``.mat``.

    Raises:
        ValueError: unknown ``source``.
    """
    if source not in ("auto", "npz", "mat"):
        raise InputError(f"source must be 'auto', 'npz' or 'mat', got {source!r}")
    if source == "npz" or (source == "auto" and (folder(data_dir) / FREY_NPZ.relpath).exists()):
        return FREY_NPZ
    return FREY_MAT


def load_frey_faces(
    data_dir: str | os.PathLike | None = None, *, source: str = "auto", allow_download: bool = False,
    base_url: str | None = None,
) -> np.ndarray:
    """All Frey faces, (N, 28, 20) uint8 levels 0..255, from the file :func:`frey_remote` picks
    (checksum-verified; the ``.mat`` is downloaded when allowed, and removed again if it does not parse).

    Raises:
        FileNotFoundError: the file is missing; names it, its URL and the alternative file.
        ValueError: unknown ``source``, verification or parse failure (see :func:`parse_frey`).
    """
    remote = frey_remote(data_dir, source)
    try:
        return fetch_and_parse(remote, data_dir, parse_frey, allow_download=allow_download, base_url=base_url)
    except FileNotFoundError as err:
        if remote is FREY_NPZ:
            raise MissingDataError(f"{err} (or read the canonical {FREY_MAT.filename} from {FREY_MAT.url} "
                                    "with source='mat')") from None
        if source == "auto":
            raise MissingDataError(f"{err} ({FREY_NPZ.filename} is also accepted)") from None
        raise
