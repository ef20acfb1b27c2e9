"""Run every job of a config on its slice and build the compute plan (``gradmc plan``).

:func:`make_plan` checks which data files are missing (those jobs are reported as ``missing data``, naming the
files; :mod:`gradmc.plan.planner`), runs the probes in the order of Snakemake's DAG of the config
(:mod:`gradmc.plan.dag`, :mod:`gradmc.plan.schedule`; each in a child process, :mod:`gradmc.plan.probe`),
extrapolates every task of the config and sums the plan up
(:mod:`gradmc.plan.summary`), and returns the plan as a dict (:mod:`gradmc.plan.report` writes it). A probe
that fails is reported with its error and the other probes go on; probes past the time budget are reported as
not run.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from pathlib import Path

from gradmc.plan.jobs import known_rules
from gradmc.plan.planner import Planner, missing_data
from gradmc.plan.schedule import probe_jobs
from gradmc.plan.summary import summarise

__all__ = ["make_plan", "missing_data", "DEFAULT_WORKERS", "DEFAULT_SPEEDUP"]

#: Worker counts of the critical-path table.
DEFAULT_WORKERS = (1, 8, 64)
#: ASSUMED speed-up of one GPU over one CPU core on the GPU jobs (no GPU measured; ``--gpu-speedup``).
DEFAULT_SPEEDUP = 20.0


def _check_arguments(workers, speedup: float, budget_s: float, timeout_s: float, only) -> None:
    from gradmc.errors import InputError

    for name, value in (("speedup", speedup), ("budget_s", budget_s), ("timeout_s", timeout_s)):
        if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
            raise InputError(f"{name} must be a finite number > 0, got {value!r}")
    if not workers or any(not isinstance(n, int) or n < 1 for n in workers):
        raise InputError(f"workers must be whole numbers >= 1, got {list(workers)!r}")
    unknown = sorted(set(only or ()) - set(known_rules()))
    if unknown:
        raise InputError(f"--jobs: unknown jobs {unknown}; known: {', '.join(known_rules())}")


def make_plan(config_path: str | Path, out: str | Path, *, workers=DEFAULT_WORKERS, speedup: float = DEFAULT_SPEEDUP,
              budget_s: float = 1140.0, timeout_s: float = 240.0, only=None,
              progress: Callable[[str], None] | None = print) -> dict:
    """Slice every job of ``config_path``, measure it and extrapolate: the plan dict that
    :func:`gradmc.plan.report.write_plan` writes.

    Args:
        config_path: the config to plan (normally ``config/paper.yaml``). Its ``device`` does not change the
            slice (it runs on this machine's CPU, one thread per probe) but says which jobs are costed, and
            requested, on a GPU (:func:`gradmc.plan.jobs.on_gpu`, :func:`gradmc.plan.jobs.holds_gpu`).
        out: folder of the plan; the slice's files go to ``out/slice/``.
        workers: worker counts of the makespan table (each worker: one core, or one GPU with a core).
        speedup: ASSUMED GPU speed-up over one core, for the jobs the config runs on a GPU.
        budget_s: wall seconds for all probes; the probes left when it is spent are reported as not run.
        timeout_s: wall seconds for one probe.
        only: job names to plan (their upstream probes run too, to make their inputs); None: every job. The
            plan records them (``jobs_requested``) and is then ``partial``.
        progress: callable receiving progress lines, or None.

    Raises:
        gradmc.config.ConfigError (a ValueError): an invalid config.
        gradmc.errors.InputError: an unknown job name in ``only``, or a number out of range (not finite, <= 0;
            workers below 1); Snakemake could not build the config's DAG.
    """
    from gradmc.config import load_config

    start = time.monotonic()
    _check_arguments(tuple(workers), speedup, budget_s, timeout_s, only)
    config = load_config(config_path)
    planner = Planner(config, Path(out), timeout_s, budget_s, progress, only=only)
    if progress:
        progress(f"[plan] {config_path}: slicing every job on this machine's CPU (the config says device: "
                 f"{config['device']}); data folder {planner.folder}; budget {budget_s:.0f} s")
        for what, files in planner.missing.items():
            progress(f"[plan] missing data for {what}: {', '.join(files)}")
    jobs = probe_jobs(planner)
    costed = list(dict.fromkeys(j.rule for j in planner.dag if planner.costed(j)))
    summary = summarise(jobs, speedup, tuple(workers))
    return {"config": str(config_path), "config_name": config["name"], "config_device": config["device"],
            "gpus_per_shard": config.get("gpus_per_shard", 0), "partial": bool(only) and not set(costed) <= set(only),
            "jobs_requested": sorted(set(only)) if only else None,
            "slice_device": "cpu (one thread per probe)", "data_dir": str(planner.folder),
            "missing_data": planner.missing, "gpu_speedup_assumed": speedup, "workers": list(workers),
            "budget_s": budget_s, "wall_s": time.monotonic() - start, "probes": planner.count,
            "jobs": jobs, "totals": summary,
            "not_costed": sorted({j.rule for j in planner.dag if not planner.costed(j)})}
