"""The SLURM profile's per-rule resources from a measured plan (``gradmc plan --slurm-profile``).

Per rule with measured tasks (:func:`rule_resources`):

- ``runtime`` (minutes): ``safety`` x the rule's longest SLURM job. A sharded experiment is one SLURM job whose
  Ray instance runs its shards on ``cpus_per_task`` workers (the makespan of its tasks on that many workers);
  a hand-written rule (data, training, AIS) is one SLURM job per wildcard, its longest task. GPU rules use the
  plan's ASSUMED speed-up. At least 10 minutes.
- ``mem_mb``: ``safety`` x the peak resident memory of one shard x the shards that run at once (the workers,
  at most the shards), plus 1000 MB for Ray's own processes in a sharded job. Host memory only: GPU memory is
  not measured on a CPU slice.
- ``gpu`` and ``slurm_partition=gpu``: the rules the config runs on a GPU (``JobSpec.gpu``).

Rules the plan could not measure (missing data, failed probe) keep the profile's default-resources.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import yaml

from gradmc.atomic import atomic_path
from gradmc.plan.extrapolate import makespan

__all__ = ["rule_resources", "write_profile"]

HEADER = """\
# SLURM: Snakemake's slurm executor plugin (snakemake-executor-plugin-slurm, installed with gradmc) submits
# each job as its own SLURM job. Sharded jobs then start a private Ray instance inside their allocation
# (cpus_per_task cores, `gpu` GPUs). Edit the partition/account names for your site.
# Usage: snakemake --workflow-profile workflow/profiles/slurm --configfile config/paper.yaml
# Check a profile without submitting anything: snakemake --dry-run --workflow-profile workflow/profiles/slurm
#
# set-resources below is GENERATED from a measured compute plan, not guessed: `make plan-paper` (gradmc plan)
# slices every job of config/paper.yaml on a CPU, and
#   gradmc plan --out results/paper --slurm-profile workflow/profiles/slurm/config.yaml
# rewrites it from results/paper/plan.json (docs/paper_plan.md is the plan it was made from). Per rule:
# runtime = {safety:g} x the measured (extrapolated) wall time of its longest SLURM job, in minutes (a sharded
# experiment: its shards on {cpus} Ray workers; GPU rules: CPU time / the plan's ASSUMED GPU speed-up of
# {speedup:g}); mem_mb = {safety:g} x peak resident memory per shard x shards at once (+1000 MB Ray); gpu=1 and
# the gpu partition for the rules paper.yaml runs on CUDA. GPU memory is not measured (CPU slice). Rules the plan
# could not measure (missing data, failed probes) keep default-resources. Rerun the command after a new plan.
"""


def rule_resources(plan: dict, *, cpus_per_task: int = 8, safety: float = 2.0) -> dict[str, dict]:
    """Rule -> {runtime (min), mem_mb, cpus_per_task, gpu?, slurm_partition?} for every measured job of ``plan``.

    Raises:
        ValueError: cpus_per_task < 1 or safety <= 0.
    """
    if cpus_per_task < 1 or safety <= 0:
        raise ValueError(f"need cpus_per_task >= 1 and safety > 0, got {cpus_per_task}, {safety}")
    speedup = float(plan["gpu_speedup_assumed"])
    out: dict[str, dict] = {}
    for job in plan["jobs"]:
        tasks = [t for t in job["tasks"] if t.get("seconds") is not None]
        if not tasks:
            continue
        scale = speedup if job["gpu"] else 1.0
        sharded = job["name"] in _standard_jobs()
        if sharded:
            seconds = makespan([("j", t["seconds"] / scale) for t in tasks], {}, cpus_per_task)
            at_once = min(cpus_per_task, len(tasks))
        else:
            seconds = max(t["seconds"] for t in tasks) / scale
            at_once = 1
        rss = max((t["peak_rss_mb"] or 0.0) for t in tasks) or 1000.0
        res = {"runtime": max(10, math.ceil(safety * seconds / 60)),
               "mem_mb": math.ceil(safety * rss * at_once + (1000 if sharded else 0)),
               "cpus_per_task": cpus_per_task if sharded else 2}
        if job["gpu"]:
            res.update(slurm_partition="gpu", gpu=1)
        out[job["name"]] = res
    return out


def _standard_jobs() -> set[str]:
    from gradmc.registry import experiments

    return set(experiments())


def write_profile(plan_json: str | Path, profile: str | Path, *, cpus_per_task: int = 8,
                  safety: float = 2.0) -> list[str]:
    """Rewrite ``profile``'s ``set-resources`` from the plan in ``plan_json`` (other keys kept; the header
    comment says where the numbers come from); returns the ``set-resources`` lines. Atomic.

    Raises:
        ValueError: see :func:`rule_resources`; a profile that is not a YAML mapping.
    """
    plan = json.loads(Path(plan_json).read_text(encoding="utf-8"))
    current = yaml.safe_load(Path(profile).read_text(encoding="utf-8"))
    if not isinstance(current, dict):
        raise ValueError(f"{profile} is not a YAML mapping")
    lines = [f"{rule}:{key}={value}" for rule, res in rule_resources(plan, cpus_per_task=cpus_per_task,
                                                                      safety=safety).items()
             for key, value in res.items()]
    current["set-resources"] = lines
    body = yaml.safe_dump(current, sort_keys=False, default_flow_style=False, width=120)
    text = HEADER.format(safety=safety, cpus=cpus_per_task, speedup=float(plan["gpu_speedup_assumed"])) + body
    with atomic_path(profile) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return lines
