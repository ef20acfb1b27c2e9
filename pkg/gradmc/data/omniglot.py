"""Omniglot at 28x28 (GWG paper Table 2; dynamically binarised like dynamic MNIST).

Three sources, all returning grey uint8 images (N, 28, 28), 0 = background, 255 = full ink:

- ``chardata.mat`` (Burda et al. 2016; the file the VAE and GWG papers use): keys ``data`` (784, 24345)
  and ``testdata`` (784, 8070), float in [0, 1] with 1 = ink. Each COLUMN is one image stored in
  column-major (MATLAB) order, so image n is ``data[:, n].reshape(28, 28).T`` (equivalently the
  ``data.T.reshape(-1, 28, 28).reshape(-1, 784, order='F')`` of those papers' loaders). Levels are
  ``rint(255 x)``.
- the original PNG zips (Lake et al. 2015; ``images_background.zip``, ``images_evaluation.zip``, and the
  ``_small1``/``_small2`` subsets): 105x105 1-bit PNGs, white background, in
  ``<top>/<alphabet>/<character>/<id>_<drawing>.png``.
- our ``.npz`` conversion of those zips (``omniglot/images_{background,evaluation}.npz``): ``images``
  bool (n_char, 20, 105, 105), True = background.

105x105 images are turned into 28x28 grey by inverting (ink = 1) and resizing with Pillow's BOX filter:
each output pixel (i, j) is the mean ink of the 3 or 4 x 3 or 4 input pixels whose centres lie in its
footprint (3.75 i, 3.75 (i + 1)] x (3.75 j, 3.75 (j + 1)], i.e. a local ink fraction, used as the Bernoulli
probability of dynamic binarisation; stored as ``rint(255 * fraction)`` (Pillow's fixed-point arithmetic
may differ from that by one level). Pillow is installed with matplotlib.
"""

from __future__ import annotations

import io
import os
import zipfile
import zlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from gradmc.data.download import fetch
from gradmc.data.image_common import column_major_to_images, fetch_and_parse, folder, read_mat, unit_to_levels
from gradmc.data.image_remotes import OMNIGLOT_CHARDATA, OMNIGLOT_NPZ, OMNIGLOT_ZIPS
from gradmc.errors import DataError, InputError, MissingDataError

__all__ = [
    "RAW_SIDE",
    "resize_ink",
    "parse_chardata",
    "load_omniglot_chardata",
    "read_omniglot_zip",
    "load_omniglot_zips",
    "load_omniglot_npz",
]

RAW_SIDE = 105
_MAX_PNG_BYTES = 1 << 20  # a 105x105 1-bit PNG is a few hundred bytes; refuse anything huge
_RESAMPLE = ("box", "bilinear", "lanczos")


def resize_ink(ink: np.ndarray, size: int = 28, resample: str = "box") -> np.ndarray:
    """Resize binary ink masks (N, H, W) (True/1 = ink) to grey (N, size, size) uint8 ``rint(255 p)``.

    ``resample="box"`` (default, Pillow's BOX): ``p`` = mean ink of the input pixels whose centres lie in
    the output pixel's footprint (see the module docstring); "bilinear" and "lanczos" are Pillow's
    anti-aliasing filters (their results are clipped to 0..255).

    Raises:
        ValueError: ``ink`` not 3-D with values in {0, 1}, or an unknown ``resample``.
    """
    from PIL import Image

    if resample not in _RESAMPLE:
        raise InputError(f"resample must be one of {_RESAMPLE}, got {resample!r}")
    ink = np.asarray(ink)
    if ink.ndim != 3 or (ink.dtype != np.bool_ and ink.size and not ((ink == 0) | (ink == 1)).all()):
        raise ValueError(f"ink must be (N, H, W) with values in {{0, 1}}, got {ink.dtype} {ink.shape}")
    method = getattr(Image.Resampling, resample.upper())
    out = np.empty((ink.shape[0], size, size), dtype=np.uint8)
    for i, img in enumerate(ink):  # one image at a time: no full-size uint8 copy of the stack
        grey = img.astype(np.uint8) * np.uint8(255)
        out[i] = np.asarray(Image.fromarray(grey).resize((size, size), method))
    return out


def parse_chardata(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """Parse Burda's ``chardata.mat``.

    Returns:
        ``{"train": (24345, 28, 28), "test": (8070, 28, 28)}`` uint8 grey levels (255 = ink) for the
        canonical file (any N for other files in that layout).

    Raises:
        ValueError: unreadable file, missing ``data``/``testdata``, a matrix not of shape (784, N), or
            values outside [0, 1].
    """
    mat = read_mat(path, ("data", "testdata"))
    out = {}
    for key, split in (("data", "train"), ("testdata", "test")):
        where = f"{path}[{key!r}]"
        if mat[key].ndim != 2 or mat[key].shape[0] != 784:
            raise DataError(f"{where}: expected shape (784, N) (one image per column), got {mat[key].shape}")
        out[split] = column_major_to_images(unit_to_levels(mat[key].T, where=where), where=where)
    return out


def load_omniglot_chardata(
    data_dir: str | os.PathLike | None = None, *, allow_download: bool = False, base_url: str | None = None
) -> dict[str, np.ndarray]:
    """:func:`parse_chardata` of ``omniglot/chardata.mat`` in the data folder (downloaded if allowed; a
    download that does not parse is removed again).

    Raises:
        FileNotFoundError: the file is missing (and not downloaded); names it and its URL.
        ValueError: verification or parse failure.
    """
    return fetch_and_parse(OMNIGLOT_CHARDATA, data_dir, parse_chardata, allow_download=allow_download,
                           base_url=base_url)


def read_omniglot_zip(path: str | os.PathLike) -> tuple[np.ndarray, list[str]]:
    """All PNGs of one Omniglot zip at full size.

    Returns:
        ink: (N, 105, 105) bool, True = ink (the PNGs' black pixels), in sorted member-name order;
        names: N member paths without the top folder, ``"<alphabet>/<character>/<file>.png"``.

    Raises:
        ValueError: not a zip, no PNGs, a member outside ``<top>/<alphabet>/<character>/``, an
            oversized member, or an image that is not 105x105.
    """
    from PIL import Image

    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as err:
        raise DataError(f"{path}: not a readable zip file ({err})") from err
    with zf:
        members = sorted((i for i in zf.infolist() if i.filename.lower().endswith(".png")), key=lambda i: i.filename)
        if not members:
            raise DataError(f"{path}: no .png files inside")
        ink = np.empty((len(members), RAW_SIDE, RAW_SIDE), dtype=bool)
        names = []
        for k, info in enumerate(members):
            parts = info.filename.split("/")
            if len(parts) != 4 or info.file_size > _MAX_PNG_BYTES:
                raise DataError(f"{path}: unexpected member {info.filename!r} ({info.file_size} bytes); "
                                 "expected <top>/<alphabet>/<character>/<file>.png")
            try:
                with Image.open(io.BytesIO(zf.read(info))) as img:
                    grey = np.asarray(img.convert("L"))
            except (OSError, zipfile.BadZipFile, zlib.error, EOFError) as err:  # corrupt member or PNG
                raise DataError(f"{path}: cannot decode {info.filename} ({err})") from err
            if grey.shape != (RAW_SIDE, RAW_SIDE):
                raise DataError(f"{path}: {info.filename} is {grey.shape}, expected (105, 105)")
            ink[k] = grey < 128
            names.append("/".join(parts[1:]))
    return ink, names


def load_omniglot_zips(
    data_dir: str | os.PathLike | None = None,
    zips: Sequence[str] = ("images_background.zip", "images_evaluation.zip"),
    *,
    allow_download: bool = False,
    base_url: str | None = None,
    resample: str = "box",
) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """28x28 Omniglot from original PNG zips under ``omniglot/`` in the data folder.

    A drawing found in several zips (``_small1`` and ``_small2`` share Greek and Latin) is kept once.

    Returns:
        images: (N, 28, 28) uint8 grey (255 = ink) in sorted ``alphabet/character/file`` order;
        labels: (N,) int64 character index into ``characters``;
        characters: sorted ``"<alphabet>/<character>"`` names.

    Raises:
        ValueError: an unknown zip name (listing the known ones), a drawing that differs between two
            zips, or a malformed zip (see :func:`read_omniglot_zip`).
        FileNotFoundError: a zip missing (and not downloaded); names it and its URL.
    """
    unknown = [z for z in zips if z not in OMNIGLOT_ZIPS]
    if unknown or not zips:
        raise InputError(f"unknown Omniglot zip(s) {unknown or list(zips)}; known: {sorted(OMNIGLOT_ZIPS)}")
    drawings: dict[str, np.ndarray] = {}
    for name in zips:
        ink, names = fetch_and_parse(OMNIGLOT_ZIPS[name], data_dir, read_omniglot_zip,
                                     allow_download=allow_download, base_url=base_url)
        for img, member in zip(ink, names, strict=True):
            if member in drawings and not np.array_equal(drawings[member], img):
                raise DataError(f"{member} differs between the zips {list(zips)}")
            drawings[member] = img
    members = sorted(drawings)
    char_of = [m.rsplit("/", 1)[0] for m in members]
    characters = sorted(set(char_of))
    index = {c: i for i, c in enumerate(characters)}
    labels = np.array([index[c] for c in char_of], dtype=np.int64)
    images = resize_ink(np.stack([drawings[m] for m in members]), resample=resample)
    return images, labels, characters


def load_omniglot_npz(
    data_dir: str | os.PathLike | None = None, which: str = "background", *, resample: str = "box"
) -> tuple[np.ndarray, np.ndarray]:
    """28x28 Omniglot from our ``omniglot/images_{which}.npz`` (checksum-verified).

    Returns:
        images: (n_char * 20, 28, 28) uint8 grey (255 = ink), character-major;
        labels: (n_char * 20,) int64 character ids of the file (0..963 background, 0..658 evaluation).

    Raises:
        ValueError: ``which`` not "background"/"evaluation", verification failure, or a file not in the
            documented layout.
        FileNotFoundError: the file is missing; names it (it has no public URL).
    """
    if which not in OMNIGLOT_NPZ:
        raise ValueError(f"which must be one of {sorted(OMNIGLOT_NPZ)}, got {which!r}")
    try:
        path = Path(fetch(OMNIGLOT_NPZ[which], folder(data_dir), allow_download=False))
    except FileNotFoundError as err:
        raise MissingDataError(f"{err} (or read the canonical {OMNIGLOT_CHARDATA.filename} from "
                                f"{OMNIGLOT_CHARDATA.url}, or the PNG zips)") from None
    with np.load(path, allow_pickle=False) as npz:
        background, labels = npz["images"], npz["labels"]
    if background.dtype != np.bool_ or background.ndim != 4 or background.shape[2:] != (RAW_SIDE, RAW_SIDE) \
            or labels.shape != background.shape[:2]:
        raise DataError(f"{path}: expected bool images (n_char, 20, 105, 105) and labels (n_char, 20), got "
                         f"{background.dtype} {background.shape} and {labels.shape}")
    ink = ~background.reshape(-1, RAW_SIDE, RAW_SIDE)
    return resize_ink(ink, resample=resample), labels.reshape(-1).astype(np.int64)
