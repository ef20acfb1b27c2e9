"""Comparison of the CPU and CUDA runs of one config: per-chain statistics (mean over the chains, its standard
error) of every tidy metrics table, and a two-sided two-sample t test per statistic, Bonferroni over the run."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

__all__ = ["FAMILY_ALPHA", "DEGENERATE_TOLERANCE", "MIN_CHAINS", "chain_statistics", "compare_frames",
           "load_results", "compare_folders"]

#: family-wise false-alarm rate of the comparison (Bonferroni over all comparisons of one run); fixed
FAMILY_ALPHA = 0.01
#: when both standard errors are 0 (every chain gave the same value on both devices, e.g. Gibbs acceptance
#: 1.0), the means must agree to this relative tolerance (float round-off only)
DEGENERATE_TOLERANCE = 1e-9
#: fewest chains of a shard whose statistic is compared: a t test on 2 or 3 replicates per device (kmc_gpc's 2
#: benchmark chains) has so few degrees of freedom that its critical value says nothing
MIN_CHAINS = 4

#: columns that never identify a shard's statistic: the value itself, the chain (the replicate index),
#: ising_sampling's chunk (its first chain), costs and times, provenance
_NON_KEY_COLUMNS = frozenset({"value", "chain", "chunk", "energy_evals", "grad_evals", "wall_time_s",
                              "config_hash", "git_commit", "git_dirty", "package_version", "torch_version"})
#: the two devices of the check, in the order of the table columns
_DEVICES = ("cpu", "cuda")


def _plain(value):
    """A JSON-friendly scalar (numpy scalars to Python, NaN to None)."""
    if hasattr(value, "item"):
        value = value.item()
    return None if isinstance(value, float) and math.isnan(value) else value


def _is_timing(metric: str) -> bool:
    """Metrics that measure time (ess_per_second, steps_per_s, ms_per_step, wall times): meant to differ."""
    return "per_second" in metric or metric.endswith("per_s") or "time" in metric or metric.startswith("ms_per")


def chain_statistics(df: pd.DataFrame) -> tuple[list[str], pd.DataFrame]:
    """Mean over chains, its standard error and the number of chains, of every per-chain statistic of ``df``.

    ``df`` is a tidy metrics table (:mod:`gradmc.results.schema`). Rows with ``chain >= 0`` and a finite value,
    of metrics that are not timings, are grouped by every identifying column (experiment, target, sampler,
    seed, step, metric and the experiment's extra columns such as side or theta; not chain, chunk, costs,
    times or provenance). Groups of fewer than MIN_CHAINS chains are dropped (one chain has no standard
    error; two or three give a test with too few degrees of freedom to say anything).

    Returns:
        (key columns, frame with the key columns and ``_n``, ``_mean``, ``_se`` (underscored: an experiment
        may have a key column ``n``, as kmc_banana does); se = std(ddof=1) / sqrt(n).
    """
    if not {"chain", "metric", "value"} <= set(df.columns):
        return [], pd.DataFrame(columns=["_n", "_mean", "_se"])
    rows = df[(df["chain"] >= 0) & df["value"].notna() & ~df["metric"].astype(str).map(_is_timing)]
    rows = rows[rows["value"].map(math.isfinite)]
    keys = [c for c in df.columns if c not in _NON_KEY_COLUMNS]
    if rows.empty:
        return keys, pd.DataFrame(columns=[*keys, "_n", "_mean", "_se"])
    grouped = rows.groupby(keys, dropna=False, sort=True, observed=True)["value"]
    stats = grouped.agg(_n="count", _mean="mean", _se="sem").reset_index()  # sem: std(ddof=1) / sqrt(n)
    return keys, stats[stats["_n"] >= MIN_CHAINS].reset_index(drop=True)


def _describe_key(row: pd.Series, keys: list[str]) -> str:
    return " ".join(f"{k}={row[k]}" for k in keys if k not in ("experiment", "metric") and pd.notna(row[k]))


def compare_frames(cpu: dict[str, pd.DataFrame], cuda: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Compare the per-chain statistics of two sets of tidy metrics tables, file by file.

    Args:
        cpu, cuda: result file (e.g. ``"rbm_sampling/metrics.parquet"``) -> its metrics table, of the two
            runs of the same config on the two devices.

    Returns:
        One row per statistic (file, group, metric) with n, mean and se on each device, ``diff``,
        ``se_diff`` (from the pooled variance of the chains of both devices, which under the null hypothesis
        draw from one distribution; it is sqrt(se_cpu^2 + se_cuda^2) for equal chain counts), ``t`` = |diff| /
        se_diff, ``df`` = n_cpu + n_cuda - 2, ``critical`` = Student-t quantile 1 - FAMILY_ALPHA / (2 m) at
        ``df``, ``ratio`` = t / critical, ``passed`` and a ``note``. A statistic present on one device only
        fails (the two runs must have the same shards); so does a file present on one side only (a row with
        metric ``<file>``). With both standard errors 0 the means must agree to DEGENERATE_TOLERANCE
        (relative).
    """
    out = []
    for name in sorted(set(cpu) | set(cuda)):
        if name not in cpu or name not in cuda:
            side = "cuda" if name not in cpu else "cpu"
            out.append({"file": name, "group": "", "metric": "<file>", "passed": False,
                        "note": f"only in the {side} results"})
            continue
        keys, a = chain_statistics(cpu[name])
        keys_b, b = chain_statistics(cuda[name])
        if keys != keys_b:
            out.append({"file": name, "group": "", "metric": "<file>", "passed": False,
                        "note": f"different columns: cpu {keys}, cuda {keys_b}"})
            continue
        if a.empty and b.empty:
            continue
        merged = a.merge(b, on=keys, how="outer", suffixes=("_cpu", "_cuda"), indicator=True)
        for _, row in merged.iterrows():
            entry = {"file": name, "group": _describe_key(row, keys), "metric": str(row["metric"]),
                     "keys": {k: _plain(row[k]) for k in keys}}
            for dev in _DEVICES:
                entry[f"n_{dev}"] = None if pd.isna(row[f"_n_{dev}"]) else int(row[f"_n_{dev}"])
                entry[f"mean_{dev}"] = _plain(row[f"_mean_{dev}"])
                entry[f"se_{dev}"] = _plain(row[f"_se_{dev}"])
            if row["_merge"] != "both":
                entry.update(passed=False, note=f"only in the {'cpu' if row['_merge'] == 'left_only' else 'cuda'} "
                                                "results (not the same shards)")
            out.append(entry)
    testable = [e for e in out if e.get("n_cpu") is not None and e.get("n_cuda") is not None]
    m = len(testable)
    for entry in testable:
        entry.update(_student(entry, m))
    frame = pd.DataFrame(out)
    frame.attrs.update(m=m, family_alpha=FAMILY_ALPHA)
    return frame


def _student(entry: dict, m: int) -> dict:
    """The test of one statistic present on both devices (see :func:`compare_frames`)."""
    from scipy import stats

    n_a, n_b = entry["n_cpu"], entry["n_cuda"]
    diff = entry["mean_cuda"] - entry["mean_cpu"]
    # pooled variance of the chains: under the null hypothesis both devices draw from one distribution
    pooled = ((n_a - 1) * n_a * entry["se_cpu"] ** 2 + (n_b - 1) * n_b * entry["se_cuda"] ** 2) / (n_a + n_b - 2)
    se_diff = math.sqrt(pooled * (1.0 / n_a + 1.0 / n_b))  # = sqrt(se_cpu^2 + se_cuda^2) when n_a = n_b
    if se_diff == 0:
        scale = max(1.0, abs(entry["mean_cpu"]), abs(entry["mean_cuda"]))
        ok = abs(diff) <= DEGENERATE_TOLERANCE * scale
        return {"diff": diff, "se_diff": 0.0, "ratio": 0.0 if ok else math.inf, "passed": ok,
                "note": "every chain gave the same value: the means must agree to round-off"}
    dof = n_a + n_b - 2
    critical = float(stats.t.ppf(1.0 - FAMILY_ALPHA / (2 * m), dof))
    t = abs(diff) / se_diff
    note = "" if t <= critical else "means differ by more than Monte Carlo error"
    return {"diff": diff, "se_diff": se_diff, "t": t, "df": dof, "critical": critical, "ratio": t / critical,
            "passed": bool(t <= critical), "note": note}


def load_results(folder: str | Path) -> dict[str, pd.DataFrame]:
    """Every tidy metrics Parquet file under ``folder`` (a ``results/<config>/`` folder), by its path relative
    to ``folder``; files without the columns chain, metric and value (e.g. ``claims.parquet``) are skipped.

    Raises:
        gradmc.errors.InputError: a file that is not valid Parquet, or a metrics file without gradmc provenance.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    from gradmc.errors import InputError
    from gradmc.results import read_parquet

    folder = Path(folder)
    frames = {}
    for path in sorted(folder.rglob("*.parquet")):
        if any(part.endswith(".shards") for part in path.relative_to(folder).parts[:-1]):
            continue  # a job's per-shard cache (gradmc.distributed.shard_cache), not a result
        try:
            names = set(pq.read_schema(path).names)
        except (pa.ArrowException, OSError) as err:
            raise InputError(f"{path}: not a valid Parquet file ({err})") from err
        if {"chain", "metric", "value"} <= names:  # not e.g. claims.parquet
            frames[path.relative_to(folder).as_posix()] = read_parquet(path)[0]
    return frames


def compare_folders(cpu_folder: str | Path, cuda_folder: str | Path) -> pd.DataFrame:
    """:func:`compare_frames` of the metrics files of two result folders (``results/gpu-check/{cpu,cuda}``)."""
    return compare_frames(load_results(cpu_folder), load_results(cuda_folder))


def _summarise(comparison: pd.DataFrame) -> dict:
    """Per file: number of comparisons, failures, metrics, largest t / critical."""
    summary = {}
    if comparison.empty:
        return summary
    for name, part in comparison.groupby("file", sort=True):
        ratio = part["ratio"].dropna() if "ratio" in part else pd.Series(dtype=float)
        chains = sorted({int(n) for n in part.get("n_cpu", pd.Series(dtype=float)).dropna()})
        summary[name] = {"comparisons": int(len(part)), "failed": int((~part["passed"]).sum()),
                         "metrics": sorted(set(part["metric"]) - {"<file>"}), "chains": chains,
                         "max_ratio": float(ratio.max()) if len(ratio) else None}
    return summary
