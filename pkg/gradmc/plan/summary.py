"""The plan's totals: per-job hours and memory, the core- and GPU-hours of the whole config, and the makespan on
N workers over the DAG of the pipeline's actual jobs (:func:`task_dependencies`)."""

from __future__ import annotations

import math

from gradmc.plan.extrapolate import gpu_hours, makespan

__all__ = ["summarise", "task_dependencies"]


def task_dependencies(jobs: list[dict]) -> dict[str, set[str]]:
    """Scheduling key -> the keys it waits for, over every task of ``jobs`` (job records of the plan).

    Each task's ``after`` holds the keys of the DAG jobs upstream of its own (:func:`gradmc.plan.schedule.probe_jobs`
    sets it from Snakemake's DAG): a rule with wildcards has one key per job (``train_ebm[frey/GWG]``), so a data
    set's AIS waits for its own model and not for every training; a rule without wildcards is one job (a sweep is
    one job of many shards). A task without ``after`` waits for nothing; keys that have no task are met.
    """
    deps: dict[str, set[str]] = {}
    for job in jobs:
        for task in job["tasks"]:
            deps.setdefault(task["key"], set()).update(task.get("after", ()))
    return deps


def _job_totals(job: dict, speedup: float) -> list[float]:
    """Set the job's totals (hours, memory, per-unit range, longest task); returns its measured task seconds."""
    secs = [t["seconds"] for t in job["tasks"] if t["seconds"] is not None]
    job["num_tasks"] = len(job["tasks"])
    job["tasks_costed"] = len(secs)
    job["core_hours"] = sum(secs) / 3600 if secs else None
    job["gpu_hours"] = gpu_hours(job["core_hours"], speedup) if secs and job["gpu"] else None
    rss = [t["peak_rss_mb"] for t in job["tasks"] if t.get("peak_rss_mb")]
    job["peak_rss_mb"] = max(rss) if rss else None
    per = [t["per_unit_s"] for t in job["tasks"] if t.get("per_unit_s") is not None]
    job["per_unit_s"] = [min(per), max(per)] if per else None
    job["units_total"] = sum(t["units"] for t in job["tasks"])
    job["longest_task_hours"] = max(secs) / 3600 if secs else None
    return secs


def summarise(jobs: list[dict], speedup: float, workers) -> dict:
    """Fill each job record's totals and return the plan's: core-hours of every costed task, GPU-hours of the
    GPU jobs at the ASSUMED ``speedup`` plus the core-hours of the CPU jobs, and the makespan (hours) on each
    of ``workers`` and on unlimited workers (the critical path), CPU only and with GPUs."""
    tasks_cpu, tasks_gpu = [], []
    total_cpu = total_gpu = total_gpu_cpu = 0.0
    for job in jobs:
        secs = _job_totals(job, speedup)
        total_cpu += sum(secs)
        if job["gpu"]:
            total_gpu += sum(secs) / speedup
        else:
            total_gpu_cpu += sum(secs)
        for t in job["tasks"]:
            if t["seconds"] is not None:
                tasks_cpu.append((t["key"], t["seconds"]))
                tasks_gpu.append((t["key"], t["seconds"] / speedup if job["gpu"] else t["seconds"]))
    after = task_dependencies(jobs)
    table = {}
    for n in [*workers, math.inf]:
        label = "unlimited" if math.isinf(n) else str(int(n))
        table[label] = {"cpu_hours": makespan(tasks_cpu, after, n) / 3600,
                        "gpu_hours": makespan(tasks_gpu, after, n) / 3600}
    return {"core_hours": total_cpu / 3600, "gpu_hours_gpu_jobs": total_gpu / 3600,
            "core_hours_cpu_jobs": total_gpu_cpu / 3600, "makespan_hours": table}
