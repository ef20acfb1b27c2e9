"""UCI Glass identification data for the GP classification experiment (docs/EXPERIMENTS.md B3).

The canonical file ``glass/glass.data`` is a headerless CSV of 214 rows and 11 columns: id (1..214), the
refractive index RI, the oxide weight percentages Na, Mg, Al, Si, K, Ca, Ba, Fe, and the glass type
(1..7; type 4 has no rows). B3's binary task is "window glass (types 1-4) vs the rest": y = 1 for types
1, 2, 3, 4 (163 rows), y = 0 for types 5, 6, 7 (51 rows). The 9 inputs are standardised to zero mean and
unit POPULATION standard deviation (ddof = 0) over the 214 rows.
"""

from __future__ import annotations

import os

import numpy as np

from gradmc.data.download import fetch
from gradmc.data.registry import GLASS, RemoteFile
from gradmc.errors import DataError

__all__ = ["GLASS", "parse_glass", "load_glass", "COLUMNS", "WINDOW_TYPES"]

COLUMNS = ("id", "RI", "Na", "Mg", "Al", "Si", "K", "Ca", "Ba", "Fe", "type")
WINDOW_TYPES = (1, 2, 3, 4)
_NUM_ROWS = 214

def parse_glass(path: str | os.PathLike) -> tuple[np.ndarray, np.ndarray]:
    """Parse the canonical CSV and validate it.

    Returns:
        raw: (214, 9) float64 unstandardised inputs (RI, Na, Mg, Al, Si, K, Ca, Ba, Fe);
        types: (214,) int64 glass types in {1, ..., 7}.

    Raises:
        ValueError: naming the file, if it is not numeric CSV of 214 rows x 11 columns, ids are not
            1..214, a value is not finite or negative, or a type is outside 1..7.
    """
    try:
        table = np.loadtxt(path, delimiter=",", dtype=np.float64, ndmin=2)
    except ValueError as err:
        raise DataError(f"{path}: not a numeric comma-separated glass table ({err})") from None
    if table.shape != (_NUM_ROWS, len(COLUMNS)):
        raise DataError(
            f"{path}: expected {_NUM_ROWS} rows x {len(COLUMNS)} columns {COLUMNS}, got "
            f"{table.shape[0]} x {table.shape[1]}"
        )
    if not np.isfinite(table).all():
        raise DataError(f"{path}: contains non-finite values")
    if not np.array_equal(table[:, 0], np.arange(1, _NUM_ROWS + 1)):
        raise DataError(f"{path}: the id column must be 1..{_NUM_ROWS} in order")
    raw = table[:, 1:10]
    if (raw < 0).any():
        raise DataError(f"{path}: refractive index and oxide percentages must be >= 0")
    types = table[:, 10]
    if not (np.isin(types, np.arange(1, 8))).all():
        bad = sorted(set(types[~np.isin(types, np.arange(1, 8))].tolist()))
        raise DataError(f"{path}: glass types must be integers 1..7, found {bad}")
    return raw, types.astype(np.int64)


def load_glass(
    data_dir: str | os.PathLike | None = None,
    *,
    allow_download: bool = False,
    base_url: str | None = None,
    remote: RemoteFile | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The B3 data: standardised inputs and the window-glass label.

    Args:
        data_dir: data folder (default ``$GRADMC_DATA_DIR`` or ``data``); the file is ``glass/glass.data``.
        allow_download: download the file (checksum-verified) when missing.
        base_url: mirror serving ``{base_url}/glass/glass.data`` (default ``$GRADMC_DATA_BASE_URL``, else UCI).
        remote: the RemoteFile to fetch (default :func:`glass_remote`).

    Returns:
        X: (214, 9) float64, each column zero mean and unit population std;
        y: (214,) int64, 1 for window glass (types 1-4), 0 for the rest (types 5-7).

    Raises:
        FileNotFoundError: the file is missing and cannot be downloaded (message says where and how).
        ValueError: the file fails checksum verification or validation (see :func:`parse_glass`).
    """
    path = fetch(remote or GLASS, data_dir, allow_download=allow_download, base_url=base_url, progress=None)
    raw, types = parse_glass(path)
    std = raw.std(axis=0)
    if (std == 0).any():
        raise DataError(f"{path}: constant input column(s) {[COLUMNS[1 + i] for i in np.flatnonzero(std == 0)]}")
    X = (raw - raw.mean(axis=0)) / std
    y = np.isin(types, WINDOW_TYPES).astype(np.int64)
    return X, y
