"""Read a Snakemake SLURM profile (``config.yaml``) and write it back with the header comment that says which
plan its ``set-resources`` come from (:mod:`gradmc.plan.slurm` computes them)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import yaml

from gradmc.atomic import atomic_path
from gradmc.errors import InputError, MissingInputError

__all__ = ["read_profile", "existing_lines", "write_with_header", "HEADER", "EXAMPLE"]

#: The profile this repository ships, named in messages.
EXAMPLE = "workflow/profiles/slurm/config.yaml"

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


def _comment(paragraphs, **values) -> str:
    lines = []
    for para in paragraphs:
        text = para.format(**values)
        if not text or text.startswith("  "):
            lines.append(f"# {text}".rstrip())
        else:
            lines += [f"# {line}" for line in textwrap.wrap(text, width=114, break_on_hyphens=False)]
    return "\n".join(lines) + "\n"


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


def existing_lines(value, profile: str | Path) -> list[str]:
    """A profile's ``set-resources`` as ``rule:resource=value`` lines (Snakemake takes a list of such strings or
    a mapping rule -> resource -> value).

    Raises:
        gradmc.errors.InputError: anything else.
    """
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


def write_with_header(profile: str | Path, current: dict, plan: dict, *, out, safety: float, cpus: int,
                      partial: bool, kept: list[str], shard_mb: int | None, shown: str | Path | None = None) -> None:
    """Write ``current`` to ``profile`` atomically, under :data:`HEADER` filled from ``plan`` and the options;
    the header's commands name the profile as ``shown`` (the path the user gave; default ``profile``)."""
    shown = profile if shown is None else shown
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
    header = _comment(HEADER, folder=Path(shown).parent, config=config, out=Path(out), profile=shown, safety=safety,
                      cpus=cpus, speedup=float(plan["gpu_speedup_assumed"]),
                      device=plan.get("config_device", "as in the plan"), partial=note,
                      value=shard_mb if shard_mb is not None else "<MiB per shard>", why=why)
    body = yaml.safe_dump(current, sort_keys=False, default_flow_style=False, width=120)
    with atomic_path(profile) as tmp:
        tmp.write_text(header + body, encoding="utf-8")
