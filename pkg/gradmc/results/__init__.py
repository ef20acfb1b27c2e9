"""Results files: tidy metrics schema, provenance, atomic Parquet writes and checked reads.

Every table gradmc writes goes through :func:`write_parquet`, which stamps provenance columns on each
row, stores the full provenance JSON in the Parquet footer and replaces the destination atomically;
:func:`read_parquet` gives back the table and that provenance, or a ValueError naming the file.
"""

from __future__ import annotations

from gradmc.results.parquet import PROVENANCE_KEY, read_parquet, read_provenance, write_parquet
from gradmc.results.provenance import SCHEMA_VERSION, config_hash, git_state, provenance
from gradmc.results.schema import METRICS_COLUMNS, PROVENANCE_COLUMNS, validate_metrics

__all__ = [
    "METRICS_COLUMNS",
    "PROVENANCE_COLUMNS",
    "PROVENANCE_KEY",
    "SCHEMA_VERSION",
    "config_hash",
    "git_state",
    "provenance",
    "read_parquet",
    "read_provenance",
    "validate_metrics",
    "write_parquet",
]
