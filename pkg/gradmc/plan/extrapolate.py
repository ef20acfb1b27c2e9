"""The plan's arithmetic: per-unit cost from two slice lengths, task and job hours, the makespan of the whole
DAG on N workers, and the plan's totals over its job records. No timing, no files."""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping, Sequence

__all__ = ["unit_cost", "task_seconds", "gpu_hours", "makespan", "summarise", "task_dependencies"]


def unit_cost(t_cold: float, t1: float, t2: float, u1: float, u2: float) -> tuple[float, float]:
    """(seconds per unit, fixed seconds per task) from a cold run of ``u1`` units (``t_cold`` s) and warm runs
    of ``u1`` and ``u2`` units (``t1``, ``t2`` s): per unit = (t2 - t1) / (u2 - u1), so no start-up is
    extrapolated; fixed = t_cold - u1 * per unit, at least 0. A per-unit cost that comes out <= 0 (timing noise
    larger than the extra units' cost) is replaced by t2 / u2, an upper bound.

    Raises:
        ValueError: u2 <= u1, or a negative time.
    """
    if not u2 > u1 > 0:
        raise ValueError(f"need 0 < u1 < u2, got u1={u1}, u2={u2}")
    if min(t_cold, t1, t2) < 0:
        raise ValueError(f"negative time in {(t_cold, t1, t2)}")
    per = (t2 - t1) / (u2 - u1)
    if per <= 0:
        per = t2 / u2
    return per, max(t_cold - u1 * per, 0.0)


def task_seconds(per_unit: float, fixed: float, units: float) -> float:
    """Seconds of one task of ``units`` units: fixed + units * per_unit."""
    return fixed + units * per_unit


def gpu_hours(core_hours: float, speedup: float) -> float:
    """GPU hours of a job that takes ``core_hours`` on one CPU core, at an ASSUMED GPU speed-up ``speedup``
    (one GPU = ``speedup`` cores on this job). Raises ValueError for speedup <= 0."""
    if speedup <= 0:
        raise ValueError(f"speed-up must be > 0, got {speedup}")
    return core_hours / speedup


def makespan(tasks: Sequence[tuple[str, float]], after: Mapping[str, Sequence[str]], workers: float) -> float:
    """Wall seconds to run ``tasks`` on ``workers`` identical workers (``math.inf``: unlimited, the critical
    path), by list scheduling: a task becomes ready when every task of the jobs its job runs ``after`` is done
    (jobs without tasks count as done); a free worker takes the longest ready task. The result is an achievable
    schedule, at most twice the optimum (Graham's bound) and at least max(critical path, total / workers).

    Args:
        tasks: (job, seconds) per task.
        after: job -> the jobs it waits for.
        workers: number of workers (>= 1) or ``math.inf``.

    Raises:
        ValueError: workers < 1, or a dependency cycle among the tasks' jobs.
    """
    if workers < 1:
        raise ValueError(f"need at least one worker, got {workers}")
    jobs = {job for job, _ in tasks}
    deps = {job: {d for d in after.get(job, ()) if d in jobs} for job in jobs}
    left = {job: 0 for job in jobs}
    for job, _ in tasks:
        left[job] += 1
    waiting = {job: [s for j, s in tasks if j == job] for job in jobs}
    ready: list[float] = []  # max-heap of seconds (negated)
    released: set[str] = set()

    def release() -> None:
        for job in sorted(jobs - released):
            if all(left[d] == 0 for d in deps[job]):
                released.add(job)
                for s in waiting[job]:
                    heapq.heappush(ready, (-s, job))

    release()
    running: list[tuple[float, str]] = []
    now, free = 0.0, workers
    while ready or running:
        while ready and free >= 1:
            neg, job = heapq.heappop(ready)
            heapq.heappush(running, (now - neg, job))
            free -= 1
        if not running:
            raise ValueError("dependency cycle among the jobs " + ", ".join(sorted(jobs - released)))
        now, job = heapq.heappop(running)
        free += 1
        left[job] -= 1
        if left[job] == 0:
            release()
    if len(released) < len(jobs):
        raise ValueError("dependency cycle among the jobs " + ", ".join(sorted(jobs - released)))
    return now


def task_dependencies(jobs: list[dict]) -> dict[str, set[str]]:
    """Scheduling key -> the keys it waits for, over every task of ``jobs`` (job records of the plan): each task's
    ``after``, the keys of the DAG jobs upstream of its own. A rule with wildcards has one key per job
    (``train_ebm[frey/GWG]``); a rule without is one job (a sweep of many shards)."""
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
