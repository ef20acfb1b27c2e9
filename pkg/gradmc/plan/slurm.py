"""The SLURM profile's per-rule resources from a measured plan (``gradmc plan --slurm-profile``).

Per rule with measured tasks (:func:`rule_resources`):

- ``runtime`` (minutes): ``safety`` x the rule's longest SLURM job. A sharded experiment is one SLURM job whose
  Ray instance runs its shards on ``cpus_per_task`` workers (the makespan of its tasks on that many workers);
  a hand-written rule (data, training, AIS) is one SLURM job per wildcard, its longest task. Rules that compute
  on a GPU (the plan's ``gpu``) use the plan's ASSUMED speed-up. At least 10 minutes.
- ``mem_mb``: ``safety`` x the peak resident memory of one shard x the shards that run at once (the workers,
  at most the shards), plus 1000 MB for Ray's own processes in a sharded job. Host memory only: GPU memory is
  not measured on a CPU slice.
- ``gpu`` and ``slurm_partition=gpu``: the rules whose job must hold a GPU under the planned config (the
  plan's ``gpu_request``: its ``device`` is ``cuda``; :func:`gradmc.plan.jobs.holds_gpu`).

What the profile already says that the plan does not measure is the site's, and stays: a rule's
``slurm_partition`` (renamed for a site, e.g. ``a100``) and any other resource of a rule (an account, a
constraint) are kept; the plan only adds ``slurm_partition=gpu`` to a GPU rule that names no partition.

Rules the plan could not measure (missing data, failed probe) keep the profile's default-resources; a partial
plan (``gradmc plan --jobs``) keeps the profile's lines of every rule it does not measure.

A profile cannot set an environment variable per rule (the slurm executor submits with ``--export=ALL`` and
refuses ``--export`` in ``slurm_extra``), so ``GRADMC_SHARD_MEMORY_MB`` cannot be set per job. It need not be: a
job's default budget reads its SLURM allocation (:mod:`gradmc.distributed.machine_memory`); the header names the
value to export to give each shard exactly the plan's measured memory instead (:func:`shard_memory_mb`).
"""

from __future__ import annotations

import functools
import math
import os
from pathlib import Path
from typing import NamedTuple

from gradmc.errors import InputError
from gradmc.plan.extrapolate import makespan
from gradmc.plan.jobs import JOBS, job_spec

__all__ = ["rule_resources", "shard_memory_mb", "write_profile", "ProfileLines"]


class ProfileLines(NamedTuple):
    """What :func:`write_profile` wrote: every ``set-resources`` line, those kept from the profile (a partial
    plan), the ``GRADMC_SHARD_MEMORY_MB`` value the header recommends (None: none measured), the site's GPU lines
    dropped because their rule no longer holds a GPU, and the rules whose plan is partial (some of their tasks not
    costed, so their runtime and memory are lower bounds)."""

    lines: list[str]
    kept: list[str]
    shard_memory_mb: int | None
    dropped: list[str] = []
    lower_bounds: list[str] = []


def _check_factors(cpus_per_task: int, safety: float) -> None:
    if not (isinstance(cpus_per_task, int) and cpus_per_task >= 1):
        raise ValueError(f"need cpus_per_task >= 1, got {cpus_per_task!r}")
    if not (math.isfinite(safety) and safety >= 1):
        raise ValueError(f"need a finite safety factor >= 1, got {safety!r}")


def _measured(job: dict) -> list[dict]:
    return [t for t in job["tasks"] if t.get("seconds") is not None]


def _shard_mb(tasks: list[dict]) -> float:
    return max((t.get("peak_rss_mb") or 0.0) for t in tasks) or 1000.0


def rule_resources(plan: dict, *, cpus_per_task: int = 8, safety: float = 2.0) -> dict[str, dict]:
    """Rule -> {runtime (min), mem_mb, cpus_per_task, slurm_partition?, gpu?} for every measured job of ``plan``.

    Raises:
        ValueError: cpus_per_task < 1, or safety not a finite number >= 1.
    """
    _check_factors(cpus_per_task, safety)
    speedup = float(plan["gpu_speedup_assumed"])
    out: dict[str, dict] = {}
    for job in plan["jobs"]:
        tasks = _measured(job)
        if not tasks:
            continue
        scale = speedup if job["gpu"] else 1.0
        sharded = job_spec(job["name"]).kind == "standard"
        if sharded:
            seconds = makespan([("j", t["seconds"] / scale) for t in tasks], {}, cpus_per_task)
            at_once = min(cpus_per_task, len(tasks))
        else:
            seconds = max(t["seconds"] for t in tasks) / scale
            at_once = 1
        minutes, mem = safety * seconds / 60, safety * _shard_mb(tasks) * at_once
        if not (math.isfinite(minutes) and math.isfinite(mem)):
            raise InputError(f"plan job {job['name']}: runtime {minutes!r} min or memory {mem!r} MB is not a finite "
                             "number; remake the plan (gradmc plan)")
        res = {"runtime": max(10, math.ceil(safety * seconds / 60)),
               "mem_mb": math.ceil(safety * _shard_mb(tasks) * at_once + (1000 if sharded else 0)),
               "cpus_per_task": cpus_per_task if sharded else 2}
        if job.get("gpu_request", job["gpu"]):
            res.update(slurm_partition="gpu", gpu=1)
        out[job["name"]] = res
    return out


@functools.cache
def _memory_split_rules() -> frozenset[str]:
    """The sharded jobs that split a shard over its memory budget (GRADMC_SHARD_MEMORY_MB)."""
    import importlib

    from gradmc.distributed.memory_split import splittable

    return frozenset(name for name, spec in JOBS.items()
                     if spec.kind == "standard" and splittable(importlib.import_module(f"gradmc.experiments.{name}")))


def shard_memory_mb(plan: dict, *, safety: float = 2.0) -> int | None:
    """The ``GRADMC_SHARD_MEMORY_MB`` to export before ``snakemake`` under this profile: ``safety`` x the
    measured peak memory of one shard (the memory each shard gets in the rule's ``mem_mb``), the smallest over
    the measured jobs that split shards by that budget (``ising_sampling``); None if the plan measured none."""
    splitting = _memory_split_rules()
    values = [math.floor(safety * _shard_mb(_measured(job))) for job in plan["jobs"]
              if job["name"] in splitting and _measured(job)]
    return min(values) if values else None


def _kept_shard_mb(kept: list[str]) -> int | None:
    """The budget per shard of the splitting sweeps whose lines a partial plan kept: (mem_mb - 1000 MB of Ray) /
    cpus_per_task (a lower bound where the sweep has fewer shards than workers)."""
    res: dict[str, dict[str, str]] = {}
    for line in kept:
        rule, _, rest = line.partition(":")
        key, _, value = rest.partition("=")
        res.setdefault(rule, {})[key] = value
    values = []
    for rule in _memory_split_rules() & set(res):
        try:
            values.append(math.floor((float(res[rule]["mem_mb"]) - 1000) / int(res[rule]["cpus_per_task"])))
        except (KeyError, ValueError, ZeroDivisionError):
            continue
    values = [v for v in values if v > 0]
    return min(values) if values else None


#: The resources the plan writes for a measured rule; any other resource line of that rule is the site's.
MEASURED_KEYS = ("runtime", "mem_mb", "cpus_per_task", "gpu")


def _asks_for_gpu(key: str, value: str) -> bool:
    """Whether a site's resource line asks SLURM for a GPU: ``gpu=``, or a ``gres`` / ``slurm_extra`` naming one."""
    return key == "gpu" or (key in ("gres", "slurm_extra") and "gpu" in value.lower())


def _with_site_lines(lines: list[str], existing: list[str], measured: set[str],
                     *, full: bool) -> tuple[list[str], list[str]]:
    """``lines`` (the plan's, ``rule:key=value``) with the site's lines kept, and the site's lines dropped.

    For a rule the plan measures: its existing ``slurm_partition`` replaces the plan's unless the rule's GPU
    request changed (it asked for a GPU by a ``gpu``, ``gres`` or ``slurm_extra`` line and the plan says it holds
    none, or the reverse: then the plan's partition, or none, is right); its other non-measured resources follow
    its lines, except the ``gres`` lines asking for a GPU of a rule that no longer holds one (returned as dropped).
    For a full plan, the rules it does not measure (and pseudo-rules such as ``all``) keep their non-measured
    lines; their measured keys fall back to ``default-resources``, and so do the partition and ``gres`` GPU
    lines of such a rule that asked for a GPU.
    """
    site: dict[str, dict[str, str]] = {}
    had_gpu = set()
    for line in existing:
        rule, _, rest = line.partition(":")
        key, _, value = rest.partition("=")
        if _asks_for_gpu(key, value):
            had_gpu.add(rule)
        if key not in MEASURED_KEYS and (rule in measured or full):
            site.setdefault(rule, {})[key] = value
    wants_gpu = {line.partition(":")[0] for line in lines if line.partition(":")[2].startswith("gpu=")}
    dropped = []
    unmeasured_gpu = (had_gpu & set(site)) - measured  # a full plan's unmeasured rule: its GPU lines go too
    for rule in ((had_gpu ^ wants_gpu) & set(site) & measured) | unmeasured_gpu:  # the plan picks the partition
        site[rule].pop("slurm_partition", None)
        if rule not in wants_gpu and "gpu" in site[rule].get("gres", "").lower():
            dropped.append(f"{rule}:gres={site[rule].pop('gres')}")
    site = {rule: keys for rule, keys in site.items() if keys}
    blocks: dict[str, list[str]] = {}  # per rule, in the plan's order: its lines, then the site's
    for line in lines:
        rule, _, rest = line.partition(":")
        if rest.partition("=")[0] == "slurm_partition" and "slurm_partition" in site.get(rule, {}):
            continue  # the site's partition line is added below
        blocks.setdefault(rule, []).append(line)
    for rule, keys in site.items():
        blocks.setdefault(rule, []).extend(f"{rule}:{key}={value}" for key, value in keys.items())
    return [line for block in blocks.values() for line in block], dropped


def write_profile(plan: dict | str | Path, profile: str | Path, *, cpus_per_task: int = 8, safety: float = 2.0,
                  out: str | Path | None = None) -> ProfileLines:
    """Rewrite ``profile``'s ``set-resources`` from ``plan`` (a plan dict, or the path of its plan.json); other
    keys are kept, and the header comment says where the numbers come from (the plan's config and folder
    ``out``, by default the plan file's folder). A partial plan keeps the profile's lines of the rules it does
    not measure. Atomic.

    The file is written where it really is (a symbolic link is followed, not replaced) and keeps its mode.

    Raises:
        ValueError: see :func:`rule_resources`.
        gradmc.errors.InputError: the profile or the plan file cannot be read, is empty, or is not a mapping; the
            profile is read-only; a measured time or memory is too large to write.
    """
    from gradmc.plan.planfile import read_plan
    from gradmc.plan.profile_file import existing_lines, read_profile, write_with_header

    if not isinstance(plan, dict):
        out = out if out is not None else Path(plan).parent
        plan = read_plan(plan)
    current = read_profile(profile)
    target = Path(profile).resolve()
    mode = target.stat().st_mode & 0o7777
    if not mode & 0o222:
        raise InputError(f"--slurm-profile {profile} is read-only; make it writable (chmod u+w) or give a copy")
    resources = rule_resources(plan, cpus_per_task=cpus_per_task, safety=safety)
    lines = [f"{rule}:{key}={value}" for rule, res in resources.items() for key, value in res.items()]
    partial = plan.get("partial")
    if not isinstance(partial, bool):  # a plan written before plan.json recorded it: a full plan has every job
        partial = not set(JOBS) <= {job["name"] for job in plan["jobs"]}
    kept = []
    if partial:
        kept = [line for line in existing_lines(current.get("set-resources"), profile)
                if line.split(":", 1)[0] not in resources]
    lines, dropped = _with_site_lines(lines, existing_lines(current.get("set-resources"), profile), set(resources),
                                      full=not partial)
    current["set-resources"] = lines + kept
    mem = shard_memory_mb(plan, safety=safety)
    if mem is None and kept:
        mem = _kept_shard_mb(kept)
    write_with_header(target, current, plan, out=out if out is not None else "OUT", safety=safety,
                      cpus=cpus_per_task, partial=partial, kept=kept, shard_mb=mem, shown=profile)
    os.chmod(target, mode)
    lower = sorted(job["name"] for job in plan["jobs"]
                   if job["name"] in resources and len(_measured(job)) < len(job["tasks"]))
    return ProfileLines(lines + kept, kept, mem, dropped, lower)
