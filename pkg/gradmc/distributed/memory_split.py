"""Memory-aware shards: a shard whose chains would not fit in the memory budget is split into parts that do.

Before a sweep runs, :func:`split_for_memory` asks a splittable experiment for its estimate of each shard's
peak memory and replaces a shard over the budget by :class:`ShardPart` s of as many whole *chain blocks* as
fit. The parts run (and are cached) as ordinary shards, and :func:`merge_results` hands each split shard's
part frames to the experiment's ``merge_parts``, which returns the rows the unsplit shard would have returned:
every chain block draws from its own generator (:class:`gradmc.core.streams.ChainStreams`), so the chains of
a part are the same chains as in the whole shard (timing columns are measurements and differ run to run).

A splittable experiment module defines, besides ``shards`` and ``run``:

- ``shard_chains(shard) -> (num_chains, chain_block)``;
- ``shard_memory_bytes(shard, num_chains) -> int``: estimated peak bytes of running ``num_chains`` of the
  shard's chains (beyond the worker process's own baseline of Python, torch and Ray);
- ``run_part(part) -> DataFrame`` and ``merge_parts(shard, frames) -> DataFrame``.

The budget per shard is :func:`resolve_budget_with_source`'s. The shard cache keys each part by its chains, so
parts stored under one budget are not reused by a run under a budget that splits the shard differently.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import pandas as pd

from gradmc.distributed import machine_memory
from gradmc.distributed.machine_memory import format_bytes
from gradmc.errors import InputError

__all__ = ["DEFAULT_MEMORY_FRACTION", "MEMORY_ENV_VAR", "ShardPart", "ShardTooLargeError", "merge_results",
           "resolve_budget_with_source", "resolve_memory_budget", "run_unit", "split_for_memory", "splittable",
           "unit_names", "unit_noun"]

MEMORY_ENV_VAR = "GRADMC_SHARD_MEMORY_MB"
DEFAULT_MEMORY_FRACTION = 0.8
"""Share of the memory this process may use (:func:`gradmc.distributed.machine_memory.memory_limit`) that the
shards running at once may use together."""

_MB = 1 << 20


class ShardTooLargeError(InputError):
    """One chain block of a shard does not fit in the memory budget: no split can help."""


@dataclass(frozen=True)
class ShardPart:
    """Chains ``start .. stop - 1`` of ``shard`` (offsets into the shard's own chains, whole chain blocks)."""

    shard: Any
    start: int
    stop: int


def resolve_budget_with_source(budget_mb: float | None = None,
                               workers: int | None = None) -> tuple[int | None, str]:
    """The memory budget of one shard, in bytes, and a phrase saying where it came from.

    Args:
        budget_mb: the budget in MiB (``gradmc run --shard-memory-mb``); None: ``$GRADMC_SHARD_MEMORY_MB``,
            else :data:`DEFAULT_MEMORY_FRACTION` of the smallest of physical memory, the cgroup v2 / v1
            limits and the SLURM allocation (:func:`gradmc.distributed.machine_memory.memory_limit`) over
            ``workers``.
        workers: shards running at once on this machine (None: its CPU count).

    Returns:
        (bytes, source), e.g. ``(858993459, "0.8 of 2.0 GiB (the cgroup v2 limit, /sys/fs/cgroup/memory.max)
        over 2 workers")``; bytes is None (no budget: never split) where neither is given and no memory
        limit can be read.

    Raises:
        gradmc.errors.InputError: a budget (argument or environment variable) that is not a positive number.
    """
    if budget_mb is not None:
        name, source = "--shard-memory-mb", f"--shard-memory-mb {budget_mb:g}"
    elif env := os.environ.get(MEMORY_ENV_VAR, ""):
        name, source = MEMORY_ENV_VAR, f"{MEMORY_ENV_VAR}={env}"
        try:
            budget_mb = float(env)
        except ValueError:
            raise InputError(f"{MEMORY_ENV_VAR}={env!r} is not a number of MiB (unset it for the default: "
                             f"{DEFAULT_MEMORY_FRACTION:g} of this machine's memory limit over the workers)") from None
    elif (limit := machine_memory.memory_limit()) is None:
        return None, "no memory limit readable on this machine"
    else:
        share = max(1, workers or os.cpu_count() or 1)
        return (int(DEFAULT_MEMORY_FRACTION * limit[0] / share),
                f"{DEFAULT_MEMORY_FRACTION:g} of {format_bytes(limit[0])} ({limit[1]}) over {share} workers")
    if not budget_mb > 0 or budget_mb == float("inf") or int(budget_mb * _MB) < 1:
        raise InputError(f"{name} must be a positive, finite number of MiB (at least one byte; e.g. 2048), "
                         f"got {budget_mb!r}")
    return int(budget_mb * _MB), source


def resolve_memory_budget(budget_mb: float | None = None, workers: int | None = None) -> int | None:
    """The first item of :func:`resolve_budget_with_source`: bytes one shard may use (None: never split).

    Raises:
        gradmc.errors.InputError: a budget (argument or environment variable) that is not a positive number.
    """
    return resolve_budget_with_source(budget_mb, workers)[0]


def splittable(module: ModuleType) -> bool:
    """True if ``module`` defines the four functions of a splittable experiment (module docstring)."""
    return all(callable(getattr(module, name, None))
               for name in ("shard_chains", "shard_memory_bytes", "run_part", "merge_parts"))


def split_for_memory(module: ModuleType, shards: list[Any], budget: int | None,
                     progress=None) -> tuple[list[Any], list[list[int]]]:
    """Replace every shard whose estimated memory exceeds ``budget`` by parts of whole chain blocks.

    Args:
        module: the experiment's module; one that is not :func:`splittable`, or a None budget, splits nothing.
        shards: the sweep's shards.
        budget: bytes one shard may use (:func:`resolve_memory_budget`).
        progress: receives one line per split shard; None for silence.

    Returns:
        (units, groups): the units to run (shards and :class:`ShardPart` s, in sweep order) and, per
        shard, the indices of its units in ``units`` (one index for a shard that runs whole).

    Raises:
        ShardTooLargeError: one chain block of a shard alone exceeds the budget (the message names the
            shard, its estimate and the budget, and what to change); where ``chain_block`` is at least the
            shard's chains, that block is the whole shard, and the message says it cannot be split.
    """
    units: list[Any] = []
    groups: list[list[int]] = []
    for number, shard in enumerate(shards):
        parts = [shard]
        if budget is not None and splittable(module):
            chains, block = module.shard_chains(shard)
            if (need := int(module.shard_memory_bytes(shard, chains))) > budget:
                blocks = -(-chains // block)  # the last block may hold fewer chains
                fit = max((k for k in range(1, blocks + 1)
                           if module.shard_memory_bytes(shard, min(k * block, chains)) <= budget), default=0)
                if fit == 0:
                    raise ShardTooLargeError(_too_large(module, number, shard, need, chains, block, budget))
                step = fit * block
                parts = [ShardPart(shard, start, min(start + step, chains)) for start in range(0, chains, step)]
                if progress is not None:
                    progress(f"shard {number} needs about {format_bytes(need)}, over the budget of "
                             f"{format_bytes(budget)} per shard: split into {len(parts)} parts of at most {step} "
                             f"chains ({fit} chain block{'s' if fit > 1 else ''} of {block})")
        groups.append(list(range(len(units), len(units) + len(parts))))
        units.extend(parts)
    return units, groups


def _too_large(module: ModuleType, number: int, shard: Any, need: int, chains: int, block: int, budget: int) -> str:
    """The message of :class:`ShardTooLargeError`: what the smallest possible part is and what it needs."""
    advice = (f"give shards more memory (--shard-memory-mb or {MEMORY_ENV_VAR}) or lower chain_block (or the "
              "problem size) in the config")
    head = (f"shard {number} {shard!r} needs about {format_bytes(need)}, over the budget of {format_bytes(budget)} "
            "per shard")
    if block >= chains:
        return (f"{head}, and cannot be split: its {chains} chains are a single chain block (chain_block {block} "
                f">= {chains}), the smallest part a split can make: {advice}")
    smallest = module.shard_memory_bytes(shard, block)
    return (f"{head}, and even its smallest part, one chain block of {block} chains, needs about "
            f"{format_bytes(smallest)}: {advice}")


def unit_names(units: list[Any], groups: list[list[int]]) -> list[str]:
    """How progress lines and errors name each unit of :func:`split_for_memory`: ``shard 3`` for shard 3
    of the sweep (from 0) run whole, ``shard 3 part 2/4`` for the second of the 4 parts shard 3 was split into."""
    names = [""] * len(units)
    for number, group in enumerate(groups):
        if len(group) == 1 and not isinstance(units[group[0]], ShardPart):
            names[group[0]] = f"shard {number}"
            continue
        for j, index in enumerate(group, start=1):
            names[index] = f"shard {number} part {j}/{len(group)}"
    return names


def unit_noun(units: list[Any]) -> str:
    """What the units are, for counts in progress lines: ``shards``, ``parts`` (every shard was split) or
    ``whole shards and parts``."""
    parts = sum(isinstance(unit, ShardPart) for unit in units)
    if parts == 0:
        return "shards"
    return "parts" if parts == len(units) else "whole shards and parts"


def run_unit(unit: Any) -> pd.DataFrame:
    """Run one unit of :func:`split_for_memory`: ``run_part`` of the shard's module for a part, else ``run`` of
    the module that defines the shard's type (the experiment's own module, which
    :func:`gradmc.experiments.standard.run_experiment` checks). Module-level, so Ray pickles it by reference.

    Raises:
        gradmc.samplers.recording.UndeclaredSamplerError: the module declares ``shard_samplers(shard)``
            (its shards' cache keys cover only those samplers' code) and the unit built a sampler it does not
            name; no frame is returned, so nothing is cached under a key that misses that sampler's code.
    """
    from gradmc.samplers.recording import UndeclaredSamplerError, recording_samplers

    shard = unit.shard if isinstance(unit, ShardPart) else unit
    module = importlib.import_module(type(shard).__module__)
    with recording_samplers() as built:
        frame = module.run_part(unit) if isinstance(unit, ShardPart) else module.run(unit)
    declared = getattr(module, "shard_samplers", None)
    if declared is not None and not built <= set(declared(shard)):
        raise UndeclaredSamplerError(
            f"{module.__name__}: a shard built the samplers {sorted(built)}, but shard_samplers(shard) declares "
            f"{sorted(declared(shard))}; declare every sampler the shard builds (its cache key covers only their "
            f"code): {shard!r}")
    return frame


def merge_results(module: ModuleType, shards: list[Any], units: list[Any], groups: list[list[int]],
                  frames: list[Any]) -> list[Any]:
    """Per shard, its frame: its unit's frame, or ``module.merge_parts(shard, part frames)`` for a split shard.

    Args:
        module, shards: as given to :func:`split_for_memory`; units, groups: what it returned.
        frames: ``frames[i]`` is the result of ``units[i]``.
    """
    return [module.merge_parts(shard, [frames[i] for i in group]) if isinstance(units[group[0]], ShardPart)
            else frames[group[0]] for shard, group in zip(shards, groups, strict=True)]
