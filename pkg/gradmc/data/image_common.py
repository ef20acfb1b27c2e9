"""Shared helpers of the image loaders: data folder, checked ``.mat`` reading, pixel-layout and level
conversions.

Conventions of every image loader (GWG paper Sec. 5.5, Appendix I):

- images are numpy ``uint8`` arrays of shape (N, H, W), row-major: ``x[n, r, c]`` is row ``r``
  (top to bottom) and column ``c`` (left to right) of image ``n``;
- binary data sets hold {0, 1} with 1 = ink / foreground;
- 256-level data sets (Frey faces, Histopathology, and the grey sources of dynamically binarised
  sets) hold the grey levels 0..255 (255 = white for Frey and Histopathology, 255 = full ink for
  MNIST and Omniglot, as in their files).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import numpy as np

from gradmc.data import registry
from gradmc.data.download import fetch
from gradmc.data.registry import RemoteFile
from gradmc.errors import DataError

T = TypeVar("T")

__all__ = [
    "folder",
    "fetch_and_parse",
    "read_mat",
    "column_major_to_images",
    "unit_to_levels",
    "check_binary_images",
    "check_level_images",
]


def folder(data_dir: str | os.PathLike | None) -> Path:
    """``Path(data_dir)``, or the configured data folder (``$GRADMC_DATA_DIR``, default ``data``)."""
    return registry.data_dir() if data_dir is None else Path(data_dir)


def fetch_and_parse(
    remote: RemoteFile,
    data_dir: str | os.PathLike | None,
    parse: Callable[[Path], T],
    *,
    allow_download: bool = False,
    base_url: str | None = None,
) -> T:
    """``parse(fetch(remote, ...))``; a file that THIS call downloaded and that fails to parse is deleted
    together with its recorded digest (``<file>.sha256``), so no later run trusts it.

    This matters for files without a registered digest or size (trust on first use): a truncated
    download of those passes ``fetch`` but not the parser.

    Raises:
        ValueError: verification or parse failure (saying when the downloaded file was removed).
        FileNotFoundError: the file is missing and not downloaded (see ``download.fetch``).
    """
    where = folder(data_dir)
    target = where / remote.relpath
    existed = target.exists()
    path = Path(fetch(remote, where, allow_download=allow_download, base_url=base_url))
    try:
        return parse(path)
    except ValueError as err:
        if existed:
            raise
        path.unlink(missing_ok=True)
        path.with_name(path.name + ".sha256").unlink(missing_ok=True)
        raise DataError(f"{err}; the file was just downloaded and has been removed again") from err


def read_mat(path: str | os.PathLike, keys: tuple[str, ...]) -> dict[str, np.ndarray]:
    """Read the arrays ``keys`` of a MATLAB (v4/v5/v6/v7) file with ``scipy.io.loadmat``.

    Raises:
        ValueError: the file is not a readable MATLAB file (truncated, corrupt, or v7.3/HDF5), or lacks
            one of ``keys``; the message names the file, the missing keys and the keys it has.
    """
    from scipy.io import loadmat

    try:
        mat = loadmat(path)
    except Exception as err:  # scipy raises ValueError, OSError, IndexError, NotImplementedError, ...
        raise DataError(f"{path}: not a readable MATLAB .mat file ({type(err).__name__}: {err})") from err
    found = sorted(k for k in mat if not k.startswith("__"))
    missing = [k for k in keys if k not in mat]
    if missing:
        raise DataError(f"{path}: missing key(s) {missing}; the file has {found}")
    return {k: np.asarray(mat[k]) for k in keys}


def column_major_to_images(rows: np.ndarray, height: int = 28, width: int = 28, *, where: str = "") -> np.ndarray:
    """Turn (N, height*width) rows that each hold an image in column-major (MATLAB/Fortran) order into
    row-major images (N, height, width): ``out[n, r, c] = rows[n, r + height * c]``.

    This is the layout of Omniglot ``chardata.mat`` (after transposing its (784, N) matrices) and of
    the Caltech-101 Silhouettes ``.mat`` (the ``reshape(..., order='F')`` of the VAE/GWG loaders).

    Raises:
        ValueError: ``rows`` is not 2-D with ``height * width`` columns.
    """
    rows = np.asarray(rows)
    if rows.ndim != 2 or rows.shape[1] != height * width:
        raise DataError(f"{where}: expected shape (N, {height * width}), got {rows.shape}")
    return np.ascontiguousarray(rows.reshape(-1, width, height).transpose(0, 2, 1))


def unit_to_levels(x: np.ndarray, *, where: str = "") -> np.ndarray:
    """Map grey values to uint8 levels: floats in [0, 1] -> ``rint(255 x)``; integers 0..255 unchanged.

    Raises:
        ValueError: non-finite values, floats outside [0, 1], integers outside 0..255, or a non-numeric
            dtype; the message names ``where``.
    """
    x = np.asarray(x)
    if x.dtype == np.bool_:
        return x.astype(np.uint8) * np.uint8(255)
    if np.issubdtype(x.dtype, np.integer):
        if x.size and (x.min() < 0 or x.max() > 255):
            raise DataError(f"{where}: integer grey levels must be in 0..255, got {x.min()}..{x.max()}")
        return x.astype(np.uint8)
    if not np.issubdtype(x.dtype, np.floating):
        raise DataError(f"{where}: expected numeric grey values, got dtype {x.dtype}")
    if not np.isfinite(x).all():
        raise DataError(f"{where}: grey values must be finite")
    if x.size and (x.min() < 0 or x.max() > 1):
        raise DataError(f"{where}: float grey values must be in [0, 1], got {x.min()}..{x.max()}")
    return np.rint(x * 255.0).astype(np.uint8)


def check_binary_images(x: np.ndarray, *, where: str = "") -> np.ndarray:
    """Validate and return (N, H, W) images with values in {0, 1} as uint8.

    Raises:
        ValueError: not 3-D, or a value other than 0 and 1.
    """
    x = np.asarray(x)
    if x.ndim != 3:
        raise DataError(f"{where}: expected images of shape (N, H, W), got {x.shape}")
    if x.size and not np.isin(x, (0, 1)).all():
        raise DataError(f"{where}: expected binary values in {{0, 1}}, found {np.unique(x)[:8]}...")
    return x.astype(np.uint8)


def check_level_images(x: np.ndarray, *, where: str = "") -> np.ndarray:
    """Validate and return (N, H, W) uint8 grey-level images (0..255).

    Raises:
        ValueError: not 3-D or not uint8.
    """
    x = np.asarray(x)
    if x.ndim != 3 or x.dtype != np.uint8:
        raise DataError(f"{where}: expected uint8 images of shape (N, H, W), got {x.dtype} {x.shape}")
    return x
