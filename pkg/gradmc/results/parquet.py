"""Atomic Parquet writing and checked reading, with provenance in every row and in the footer.

Layout of a gradmc Parquet file:

- the table, plus constant columns ``config_hash``, ``git_commit``, ``git_dirty``,
  ``package_version``, ``torch_version`` (see :data:`gradmc.results.schema.PROVENANCE_COLUMNS`);
- schema metadata (the Parquet footer): pyarrow's ``b"pandas"`` entry (so dtypes, categoricals and
  the index round-trip) and ``b"gradmc.provenance"``: the provenance dict as UTF-8 JSON.

Files are written to ``.<name>.<random>.tmp`` in the destination folder, fsync'ed and renamed
over the destination (``os.replace``, atomic on POSIX), so a reader or Snakemake never sees a partial
file: after a crash the destination is either absent or the complete previous/new file.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from gradmc.atomic import atomic_path
from gradmc.errors import InputError, MissingInputError
from gradmc.results.provenance import SCHEMA_VERSION
from gradmc.results.schema import PROVENANCE_COLUMNS, validate_metrics

__all__ = ["PROVENANCE_KEY", "write_parquet", "read_parquet", "read_provenance"]

PROVENANCE_KEY = b"gradmc.provenance"
"""Key of the provenance JSON in the Parquet schema metadata."""


def write_parquet(
    df: pd.DataFrame, path: str | os.PathLike, provenance: dict[str, Any], *, validate: bool = False
) -> Path:
    """Write ``df`` with its provenance to ``path`` atomically.

    Args:
        df: the table; a RangeIndex is stored as metadata only, any other index as columns, and both
            are restored by :func:`read_parquet`. Not modified.
        path: destination file; missing parent folders are created. An existing file is replaced
            only once the new one is complete.
        provenance: dict from :func:`gradmc.results.provenance`; must be JSON-serialisable and hold
            every key of PROVENANCE_COLUMNS. Its short fields overwrite same-named columns of df.
        validate: check df against the tidy metrics schema first (:func:`validate_metrics`).

    Returns:
        The destination as a Path.

    Raises:
        ValueError: if provenance lacks a key of PROVENANCE_COLUMNS or ``schema_version``, or (with
            validate) df does not follow the metrics schema.
        TypeError: if provenance is not JSON-serialisable.
        OSError / pyarrow errors: from the write itself; the temp file is removed first and nothing
            is created at (or changed at) path.
    """
    path = Path(path)
    missing = [key for key in ("schema_version", *PROVENANCE_COLUMNS) if key not in provenance]
    if missing:
        raise ValueError(f"provenance for {path} lacks keys {missing}")
    if validate:
        validate_metrics(df)
    meta_json = json.dumps(provenance, sort_keys=True).encode("utf-8")

    stamped = df.assign(**{key: provenance[key] for key in PROVENANCE_COLUMNS})
    stamped["git_dirty"] = stamped["git_dirty"].astype(bool)
    table = pa.Table.from_pandas(stamped)
    table = table.replace_schema_metadata({**(table.schema.metadata or {}), PROVENANCE_KEY: meta_json})

    with atomic_path(path) as tmp:
        pq.write_table(table, tmp)
    return path


def _provenance_from_metadata(path: Path, metadata: dict[bytes, bytes] | None) -> dict[str, Any]:
    raw = (metadata or {}).get(PROVENANCE_KEY)
    if raw is None:
        raise InputError(f"{path}: no gradmc provenance in the Parquet footer (key {PROVENANCE_KEY!r})")
    try:
        prov = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise InputError(f"{path}: gradmc provenance in the footer is not valid JSON ({err})") from err
    if not isinstance(prov, dict):
        raise InputError(f"{path}: gradmc provenance in the footer is not a JSON object")
    version = prov.get("schema_version")
    if version != SCHEMA_VERSION:
        raise InputError(
            f"{path}: unsupported gradmc schema_version {version!r} (this gradmc reads {SCHEMA_VERSION})"
        )
    return prov


def read_provenance(path: str | os.PathLike) -> dict[str, Any]:
    """The provenance dict of a gradmc Parquet file, reading the footer only.

    Raises:
        gradmc.errors.MissingInputError: (a FileNotFoundError) if path does not exist (``results file <path>
            not found``).
        gradmc.errors.InputError: (a ValueError) as :func:`read_parquet`.
    """
    path = Path(path)
    schema = _read(pq.read_schema, path)
    return _provenance_from_metadata(path, schema.metadata)


def _read(reader, path: Path):
    """``reader(path)`` with missing and corrupt files turned into the documented, path-naming errors."""
    try:
        return reader(path)
    except FileNotFoundError:
        raise MissingInputError(f"results file {path} not found") from None
    except (pa.ArrowException, OSError) as err:
        raise InputError(f"{path}: not a valid Parquet file ({err})") from err


def read_parquet(path: str | os.PathLike) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Read a file written by :func:`write_parquet`.

    Returns:
        (df, provenance): the table with its dtypes and index restored (including the provenance
        columns; string columns come back as pandas' default ``str`` dtype, also those written from
        ``object`` columns), and the provenance dict from the footer.

    Raises:
        gradmc.errors.MissingInputError: (a FileNotFoundError) if path does not exist (``results file
            <path> not found``).
        gradmc.errors.InputError: (a ValueError) naming the file, if it is not valid Parquet (corrupt,
            truncated, empty), has no gradmc provenance, or has an unsupported ``schema_version``.
    """
    path = Path(path)
    table = _read(pq.read_table, path)
    prov = _provenance_from_metadata(path, table.schema.metadata)
    return table.to_pandas(), prov
