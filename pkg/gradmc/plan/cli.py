"""The ``gradmc plan`` subcommand: its options and its handler."""

from __future__ import annotations

import argparse

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
                    "unit, core-hours, GPU-hours at an ASSUMED speed-up, peak memory per shard; the total and the "
                    "makespan on N workers. Jobs whose data files are missing are reported as 'missing data'.",
        epilog="examples:\n  gradmc plan --config config/paper.yaml --out results/paper     (what make plan-paper "
               "runs)\n  gradmc plan --out results/paper --slurm-profile workflow/profiles/slurm/config.yaml\n"
               "      (no probes: rewrite the profile's set-resources from OUT/plan.json)")
    p.add_argument("--config", default="config/paper.yaml", help="config to plan (default config/paper.yaml)")
    p.add_argument("--out", default="results/paper", help="folder of plan.md, plan.json and the slice's files "
                                                          "(OUT/slice/; default results/paper)")
    p.add_argument("--workers", type=int, nargs="+", default=list(DEFAULT_WORKERS),
                   help=f"worker counts of the makespan table (default {' '.join(map(str, DEFAULT_WORKERS))})")
    p.add_argument("--gpu-speedup", type=float, default=DEFAULT_SPEEDUP,
                   help=f"ASSUMED speed-up of one GPU over one CPU core on the GPU jobs (default {DEFAULT_SPEEDUP:g}; "
                        "not measured: labelled as an assumption in the plan)")
    p.add_argument("--budget", type=float, default=1140.0,
                   help="wall seconds for all probes (default 1140, so make plan-paper ends within 20 minutes); "
                        "the probe running when it is spent is killed, those left are reported as not run")
    p.add_argument("--probe-timeout", type=float, default=240.0,
                   help="wall seconds for one probe before it is killed and reported (default 240)")
    p.add_argument("--jobs", nargs="+", default=None, metavar="JOB",
                   help="plan only these jobs (rule names; their upstream probes run too); default: every job")
    p.add_argument("--slurm-profile", default=None, metavar="CONFIG_YAML",
                   help="do not probe: rewrite this SLURM profile's set-resources from OUT/plan.json")
    p.add_argument("--cpus-per-task", type=int, default=8,
                   help="with --slurm-profile: cores of one SLURM job, the Ray workers of a sweep (default 8)")
    p.add_argument("--safety", type=float, default=2.0,
                   help="with --slurm-profile: factor on measured runtime and memory (default 2)")


def plan_command(args) -> None:
    """Handler of ``gradmc plan``.

    Raises:
        gradmc.errors.InputError: bad option values, or (with --slurm-profile) a missing or unreadable plan.
    """
    from pathlib import Path

    from gradmc.errors import InputError, check_readable

    if args.gpu_speedup <= 0 or args.budget <= 0 or args.probe_timeout <= 0 or min(args.workers) < 1:
        raise InputError("--gpu-speedup, --budget and --probe-timeout must be > 0 and --workers >= 1")
    if args.slurm_profile:
        from gradmc.plan.slurm import write_profile

        plan_json = Path(args.out) / "plan.json"
        check_readable(str(plan_json), "plan (OUT/plan.json; run gradmc plan first)")
        check_readable(args.slurm_profile, "--slurm-profile")
        resources = write_profile(plan_json, args.slurm_profile, cpus_per_task=args.cpus_per_task,
                                  safety=args.safety)
        print(f"[plan] wrote {args.slurm_profile}: {len(resources)} set-resources lines from {plan_json}", flush=True)
        return
    check_readable(args.config, "--config")
    from gradmc.plan.report import write_plan
    from gradmc.plan.slice import make_plan

    def log(line: str) -> None:
        print(line, flush=True)

    plan = make_plan(args.config, args.out, workers=args.workers, speedup=args.gpu_speedup, budget_s=args.budget,
                     timeout_s=args.probe_timeout, only=args.jobs, progress=log)
    js, md = write_plan(plan, args.out)
    t = plan["totals"]
    log(f"[plan] {t['core_hours']:.1f} core-hours in all; wrote {md} and {js}")
