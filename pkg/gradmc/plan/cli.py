"""The ``gradmc plan`` subcommand: its options (each checked by its argparse ``type``) and its handler."""

from __future__ import annotations

import argparse
import functools
from pathlib import Path

from gradmc.argtypes import factor_at_least_one, positive_int, positive_number

__all__ = ["add_plan_parser", "plan_command"]


def add_plan_parser(sub) -> None:
    """Add ``gradmc plan`` to the subparsers ``sub``."""
    from gradmc.plan.slice import DEFAULT_SPEEDUP, DEFAULT_WORKERS

    p = sub.add_parser(
        "plan", help="compute plan: every job of a config on a short slice (paper sizes, few steps), measured, "
                     "extrapolated -> OUT/plan.md, OUT/plan.json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Run every job of --config on a bounded slice: the first shard of each cost class of each "
                    "sweep, a few steps / iterations / AIS levels, every size that sets memory (chains, dimensions, "
                    "model widths, data sets) at the config's value. Each probe runs in a child process on one CPU "
                    "thread; its peak resident memory is read. Per job: units at the config's size, seconds per "
                    "unit, core-hours, GPU-hours at an ASSUMED speed-up (for the jobs the config runs on a GPU: "
                    "device: cuda), peak memory per shard; the total and the makespan on N workers. Jobs whose "
                    "data files are missing are reported as 'missing data'.",
        epilog="examples:\n  gradmc plan --config config/paper.yaml --out results/paper     (what make plan-paper "
               "runs)\n  gradmc plan --out results/paper --slurm-profile workflow/profiles/slurm/config.yaml\n"
               "      (no probes: rewrite the profile's set-resources from OUT/plan.json)")
    p.add_argument("--config", default=None, help="config to plan (default config/paper.yaml)")
    p.add_argument("--out", default=None, help="folder of plan.md, plan.json and the slice's files (OUT/slice/; "
                                               "default results/<the config's name>, where the pipeline writes "
                                               "that config's results; with --slurm-profile results/paper)")
    p.add_argument("--workers", type=positive_int, nargs="+", default=None,
                   help=f"worker counts (>= 1) of the makespan table (default "
                        f"{' '.join(map(str, DEFAULT_WORKERS))})")
    p.add_argument("--gpu-speedup", type=positive_number, default=None,
                   help=f"ASSUMED speed-up of one GPU over one CPU core on the GPU jobs (default {DEFAULT_SPEEDUP:g}; "
                        "not measured: labelled as an assumption in the plan)")
    p.add_argument("--budget", type=budget_seconds, default=None,
                   help="wall seconds for all probes, at least 30 (default 1140: make plan-paper ends in 20 minutes); "
                        "the probe running when it is spent is killed, those left are reported as not run")
    p.add_argument("--probe-timeout", type=positive_number, default=None,
                   help="wall seconds for one probe before it is killed and reported (default 240)")
    p.add_argument("--jobs", nargs="+", default=None, metavar="JOB",
                   help="plan only these jobs (rule names; their upstream probes run too); default: every job")
    p.add_argument("--slurm-profile", default=None, metavar="CONFIG_YAML",
                   help="do not probe: rewrite this SLURM profile's set-resources from OUT/plan.json (a partial "
                        "plan, made with --jobs, keeps the profile's lines of the rules it does not measure)")
    p.add_argument("--cpus-per-task", type=positive_int, default=None,
                   help="with --slurm-profile: cores of one SLURM job, the Ray workers of a sweep (default 8)")
    p.add_argument("--safety", type=factor_at_least_one, default=None,
                   help="with --slurm-profile: factor (>= 1) on measured runtime and memory (default 2)")


#: Options of probe mode and of --slurm-profile mode, with their defaults (None in the parser, so that an option
#: given in the wrong mode is seen and refused instead of silently ignored).
PROBE_OPTIONS = {"config": "config/paper.yaml", "workers": None, "gpu_speedup": None, "budget": 1140.0,
                 "probe_timeout": 240.0, "jobs": None}
PROFILE_OPTIONS = {"cpus_per_task": 8, "safety": 2.0}
MIN_BUDGET_S = 30.0
_log = functools.partial(print, flush=True)


def budget_seconds(text: str) -> float:
    """argparse type of --budget: finite seconds >= :data:`MIN_BUDGET_S` (a probe is a child process that imports
    torch and builds its target: a smaller budget is spent before the first probe ends)."""
    value = positive_number(text)
    if value < MIN_BUDGET_S:
        raise argparse.ArgumentTypeError(f"expected at least {MIN_BUDGET_S:g} seconds (each probe starts a process "
                                         f"that imports torch), got {text!r}")
    return value


def _resolve_mode(args) -> None:
    """Refuse the options of the other mode, then fill in this mode's defaults.

    Raises:
        gradmc.errors.InputError: an empty --slurm-profile, or an option the mode does not read.
    """
    from gradmc.errors import InputError
    from gradmc.plan.slice import DEFAULT_SPEEDUP, DEFAULT_WORKERS

    if args.slurm_profile is not None and not args.slurm_profile.strip():
        raise InputError("--slurm-profile is empty; give the profile to rewrite, e.g. "
                         "workflow/profiles/slurm/config.yaml")
    profile_mode = args.slurm_profile is not None
    ignored, defaults = (PROBE_OPTIONS, PROFILE_OPTIONS) if profile_mode else (PROFILE_OPTIONS, PROBE_OPTIONS)
    given = [f"--{name.replace('_', '-')}" for name in ignored if getattr(args, name) is not None]
    if given:
        mode = "with --slurm-profile (no probes run)" if profile_mode else "without --slurm-profile (probe mode)"
        raise InputError(f"{', '.join(given)} not used {mode}; drop {'it' if len(given) == 1 else 'them'} "
                         "(see gradmc plan --help)")
    if not profile_mode:
        defaults = {**defaults, "workers": list(DEFAULT_WORKERS), "gpu_speedup": DEFAULT_SPEEDUP}
    for name, value in defaults.items():
        if getattr(args, name) is None:
            setattr(args, name, value)


def _default_out(config_path: str) -> str:
    """``results/<name>`` for the config's ``name`` (where the pipeline writes that config's results); the file's
    stem when the YAML has no usable name (its own errors are reported by the plan's config check)."""
    from gradmc.config import read_config
    from gradmc.errors import UserError

    try:
        name = read_config(config_path).get("name")
    except (OSError, UserError):
        name = None
    if not isinstance(name, str) or not name.strip() or "/" in name:
        name = Path(config_path).stem
    return f"results/{name}"


def _check_out_folder(out: str) -> None:
    from gradmc.errors import InputError

    if Path(out).exists() and not Path(out).is_dir():
        raise InputError(f"--out {out} is a file; --out must be a folder (it holds plan.md, plan.json and the "
                         "slice's files in OUT/slice/), e.g. results/paper")


def _write_profile(args) -> None:
    from gradmc.errors import MissingInputError
    from gradmc.plan.slurm import read_plan, remake_hint, write_profile

    plan_json = Path(args.out) / "plan.json"
    if not plan_json.is_file():
        raise MissingInputError(f"no plan in --out {args.out}: {plan_json} not found; {remake_hint(args.out)}")
    done = write_profile(read_plan(plan_json), args.slurm_profile, cpus_per_task=args.cpus_per_task, safety=args.safety,
                         out=args.out)
    line = f"[plan] wrote {args.slurm_profile}: {len(done.lines)} set-resources lines from {plan_json}"
    if done.kept:
        rules = sorted({kept.split(":", 1)[0] for kept in done.kept})
        line += (f" (a partial plan: {len(done.kept)} of them kept from the profile, for the {len(rules)} rules "
                 f"it does not measure: {', '.join(rules)})")
    _log(line)
    if done.dropped:
        _log(f"[plan] dropped the site's GPU lines of rules that no longer hold a GPU: {', '.join(done.dropped)}")
    if done.lower_bounds:
        _log(f"[plan] the plan could not cost every task of {', '.join(done.lower_bounds)} (see plan.md): their "
             "runtime and mem_mb are lower bounds; raise them by hand if those tasks are larger")
    if Path(args.slurm_profile).name != "config.yaml":
        _log(f"[plan] note: Snakemake reads a profile folder's config.yaml; {args.slurm_profile} is used only once "
             "it is named config.yaml")
    value = done.shard_memory_mb if done.shard_memory_mb is not None else "<MiB per shard>"
    _log(f"[plan] optional: export GRADMC_SHARD_MEMORY_MB={value} before snakemake to give each shard exactly the "
         "plan's measured memory (without it a job budgets 0.8 of its SLURM allocation; see the profile's header)")


def plan_command(args) -> None:
    """Handler of ``gradmc plan``.

    Raises:
        gradmc.errors.InputError: a missing config, an --out that is a file, an unknown job; with
            --slurm-profile, a missing or unreadable plan or profile.
    """
    from gradmc.errors import MissingInputError

    _resolve_mode(args)
    if args.slurm_profile is not None:
        args.out = args.out or "results/paper"
        _check_out_folder(args.out)
        _write_profile(args)
        return
    if not args.config.strip() or not Path(args.config).exists():
        raise MissingInputError(f"--config {args.config}: config file not found (expected a config YAML such as "
                                "config/paper.yaml or config/quick.yaml)")
    args.out = args.out or _default_out(args.config)
    _check_out_folder(args.out)
    from gradmc.plan.report import write_plan
    from gradmc.plan.slice import make_plan

    plan = make_plan(args.config, args.out, workers=args.workers, speedup=args.gpu_speedup, budget_s=args.budget,
                     timeout_s=args.probe_timeout, only=args.jobs, progress=_log)
    js, md = write_plan(plan, args.out)
    _log(f"[plan] {plan['totals']['core_hours']:.1f} core-hours in all; wrote {md} and {js}")
