"""The tidy metrics table every experiment returns (DESIGN.md, "Results schema").

One row per (experiment, target, sampler, seed, chain, step, metric). ``chain == -1`` marks a
metric computed over all chains (e.g. ESS of the chain mean, MMD of the pooled sample).
"""

from __future__ import annotations

import pandas as pd
from pandas.api import types as ptypes

__all__ = ["METRICS_COLUMNS", "PROVENANCE_COLUMNS", "validate_metrics"]

METRICS_COLUMNS: dict[str, str] = {
    "experiment": "string",
    "target": "string",
    "sampler": "string",
    "seed": "integer",
    "chain": "integer",
    "step": "integer",
    "metric": "string",
    "value": "float",
    "energy_evals": "integer",
    "grad_evals": "integer",
    "wall_time_s": "float",
}
"""Required columns and the kind of dtype each must have (string: str/object/categorical of str)."""

PROVENANCE_COLUMNS: tuple[str, ...] = (
    "config_hash",
    "git_commit",
    "git_dirty",
    "package_version",
    "torch_version",
)
"""Constant columns that :func:`gradmc.results.write_parquet` adds to every row."""


def _has_kind(series: pd.Series, kind: str) -> bool:
    dtype = series.dtype
    if kind == "integer":
        return ptypes.is_integer_dtype(dtype) and not ptypes.is_bool_dtype(dtype)
    if kind == "float":
        return ptypes.is_float_dtype(dtype)
    if isinstance(dtype, pd.CategoricalDtype):
        return ptypes.is_string_dtype(dtype.categories.dtype) or len(dtype.categories) == 0
    return ptypes.is_string_dtype(dtype)  # infers the elements of object columns


def validate_metrics(df: pd.DataFrame) -> None:
    """Check that ``df`` follows the tidy metrics schema.

    Required columns (extra columns are allowed): experiment, target, sampler, metric (strings;
    object, str or categorical dtype); seed, chain, step, energy_evals, grad_evals (integers, not
    bool); value, wall_time_s (floats, NaN allowed for value); chain >= -1, step >= 0.

    Raises:
        ValueError: naming every missing column, every column of the wrong dtype and every column
            with out-of-range values (all problems at once).
    """
    problems: list[str] = []
    missing = [name for name in METRICS_COLUMNS if name not in df.columns]
    if missing:
        problems.append(f"missing columns {missing}")
    for name, kind in METRICS_COLUMNS.items():
        if name in df.columns and not _has_kind(df[name], kind):
            problems.append(f"column {name!r} has dtype {df[name].dtype}, expected {kind}")
    if not any(name.startswith("column 'chain'") for name in problems) and "chain" in df.columns:
        if len(df) and int(df["chain"].min()) < -1:
            problems.append("column 'chain' has values < -1 (-1 means 'all chains')")
    if not any(name.startswith("column 'step'") for name in problems) and "step" in df.columns:
        if len(df) and int(df["step"].min()) < 0:
            problems.append("column 'step' has negative values")
    if problems:
        raise ValueError("metrics table does not follow the results schema: " + "; ".join(problems))
