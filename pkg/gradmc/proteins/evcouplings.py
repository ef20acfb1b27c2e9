"""Inputs in the EVcouplings layout (GWG paper Sec. 5.4: OPSD_BOVIN, CADH1_HUMAN): focus-mode A2M + distance map.

Alignment: EVcouplings ``align`` output, e.g. ``OPSD_BOVIN_full_b03.a2m``; the first record is the focus
(target) sequence with header ``ID/START-END``; its upper-case letters are the modelled columns and number
its residues START, START+1, ... (lower-case letters are residues outside the model; '.' and '-' are not
residues). Without a ``/START-END`` region, numbering starts at 1 (as plmc does).

Distance map: EVcouplings ``DistanceMap.to_file(prefix)`` writes ``prefix.csv``, the residue table (pandas
index in the first column; column ``id`` = residue number in the focus sequence's numbering, as text,
other columns such as ``seqres_id``, ``coord_id``, ``one_letter_code``, ``sec_struct_3state`` are
ignored; an ``axis`` column marks an inter-chain map, which is refused) and ``prefix.npy``, the (R, R)
minimum-atom distance matrix in angstrom whose rows follow the table. The GWG release reads
``*_distance_map_monomer`` and treats residues absent from the structure as "no contact".
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pandas as pd

from gradmc.errors import DataError, MissingDataError
from gradmc.proteins.alignment import encode_records, read_fasta_records

__all__ = ["read_distance_map", "focus_positions", "alignment_distances", "read_focus_alignment"]

_REGION = re.compile(r"^(?P<id>[^/\s]+)/(?P<start>\d+)-(?P<end>\d+)")


def read_distance_map(prefix: str | os.PathLike) -> tuple[list[str], np.ndarray]:
    """Read ``prefix.csv`` + ``prefix.npy`` (EVcouplings intra-chain distance map).

    Returns:
        ids: R residue identifiers (strings, column ``id``);
        distances: (R, R) float64, angstrom (NaN allowed for missing atoms).

    Raises:
        FileNotFoundError: either file missing (the message names it and how to make it).
        ValueError: no ``id`` column, an ``axis`` column (inter-chain map), duplicate ids, or a matrix that is
            not (R, R) and symmetric.
    """
    csv, npy = Path(f"{prefix}.csv"), Path(f"{prefix}.npy")
    for f in (csv, npy):
        if not f.is_file():
            raise MissingDataError(
                f"distance map file {f.name} not found at {f}: EVcouplings writes it with its compare stage "
                "(DistanceMap.to_file(prefix) -> prefix.csv residue table + prefix.npy matrix); place both there")
    table = pd.read_csv(csv, index_col=0, dtype={"id": str})
    if "id" not in table.columns:
        raise DataError(f"{csv}: residue table needs an 'id' column (EVcouplings layout), has {list(table.columns)}")
    if "axis" in table.columns:
        raise DataError(f"{csv}: has an 'axis' column, i.e. an inter-chain (non-symmetric) map; use the monomer map")
    ids = [str(v).strip() for v in table["id"]]
    if len(set(ids)) != len(ids):
        raise DataError(f"{csv}: residue ids are not unique")
    d = np.load(npy, allow_pickle=False).astype(np.float64)
    if d.shape != (len(ids), len(ids)):
        raise DataError(f"{npy}: matrix shape {d.shape} does not match the {len(ids)} residues of {csv.name}")
    if not np.array_equal(np.isnan(d), np.isnan(d.T)) or not np.allclose(np.nan_to_num(d), np.nan_to_num(d.T)):
        raise DataError(f"{npy}: distance matrix is not symmetric")
    return ids, d


def focus_positions(header: str, raw_sequence: str) -> np.ndarray:
    """Residue numbers (L,) of the A2M match columns of the focus sequence; -1 where it has a gap.

    Raises:
        ValueError: the region START-END disagrees with the number of residues (letters) in the sequence.
    """
    m = _REGION.match(header.strip())
    start = int(m["start"]) if m else 1
    positions, pos = [], start
    for c in raw_sequence:
        if c.isalpha():
            if c.isupper():
                positions.append(pos)
            pos += 1
        elif c == "-":
            positions.append(-1)
    if m and pos - 1 != int(m["end"]):
        raise DataError(f"focus sequence '>{header}' has {pos - start} residues, but its region "
                         f"{m['start']}-{m['end']} says {int(m['end']) - start + 1}")
    return np.asarray(positions, dtype=np.int64)


def alignment_distances(positions: np.ndarray, ids: list[str], distances: np.ndarray) -> np.ndarray:
    """(L, L) distances between the alignment columns at ``positions``; NaN where a column has no residue
    in the structure, 0 on the diagonal."""
    index = {rid: k for k, rid in enumerate(ids)}
    rows = np.array([index.get(str(p), -1) if p > 0 else -1 for p in positions])
    L = len(positions)
    out = np.full((L, L), np.nan)
    ok = np.flatnonzero(rows >= 0)
    out[np.ix_(ok, ok)] = distances[np.ix_(rows[ok], rows[ok])]
    np.fill_diagonal(out, 0.0)
    return out


def read_focus_alignment(a2m_path: str | os.PathLike, *, unknown: str = "gap"):
    """States (N, L) int8, headers, and focus positions (L,) of an EVcouplings focus-mode A2M file.

    Raises:
        FileNotFoundError, ValueError: see ``alignment.read_a2m`` and :func:`focus_positions`.
    """
    records = read_fasta_records(a2m_path)
    positions = focus_positions(*records[0])
    states, headers = encode_records(records, unknown=unknown, source=str(a2m_path))
    if headers[0] != records[0][0]:
        raise DataError(f"{a2m_path}: the focus sequence '>{records[0][0]}' holds an unknown residue and was dropped")
    if len(positions) != states.shape[1]:
        raise DataError(f"{a2m_path}: focus sequence has {len(positions)} numbered match columns, alignment has "
                         f"{states.shape[1]} (a '*' in a match column?)")
    return states, headers, positions
