"""Grey Histopathology patches (Tomczak & Welling 2016; GWG paper Table 2, categorical, 256 levels).

The data exist only as a Python pickle, ``histopathology.pkl`` (written by Python 2, read with
``encoding="latin1"``), a dict with keys ``training``, ``validation`` and ``test`` whose values are grey
28x28 patches with floats in [0, 1]. The public copy is the gzipped tar
``histopathology/histopathology.pkl.tar.gz``; an extracted ``histopathology/histopathology.pkl`` is read
as well. The split is the file's own (standard): training / validation / test.

Why an explicit opt-in: unpickling can execute arbitrary code named in the file, so a tampered or
mistaken file could run commands on the user's machine. Loaders therefore refuse unless called with
``allow_pickle=True``, and even then unpickle with a restricted unpickler that only rebuilds numpy
arrays, dtypes and scalars and plain containers; any other global in the stream is an error.
Levels: ``rint(255 x)`` as uint8 (the categorical EBM's 256 levels).
"""

from __future__ import annotations

import io
import os
import pickle
import tarfile
from pathlib import Path

import numpy as np

from gradmc.data.image_common import fetch_and_parse, folder, unit_to_levels
from gradmc.data.image_remotes import HISTOPATHOLOGY_PKL, HISTOPATHOLOGY_TGZ
from gradmc.data.registry import RemoteFile
from gradmc.errors import DataError, InputError, MissingDataError

__all__ = ["HISTOPATHOLOGY_KEYS", "parse_histopathology", "histopathology_remote", "load_histopathology"]

HISTOPATHOLOGY_KEYS = {"train": "training", "valid": "validation", "test": "test"}
_MAX_PICKLE_BYTES = 1 << 30
_NUMPY_MODULES = {"numpy.core.multiarray": "numpy._core.multiarray", "numpy.core.numeric": "numpy._core.numeric"}
_ALLOWED = {
    ("numpy._core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "scalar"),
    ("numpy._core.numeric", "_frombuffer"),
    ("numpy", "ndarray"),
    ("numpy", "dtype"),
    ("_codecs", "encode"),
}


def _opt_in_error(what: str) -> InputError:
    return InputError(
        f"{what}: Histopathology is a Python pickle, and unpickling can run code stored in the file. "
        "Pass allow_pickle=True (CLI: --allow-pickle) only for a file from a source you trust."
    )


class _ArrayUnpickler(pickle.Unpickler):
    """Unpickler that resolves only numpy array/dtype/scalar globals (and ``_codecs.encode``)."""

    def find_class(self, module: str, name: str):
        module = _NUMPY_MODULES.get(module, module)
        if (module, name) not in _ALLOWED:
            raise pickle.UnpicklingError(f"forbidden global {module}.{name} (only numpy arrays are allowed)")
        return super().find_class(module, name)


def _pickle_bytes(path: Path) -> bytes:
    """The pickle's bytes: the file itself, or the ``*.pkl`` member of a ``.tar.gz`` (read, never extracted)."""
    if not path.name.endswith((".tar.gz", ".tgz")):
        return path.read_bytes()
    try:
        with tarfile.open(path, "r:gz") as tar:
            members = [m for m in tar.getmembers() if m.isfile() and m.name.endswith(".pkl")]
            if len(members) != 1 or members[0].size > _MAX_PICKLE_BYTES:
                raise DataError(f"{path}: expected exactly one .pkl file (< 1 GiB) inside, found "
                                 f"{[(m.name, m.size) for m in members]}")
            return tar.extractfile(members[0]).read()
    except (tarfile.TarError, EOFError, OSError) as err:
        raise DataError(f"{path}: not a readable .tar.gz ({err})") from err


def parse_histopathology(path: str | os.PathLike, *, allow_pickle: bool = False) -> dict[str, np.ndarray]:
    """Parse ``histopathology.pkl`` or ``histopathology.pkl.tar.gz``.

    Args:
        allow_pickle: must be True: the explicit consent to unpickle (see the module docstring).

    Returns:
        ``{"train", "valid", "test"}`` -> (N, 28, 28) uint8 grey levels ``rint(255 x)`` (0 = black).

    Raises:
        ValueError: ``allow_pickle`` is not True (before the file is read); an unreadable archive or
            pickle, a forbidden global in it, a missing key, values outside [0, 1], or a split whose
            size is not a multiple of 784.
    """
    path = Path(path)
    if allow_pickle is not True:
        raise _opt_in_error(str(path))
    data = _pickle_bytes(path)
    try:
        obj = _ArrayUnpickler(io.BytesIO(data), encoding="latin1").load()
    except Exception as err:  # UnpicklingError, EOFError, ValueError, ... from a broken or hostile stream
        raise DataError(f"{path}: could not unpickle ({type(err).__name__}: {err})") from err
    if not isinstance(obj, dict) or not all(k in obj for k in HISTOPATHOLOGY_KEYS.values()):
        found = sorted(map(str, obj)) if isinstance(obj, dict) else type(obj).__name__
        raise DataError(f"{path}: expected a dict with keys {list(HISTOPATHOLOGY_KEYS.values())}, found {found}")
    out = {}
    for split, key in HISTOPATHOLOGY_KEYS.items():
        where = f"{path}[{key!r}]"
        x = np.asarray(obj[key])
        if x.dtype == object or x.size % 784:
            raise DataError(f"{where}: expected numeric 28x28 patches, got {x.dtype} {x.shape}")
        out[split] = unit_to_levels(x, where=where).reshape(-1, 28, 28)
    return out


def histopathology_remote(data_dir: str | os.PathLike | None = None) -> RemoteFile:
    """``HISTOPATHOLOGY_PKL`` when an extracted ``histopathology.pkl`` is in the data folder, else the
    downloadable ``HISTOPATHOLOGY_TGZ``."""
    return HISTOPATHOLOGY_PKL if (folder(data_dir) / HISTOPATHOLOGY_PKL.relpath).exists() else HISTOPATHOLOGY_TGZ


def load_histopathology(
    data_dir: str | os.PathLike | None = None, *, allow_pickle: bool = False, allow_download: bool = False,
    base_url: str | None = None,
) -> dict[str, np.ndarray]:
    """:func:`parse_histopathology` of the file :func:`histopathology_remote` picks (the ``.tar.gz`` is
    downloaded when allowed, and removed again if it does not parse). Refuses before touching any file
    unless ``allow_pickle=True``.

    Raises:
        ValueError: no opt-in, verification or parse failure.
        FileNotFoundError: neither file present (and no download); names both and the URL.
    """
    if allow_pickle is not True:
        raise _opt_in_error("load_histopathology")
    remote = histopathology_remote(data_dir)
    try:
        return fetch_and_parse(remote, data_dir, lambda p: parse_histopathology(p, allow_pickle=True),
                               allow_download=allow_download, base_url=base_url)
    except FileNotFoundError as err:
        where = folder(data_dir) / HISTOPATHOLOGY_PKL.relpath
        raise MissingDataError(f"{err} (an extracted {HISTOPATHOLOGY_PKL.filename} at {where} is also "
                                "accepted)") from None
