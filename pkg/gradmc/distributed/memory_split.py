"""Memory-aware shards: a shard whose chains would not fit in the memory budget is split into parts that do.

A sweep's shards are sized by the config (e.g. ``chains_per_shard``), not by the machine. Before a sweep
runs, :func:`split_for_memory` asks each splittable experiment for its estimate of a shard's peak memory
and, where it exceeds the budget, replaces the shard by :class:`ShardPart` s, each holding as many whole
*chain blocks* as fit. The parts run as ordinary shards (on Ray, each stored in the shard cache on its
own), and :func:`merge_results` hands each split shard's part frames to the experiment's
``merge_parts``, which returns the rows the unsplit shard would have returned.

Equal rows need randomness that grouping cannot change: every chain block draws from its own generator
(:class:`gradmc.samplers.streams.ChainStreams`), so the chains of a part are the same chains as in the
whole shard. Timing columns (``wall_time_s`` and rates per second) are measurements and differ between
any two runs, split or not.

A splittable experiment module defines, besides ``shards`` and ``run``:

- ``shard_chains(shard) -> (num_chains, chain_block)``: the shard's chains and its block size;
- ``shard_memory_bytes(shard, num_chains) -> int``: estimated peak bytes of running ``num_chains`` of
  the shard's chains (beyond the worker process's own baseline of Python, torch and Ray);
- ``run_part(part) -> DataFrame`` and ``merge_parts(shard, frames) -> DataFrame``.

The budget per shard (:func:`resolve_memory_budget`): ``--shard-memory-mb`` of ``gradmc run``, else the
environment variable ``GRADMC_SHARD_MEMORY_MB``, else :data:`DEFAULT_MEMORY_FRACTION` of this machine's
physical memory divided among the workers that run at once.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import pandas as pd

from gradmc.errors import InputError

__all__ = ["DEFAULT_MEMORY_FRACTION", "MEMORY_ENV_VAR", "ShardPart", "ShardTooLargeError", "merge_results",
           "physical_memory_bytes", "resolve_memory_budget", "run_unit", "split_for_memory", "splittable"]

MEMORY_ENV_VAR = "GRADMC_SHARD_MEMORY_MB"
DEFAULT_MEMORY_FRACTION = 0.8
"""Share of the machine's physical memory that the shards running at once may use together."""

_MB = 1 << 20


class ShardTooLargeError(InputError):
    """One chain block of a shard does not fit in the memory budget: no split can help."""


@dataclass(frozen=True)
class ShardPart:
    """Chains ``start .. stop - 1`` of ``shard`` (offsets into the shard's own chains, whole chain blocks)."""

    shard: Any
    start: int
    stop: int


def physical_memory_bytes() -> int | None:
    """This machine's physical memory in bytes (``os.sysconf``), or None where it cannot be read."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return None


def resolve_memory_budget(budget_mb: float | None = None, workers: int | None = None) -> int | None:
    """The memory budget of one shard, in bytes.

    Args:
        budget_mb: the budget in MiB (``gradmc run --shard-memory-mb``); None: ``$GRADMC_SHARD_MEMORY_MB``,
            else the machine's default.
        workers: shards running at once on this machine (None: its CPU count).

    Returns:
        Bytes, or None (no budget: never split) where neither is given and the machine's memory is unknown.

    Raises:
        gradmc.errors.InputError: a budget (argument or environment variable) that is not a positive number.
    """
    source = "--shard-memory-mb"
    if budget_mb is None:
        env = os.environ.get(MEMORY_ENV_VAR, "")
        if env == "":
            total = physical_memory_bytes()
            if total is None:
                return None
            return int(DEFAULT_MEMORY_FRACTION * total / max(1, workers or os.cpu_count() or 1))
        source = MEMORY_ENV_VAR
        try:
            budget_mb = float(env)
        except ValueError:
            raise InputError(f"{MEMORY_ENV_VAR}={env!r} is not a number of MiB (unset it for the default: "
                             f"{DEFAULT_MEMORY_FRACTION:g} of physical memory over the workers)") from None
    if not budget_mb > 0 or budget_mb == float("inf"):
        raise InputError(f"{source} must be a positive, finite number of MiB, got {budget_mb!r}")
    return int(budget_mb * _MB)


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
            shard, its estimate and the budget, and what to change).
    """
    units: list[Any] = []
    groups: list[list[int]] = []
    for number, shard in enumerate(shards):
        if budget is None or not splittable(module):
            groups.append([len(units)])
            units.append(shard)
            continue
        chains, block = module.shard_chains(shard)
        need = int(module.shard_memory_bytes(shard, chains))
        if need <= budget:
            groups.append([len(units)])
            units.append(shard)
            continue
        blocks = -(-chains // block)
        fit = max((k for k in range(1, blocks + 1)
                   if module.shard_memory_bytes(shard, min(k * block, chains)) <= budget), default=0)
        if fit == 0:
            raise ShardTooLargeError(
                f"shard {number} {shard!r} needs about {need / _MB:.0f} MiB and one chain block of {block} chains "
                f"about {module.shard_memory_bytes(shard, min(block, chains)) / _MB:.0f} MiB, over the budget of "
                f"{budget / _MB:.0f} MiB per shard: give shards more memory (--shard-memory-mb or "
                f"{MEMORY_ENV_VAR}) or lower chain_block (or the problem size) in the config")
        step = fit * block
        parts = [ShardPart(shard, start, min(start + step, chains)) for start in range(0, chains, step)]
        if progress is not None:
            progress(f"shard {number} needs about {need / _MB:.0f} MiB, over the budget of {budget / _MB:.0f} MiB: "
                     f"split into {len(parts)} parts of at most {step} chains")
        groups.append(list(range(len(units), len(units) + len(parts))))
        units.extend(parts)
    return units, groups


def run_unit(unit: Any) -> pd.DataFrame:
    """Run one unit of :func:`split_for_memory`: ``run_part`` of the shard's module for a part, else ``run``."""
    if isinstance(unit, ShardPart):
        return importlib.import_module(type(unit.shard).__module__).run_part(unit)
    return importlib.import_module(type(unit).__module__).run(unit)


def merge_results(module: ModuleType, shards: list[Any], units: list[Any], groups: list[list[int]],
                  frames: list[Any]) -> list[Any]:
    """Per shard, its frame: its unit's frame, or ``module.merge_parts(shard, part frames)`` for a split shard.

    Args:
        module, shards: as given to :func:`split_for_memory`; units, groups: what it returned.
        frames: ``frames[i]`` is the result of ``units[i]``.
    """
    out = []
    for shard, group in zip(shards, groups, strict=True):
        if isinstance(units[group[0]], ShardPart):
            out.append(module.merge_parts(shard, [frames[i] for i in group]))
        else:
            out.append(frames[group[0]])
    return out
