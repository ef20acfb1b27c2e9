"""The SLURM profile's per-rule ``set-resources`` from a measured plan (``gradmc plan --slurm-profile``): read and
check ``OUT/plan.json`` and the profile, compute each measured rule's resources, and write the profile back
under a header that says where its numbers come from.

The profile's lines that the plan does not measure are the site's and stay: a rule's ``slurm_partition``
(renamed for a site, e.g. ``a100``) and any other resource (an account, a constraint). Rules the plan could not
measure keep default-resources; a partial plan (``--jobs``) keeps the profile's lines of every rule it does not
measure.
"""

from __future__ import annotations

import functools
import json
import math
import os
import textwrap
from pathlib import Path
from typing import NamedTuple

import yaml

from gradmc.atomic import atomic_path
from gradmc.errors import InputError, MissingInputError
from gradmc.plan.extrapolate import makespan
from gradmc.plan.jobs import JOBS, job_spec, known_rules

__all__ = ["read_plan", "read_profile", "rule_resources", "shard_memory_mb", "write_profile", "ProfileLines",
           "remake_hint"]

#: The profile this repository ships, named in messages.
EXAMPLE = "workflow/profiles/slurm/config.yaml"
#: The resources the plan writes for a measured rule; any other resource line of that rule is the site's.
MEASURED_KEYS = ("runtime", "mem_mb", "cpus_per_task", "gpu")

#: The header comment, paragraph by paragraph: each is filled in and wrapped; a line starting with "  " is a
#: command, kept on its own line.
HEADER = (
    "SLURM: Snakemake's slurm executor plugin (snakemake-executor-plugin-slurm, installed with gradmc) submits each "
    "job as its own SLURM job. Sharded jobs then start a private Ray instance inside their allocation (cpus_per_task "
    "cores, `gpu` GPUs). Edit the partition/account names for your site.",
    "Usage:",
    "  snakemake --workflow-profile {folder} --configfile {config}",
    "Check a profile without submitting anything:",
    "  snakemake --dry-run --workflow-profile {folder} --configfile {config}",
    "",
    "set-resources below is GENERATED from a measured compute plan, not guessed: gradmc plan sliced every job of "
    "{config} on a CPU (`make plan-paper` does it for config/paper.yaml), and",
    "  gradmc plan --out {out} --slurm-profile {profile}",
    "rewrote it from {out}/plan.json. Per rule: runtime = {safety:g} x the measured (extrapolated) wall time of its "
    "longest SLURM job, in minutes (a sharded experiment: its shards on {cpus} Ray workers; rules that compute on a "
    "GPU: CPU time / the plan's ASSUMED GPU speed-up of {speedup:g}); mem_mb = {safety:g} x peak resident memory per "
    "shard x shards at once (+1000 MB Ray); gpu=1 and the gpu partition for the rules that must hold a GPU under "
    "{config} (device: {device}; a sharded job asks Ray for gpus_per_shard GPUs per shard whenever device is cuda, "
    "except the registry's cpu_only ones: the Kernel HMC sweeps). GPU memory is not measured (CPU slice). "
    "Rules the plan could not measure (missing data, "
    "failed probes) keep default-resources. {partial} Rerun the command after a new plan: it keeps every other "
    "key, each rule's slurm_partition and the resources it does not measure (accounts, constraints), but rewrites "
    "this header and drops comments elsewhere.",
    "",
    "Memory budget of a shard: a profile cannot set an environment variable per rule (the executor submits with "
    "sbatch --export=ALL and refuses --export in slurm_extra), so every job inherits the environment of the shell "
    "that runs snakemake. Without GRADMC_SHARD_MEMORY_MB, a sweep that splits shards by memory (ising_sampling) "
    "budgets 0.8 of the job's SLURM allocation (SLURM_MEM_PER_NODE, i.e. its mem_mb above) over its workers, which "
    "is enough. To give each shard exactly what the plan measured instead, before snakemake:",
    "  export GRADMC_SHARD_MEMORY_MB={value}",
    "{why}",
)


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


def remake_hint(out: str | Path) -> str:
    """How to (re)make the plan of folder ``out``."""
    return (f"run `gradmc plan --config config/paper.yaml --out {out}` first (with the config you plan; "
            "`make plan-paper` does it for results/paper)")


def _number(x, *, optional: bool) -> bool:
    """A finite number >= 0 (a time or a memory size), or None where ``optional``."""
    if x is None:
        return optional
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x >= 0


def _check_plan(plan, path: Path) -> None:
    def bad(what: str) -> InputError:
        return InputError(f"plan {path} {what} (expected a plan.json written by gradmc plan); "
                          f"{remake_hint(path.parent)}")

    if not isinstance(plan, dict):
        raise bad(f"holds a JSON {type(plan).__name__}, not an object")
    speedup = plan.get("gpu_speedup_assumed")
    if not _number(speedup, optional=False) or speedup <= 0:
        raise bad(f"has no valid 'gpu_speedup_assumed' (a number > 0), got {speedup!r}")
    if not isinstance(plan.get("jobs"), list):
        raise bad("has no 'jobs' list")
    config = plan.get("config")
    if config is not None and not (isinstance(config, str) and config.isprintable()):
        raise bad(f"has a 'config' that is not a one-line path, got {config!r}")
    known = known_rules()
    requested = plan.get("jobs_requested")
    if requested is not None and not (isinstance(requested, list) and all(r in known for r in requested)):
        raise bad(f"has 'jobs_requested' that is not a list of job names, got {requested!r}")
    if "partial" in plan and not isinstance(plan["partial"], bool):
        raise bad(f"has 'partial' that is not true/false, got {plan['partial']!r}")
    seen = set()
    for i, job in enumerate(plan["jobs"]):
        if not isinstance(job, dict) or job.get("name") not in known:
            raise bad(f"has a job {i} without a known 'name' (one of {', '.join(known)})")
        if job["name"] in seen:
            raise bad(f"lists job {job['name']!r} twice")
        seen.add(job["name"])
        if not isinstance(job.get("gpu"), bool) or not isinstance(job.get("tasks"), list):
            raise bad(f"has a job {job['name']!r} without 'gpu' (true/false) and 'tasks' (a list)")
        if "gpu_request" in job and not isinstance(job["gpu_request"], bool):
            raise bad(f"has a job {job['name']!r} whose 'gpu_request' is not true/false, got {job['gpu_request']!r}")
        for task in job["tasks"]:
            if not isinstance(task, dict) or not all(_number(task.get(k), optional=True)
                                                     for k in ("seconds", "peak_rss_mb")):
                raise bad(f"has a task of job {job['name']!r} without 'seconds' and 'peak_rss_mb' as finite "
                          "numbers >= 0")


def read_plan(path: str | Path) -> dict:
    """The plan in file ``path`` (a ``plan.json``), checked for the fields the profile is made from.

    Raises:
        gradmc.errors.InputError: the file cannot be read, is not JSON, or lacks a field the profile needs
            (``gpu_speedup_assumed``, ``jobs`` with ``name``, ``gpu``, ``tasks``) or has one of the wrong type.
    """
    path = Path(path)
    try:
        plan = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as err:
        raise InputError(f"plan {path} could not be read as JSON ({type(err).__name__}: {err}); "
                         f"{remake_hint(path.parent)}") from None
    _check_plan(plan, path)
    return plan


def read_profile(profile: str | Path) -> dict:
    """The profile's YAML mapping.

    Raises:
        gradmc.errors.MissingInputError: no such file.
        gradmc.errors.InputError: a folder, not YAML, empty, or not a mapping.
    """
    path = Path(profile)
    expected = f"expected a Snakemake profile: a YAML mapping of options such as {EXAMPLE}"
    if path.is_dir():
        raise InputError(f"--slurm-profile {path} is a folder; give its config.yaml ({expected})")
    if not path.is_file():
        raise MissingInputError(f"--slurm-profile {path} not found ({expected})")
    try:
        current = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as err:
        raise InputError(f"--slurm-profile {path} could not be read as YAML ({type(err).__name__}: "
                         f"{str(err).splitlines()[0] if str(err) else ''}; {expected})") from None
    if current is None:
        raise InputError(f"--slurm-profile {path} is empty ({expected})")
    if not isinstance(current, dict):
        raise InputError(f"--slurm-profile {path} holds a YAML {type(current).__name__}, not a mapping ({expected})")
    return current


def _existing_lines(value, profile: str | Path) -> list[str]:
    """A profile's ``set-resources`` (a list of ``rule:resource=value`` strings or a mapping rule -> resource ->
    value) as ``rule:resource=value`` lines; InputError for anything else."""
    if value is None:
        return []
    if isinstance(value, list) and all(isinstance(v, str) and ":" in v for v in value):
        bad = [v for v in value if "=" not in v.partition(":")[2]]
        if bad:
            raise InputError(f"--slurm-profile {profile}: set-resources lines without a value: {bad}; each line is "
                             f"'rule:resource=value' (as in {EXAMPLE})")
        return list(value)
    if isinstance(value, dict) and all(isinstance(v, dict) for v in value.values()):
        return [f"{rule}:{key}={v}" for rule, res in value.items() for key, v in res.items()]
    raise InputError(f"--slurm-profile {profile}: set-resources is neither a list of 'rule:resource=value' lines nor "
                     f"a mapping rule -> resource -> value; fix or delete it (as in {EXAMPLE})")


def _measured(job: dict) -> list[dict]:
    return [t for t in job["tasks"] if t.get("seconds") is not None]


def _shard_mb(tasks: list[dict]) -> float:
    return max((t.get("peak_rss_mb") or 0.0) for t in tasks) or 1000.0


def rule_resources(plan: dict, *, cpus_per_task: int = 8, safety: float = 2.0) -> dict[str, dict]:
    """Rule -> {runtime (min), mem_mb, cpus_per_task, slurm_partition?, gpu?} for every measured job of ``plan``.

    runtime = ``safety`` x the rule's longest SLURM job (a sharded experiment: the makespan of its shards on
    ``cpus_per_task`` Ray workers; a hand-written rule: its longest task), GPU jobs at the plan's assumed
    speed-up, at least 10 minutes. mem_mb = ``safety`` x peak memory of one shard x the shards at once, plus
    1000 MB for Ray in a sharded job. ``gpu=1`` and the gpu partition for the jobs that hold a GPU.

    Raises:
        ValueError: cpus_per_task < 1, or safety not a finite number >= 1.
        gradmc.errors.InputError: a runtime or memory too large to be a finite number.
    """
    if not (isinstance(cpus_per_task, int) and cpus_per_task >= 1):
        raise ValueError(f"need cpus_per_task >= 1, got {cpus_per_task!r}")
    if not (math.isfinite(safety) and safety >= 1):
        raise ValueError(f"need a finite safety factor >= 1, got {safety!r}")
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
            seconds, at_once = max(t["seconds"] for t in tasks) / scale, 1
        minutes, mem = safety * seconds / 60, safety * _shard_mb(tasks) * at_once + (1000 if sharded else 0)
        if not (math.isfinite(minutes) and math.isfinite(mem)):
            raise InputError(f"plan job {job['name']}: runtime {minutes!r} min or memory {mem!r} MB is not a finite "
                             "number; remake the plan (gradmc plan)")
        res = {"runtime": max(10, math.ceil(minutes)), "mem_mb": math.ceil(mem),
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
    """The ``GRADMC_SHARD_MEMORY_MB`` (MiB) to export before ``snakemake`` under this profile: ``safety`` x the
    measured peak memory of one shard, the smallest over the measured jobs that split shards by that budget
    (``ising_sampling``); None if the plan measured none."""
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
    blocks: dict[str, list[str]] = {}  # per rule, in the plan's order: its lines, then the site's
    for line in lines:
        rule, _, rest = line.partition(":")
        if rest.partition("=")[0] != "slurm_partition" or "slurm_partition" not in site.get(rule, {}):
            blocks.setdefault(rule, []).append(line)
    for rule, keys in site.items():
        blocks.setdefault(rule, []).extend(f"{rule}:{key}={value}" for key, value in keys.items())
    return [line for block in blocks.values() for line in block], dropped


def _header(plan: dict, *, profile, out, safety: float, cpus: int, partial: bool, kept: list[str],
            shard_mb: int | None) -> str:
    """:data:`HEADER` filled from ``plan`` and the options, as ``#`` comment lines."""
    config = plan.get("config") or "the planned config"
    if partial:
        rules = sorted({line.split(":", 1)[0] for line in kept})
        note = (f"PARTIAL plan (jobs {', '.join(plan.get('jobs_requested') or []) or 'some'}): the lines of "
                f"{len(rules)} rules it does not measure were kept from the profile ({', '.join(rules) or 'none'}).")
    else:
        note = "Full plan: every rule's lines come from it."
    if shard_mb is not None:
        why = ("(What each shard of ising_sampling gets in its mem_mb above: the safety factor x its measured peak "
               "memory per shard.)")
    else:
        why = "(No measured sweep that splits by memory: use that rule's (mem_mb - 1000) / cpus_per_task.)"
    values = dict(folder=Path(profile).parent, config=config, out=Path(out), profile=profile, safety=safety,
                  cpus=cpus, speedup=float(plan["gpu_speedup_assumed"]),
                  device=plan.get("config_device", "as in the plan"), partial=note,
                  value=shard_mb if shard_mb is not None else "<MiB per shard>", why=why)
    lines = []
    for para in HEADER:
        text = para.format(**values)
        if not text or text.startswith("  "):
            lines.append(f"# {text}".rstrip())
        else:
            lines += [f"# {line}" for line in textwrap.wrap(text, width=114, break_on_hyphens=False)]
    return "\n".join(lines) + "\n"


def write_profile(plan: dict | str | Path, profile: str | Path, *, cpus_per_task: int = 8, safety: float = 2.0,
                  out: str | Path | None = None) -> ProfileLines:
    """Rewrite ``profile``'s ``set-resources`` from ``plan`` (a plan dict, or the path of its plan.json); other
    keys are kept, and the header comment says where the numbers come from (the plan's config and folder
    ``out``, by default the plan file's folder). A partial plan keeps the profile's lines of the rules it does
    not measure. Atomic; a symbolic link is followed, not replaced, and the file keeps its mode.

    Raises:
        ValueError: see :func:`rule_resources`.
        gradmc.errors.MissingInputError: no such profile.
        gradmc.errors.InputError: the profile or the plan file cannot be read, is empty, or is not a mapping; the
            profile is read-only; a measured time or memory is too large to write.
    """
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
    existing = _existing_lines(current.get("set-resources"), profile)
    kept = [line for line in existing if line.split(":", 1)[0] not in resources] if partial else []
    lines, dropped = _with_site_lines(lines, existing, set(resources), full=not partial)
    current["set-resources"] = lines + kept
    mem = shard_memory_mb(plan, safety=safety)
    if mem is None and kept:
        mem = _kept_shard_mb(kept)
    header = _header(plan, profile=profile, out=out if out is not None else "OUT", safety=safety, cpus=cpus_per_task,
                     partial=partial, kept=kept, shard_mb=mem)
    with atomic_path(target) as tmp:
        tmp.write_text(header + yaml.safe_dump(current, sort_keys=False, default_flow_style=False, width=120),
                       encoding="utf-8")
    os.chmod(target, mode)
    lower = sorted(job["name"] for job in plan["jobs"]
                   if job["name"] in resources and len(_measured(job)) < len(job["tasks"]))
    return ProfileLines(lines + kept, kept, mem, dropped, lower)
