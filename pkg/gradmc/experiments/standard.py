"""Running a standard experiment (see :mod:`gradmc.registry`): its shards on Ray, one sorted metrics frame.

``gradmc run <name>`` calls :func:`run_experiment`; tests call :func:`collect` on shard frames they ran
in-process, so both see the same concatenation, finalisation and order.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable

import pandas as pd

from gradmc.codedigest import source_digest
from gradmc.registry import standard

__all__ = ["collect", "job_config", "run_experiment"]


def job_config(name: str, config: dict) -> dict:
    """The part of a full, validated ``config`` that experiment ``name``'s job may read (its declared
    ``config_keys`` plus ``device`` and ``gpus_per_shard``; ``device: cpu`` for a ``cpu_only`` job,
    :meth:`gradmc.registry.Experiment.job_config`), nothing else.

    Raises:
        KeyError: a declared key that the config lacks.
    """
    return standard(name).job_config(config)


def collect(name: str, results: list[pd.DataFrame], inputs: dict[str, str] | None = None) -> pd.DataFrame:
    """Concatenate the shard frames of experiment ``name``, apply the module's ``finalize(df, inputs)`` if it
    has one, and sort stably by the registry's ``sort_by`` columns (index reset)."""
    entry = standard(name)
    df = pd.concat(results, ignore_index=True)
    finalize = getattr(importlib.import_module(entry.module), "finalize", None)
    if finalize is not None:
        df = finalize(df, dict(inputs or {}))
    return df.sort_values(list(entry.sort_by), kind="stable").reset_index(drop=True)


def run_experiment(name: str, config: dict, inputs: dict[str, str], *, workers: int | None = None,
                   progress: Callable[[str], None] | None = print,
                   shard_cache: str | os.PathLike | None = None, executor: str | None = None,
                   memory_budget: int | None = None, memory_source: str | None = None) -> pd.DataFrame:
    """Run every shard of experiment ``name`` on Ray and return the collected metrics.

    Every sweep takes one path: :func:`gradmc.distributed.memory_split.split_for_memory` turns the shards into
    units (each shard itself, or the parts of a shard over the memory budget), the units run through
    :func:`gradmc.distributed.memory_split.run_unit` (a whole shard: the module's ``run``, so an unsplit
    sweep's rows are the module's own), and :func:`gradmc.distributed.memory_split.merge_results` gives back
    one frame per shard. A whole shard is cached under the shard's own key, a part under its own.

    Args:
        name: a standard experiment (registry name).
        config: the full validated config; the module sees only :func:`job_config` of it.
        inputs: name -> path of the files the experiment declares in ``META["inputs"]``.
        workers: parallel Ray workers (None: the cores Ray sees).
        progress: callable receiving progress lines, or None.
        shard_cache: folder of the per-shard cache (:mod:`gradmc.distributed.shard_cache`): each finished
            shard (or part) is stored there at once and a rerun computes only those not stored; None: no cache.
        executor: ``"tasks"`` or ``"actors"`` (:func:`gradmc.distributed.run_shards`); None: its default.
        memory_budget: bytes one shard may use; a shard estimated above it is split into parts of whole
            chain blocks with the same rows (:mod:`gradmc.distributed.memory_split`); None: no split.
        memory_source: where the budget came from (``resolve_budget_with_source``), printed with the budget
            for an experiment that can split its shards.

    Returns:
        The tidy metrics frame (:func:`collect`); the same with or without the cache, interrupted or not.

    Raises:
        TypeError: a shard whose type the experiment's module does not define (``run_unit`` finds a whole
            shard's ``run`` through its type's module).
    """
    from gradmc.distributed import ensure_ray, run_shards, shutdown_ray
    from gradmc.distributed.machine_memory import format_bytes
    from gradmc.distributed.memory_split import (
        merge_results,
        run_unit,
        split_for_memory,
        splittable,
        unit_names,
        unit_noun,
    )
    from gradmc.distributed.shard_cache import ShardCache, run_cached

    entry = standard(name)
    module = importlib.import_module(entry.module)
    part = job_config(name, config)
    shards = module.shards(part, dict(inputs))
    foreign = sorted({type(shard).__module__ for shard in shards} - {entry.module})
    if foreign:
        raise TypeError(f"{name}: shards of types defined in {foreign}, not in {entry.module}; run_unit runs a shard "
                        "with the run of the module defining its type")
    if progress is not None:
        progress(f"[{name}] {len(shards)} shard{'' if len(shards) == 1 else 's'}")
        if splittable(module):
            budget = "none" if memory_budget is None else f"{format_bytes(memory_budget)} per shard"
            progress(f"[{name}] memory budget: {budget}" + (f" ({memory_source})" if memory_source else ""))
    gpus = part["gpus_per_shard"] if part["device"] == "cuda" else 0.0
    cache = None
    if shard_cache is not None:
        cache = ShardCache(shard_cache, name, source_digest(entry.module, *entry.uses), progress=progress)

    def on_ray(fn, todo, **kwargs):
        ensure_ray(num_cpus=workers)  # a private instance gets only the job's cores
        try:
            return run_shards(fn, todo, num_workers=workers, num_gpus_per_shard=gpus, executor=executor, **kwargs)
        finally:
            shutdown_ray()

    say = (lambda line: progress(f"[{name}] {line}")) if progress is not None else None
    units, groups = split_for_memory(module, shards, memory_budget, progress=say)
    frames, _ = run_cached(run_unit, units, cache, on_ray, progress=progress, desc=name,
                           names=unit_names(units, groups), noun=unit_noun(units))
    return collect(name, merge_results(module, shards, units, groups, frames), inputs)
