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

__all__ = ["SAMPLER_REGISTRY", "checkpoint_tag", "collect", "job_config", "run_experiment", "shard_code_digest"]

#: The module that builds samplers by name; opaque in a per-shard code digest (see :func:`shard_code_digest`).
SAMPLER_REGISTRY = "gradmc.samplers.discrete.registry"


def job_config(name: str, config: dict) -> dict:
    """The part of a full, validated ``config`` that experiment ``name``'s job may read (its declared
    ``config_keys`` plus ``device`` and ``gpus_per_shard``; ``device: cpu`` for a ``cpu_only`` job,
    :meth:`gradmc.registry.Experiment.job_config`), nothing else.

    Raises:
        KeyError: a declared key that the config lacks.
    """
    return standard(name).job_config(config)


def collect(name: str, results: list[pd.DataFrame], inputs: dict[str, str] | None = None) -> pd.DataFrame:
    """Concatenate the shard frames of experiment ``name`` (warning once per sampler that rejected non-finite
    proposals, :func:`~gradmc.experiments.runner.warn_nonfinite`), apply the module's ``finalize(df, inputs)`` if it
    has one, and sort stably by the registry's ``sort_by`` columns (index reset)."""
    from gradmc.experiments.runner import warn_nonfinite

    entry = standard(name)
    df = pd.concat(results, ignore_index=True)
    warn_nonfinite(df)
    finalize = getattr(importlib.import_module(entry.module), "finalize", None)
    if finalize is not None:
        df = finalize(df, dict(inputs or {}))
    return df.sort_values(list(entry.sort_by), kind="stable").reset_index(drop=True)


def shard_code_digest(name: str, root: str | os.PathLike | None = None) -> Callable[[object], str]:
    """The function giving the code digest of each shard (or shard part) of experiment ``name``, for its cache key.

    Without ``shard_samplers`` in the module, every shard's digest is that of the module, its ``META`` ``uses``
    and every gradmc module they import (so every sampler the registry can build). A module that defines
    ``shard_samplers(shard) -> names`` (the :func:`~gradmc.samplers.discrete.registry.make_sampler` names the
    shard builds; :func:`gradmc.distributed.memory_split.run_unit` checks it at run time) gets per-shard digests:
    the same modules with the sampler registry opaque (its own code counts, not the samplers it imports), plus
    the modules of the shard's samplers (:func:`~gradmc.samplers.discrete.registry.sampler_modules`) and all they
    import. An edit to one sampler's file then changes the keys of only the shards that run it.

    ``root``: the gradmc package folder whose files are hashed (default: the imported package's own).

    Raises:
        ValueError: (when called) a declared name the sampler registry does not know.
    """
    from gradmc.codedigest import PACKAGE_ROOT
    from gradmc.distributed.memory_split import ShardPart

    root = PACKAGE_ROOT if root is None else root
    entry = standard(name)
    roots = (entry.module, *entry.uses)
    declared = getattr(importlib.import_module(entry.module), "shard_samplers", None)
    if declared is None:
        whole = source_digest(*roots, root=root)
        return lambda unit: whole
    # imported by name: a static import would make this runner's own code digest (every rule's) cover every sampler
    sampler_modules = importlib.import_module(SAMPLER_REGISTRY).sampler_modules
    memo: dict[tuple[str, ...], str] = {}

    def digest(unit) -> str:
        shard = unit.shard if isinstance(unit, ShardPart) else unit
        samplers = tuple(sorted(set(declared(shard))))
        if samplers not in memo:
            extra = sorted({m for sampler in samplers for m in sampler_modules(sampler)})
            memo[samplers] = source_digest(*roots, root=root, opaque=(SAMPLER_REGISTRY,), extra=extra)
        return memo[samplers]

    return digest


def checkpoint_tag(name: str, shard) -> str:
    """16 hex digits naming a mid-shard checkpoint of experiment ``name``'s ``shard``: a SHA-256 over the shard's
    fields and the digest of the code it runs (:func:`shard_code_digest`), so a run resumed after a code change
    starts afresh instead of continuing the old code's chains."""
    import hashlib

    text = f"{shard!r}\0{shard_code_digest(name)(shard)}"
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


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
        executor: ``"tasks"``, ``"actors"`` or ``"inline"`` (:func:`gradmc.distributed.run_shards`); None: its
            default (inline for one worker with no GPU and no Ray cluster, else Ray tasks).
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
    from gradmc.distributed import run_shards, shutdown_ray
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
        cache = ShardCache(shard_cache, name, shard_code_digest(name), progress=progress)

    def on_ray(fn, todo, **kwargs):
        try:  # a private Ray instance gets only the job's cores; one worker runs inline, without Ray
            return run_shards(fn, todo, num_workers=workers, num_gpus_per_shard=gpus, executor=executor, **kwargs)
        finally:
            shutdown_ray()

    say = (lambda line: progress(f"[{name}] {line}")) if progress is not None else None
    units, groups = split_for_memory(module, shards, memory_budget, progress=say)
    frames, computed = run_cached(run_unit, units, cache, on_ray, progress=progress, desc=name,
                                  names=unit_names(units, groups), noun=unit_noun(units))
    if progress is not None:
        progress(f"[{name}] shards: {computed} computed, {len(units) - computed} from the cache (of {len(units)} "
                 f"{unit_noun(units)})")
    return collect(name, merge_results(module, shards, units, groups, frames), inputs)


def cache_status(name: str, config: dict, inputs: dict[str, str], out: str | os.PathLike,
                 workers: int | None = None) -> tuple[int, int]:
    """(stored, total): how many of the units :func:`run_experiment` would run for ``name`` (shards, or parts of
    shards over the default memory budget for ``workers``) the shard cache beside ``out`` already holds. Reads
    the cache; computes nothing.

    Raises:
        KeyError, gradmc.errors.UserError: as :func:`run_experiment` would for this config and these inputs.
    """
    from gradmc.distributed.memory_split import resolve_budget_with_source, split_for_memory
    from gradmc.distributed.shard_cache import ShardCache, cache_folder_for

    module = importlib.import_module(standard(name).module)
    shards = module.shards(job_config(name, config), dict(inputs))
    budget, _ = resolve_budget_with_source(None, workers)
    units, _ = split_for_memory(module, shards, budget, progress=None)
    cache = ShardCache(cache_folder_for(out), name, shard_code_digest(name), progress=None)
    stored = sum(cache.path(unit).is_file() for unit in units)
    return stored, len(units)
