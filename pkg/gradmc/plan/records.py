"""The plan's job and task records (plain dicts, written to ``plan.json`` as they are).

A job record (:func:`new_job`) holds the job's status, errors, missing files, notes, its probes (:func:`brief`)
and its tasks (:func:`add_task`): one per shard (sharded jobs) or per rule job (hand-written rules), each with
its units at the config's size, its extrapolated seconds (None when not measured), its peak memory and its
scheduling ``key`` (the job it belongs to in the makespan; :mod:`gradmc.plan.summary`).
"""

from __future__ import annotations

from gradmc.plan.extrapolate import task_seconds, unit_cost
from gradmc.plan.jobs import holds_gpu, job_spec, on_gpu
from gradmc.plan.planner import probe_key

__all__ = ["new_job", "add_task", "brief", "finish", "per_unit"]

_BRIEF = ("status", "error", "t_cold", "t1", "t2", "u1", "u2", "per_unit", "fixed", "detail", "peak_rss_mb", "wall_s")


def new_job(name: str, config: dict, **kw) -> dict:
    """A job record for job ``name`` of ``config``: ``gpu`` (computes on a GPU: the speed-up applies) and
    ``gpu_request`` (its SLURM job must hold a GPU) follow the config's ``device`` and ``gpus_per_shard``
    (:func:`gradmc.plan.jobs.on_gpu`, :func:`gradmc.plan.jobs.holds_gpu`); ``kw`` overrides fields."""
    spec = job_spec(name)
    return {"name": name, "unit": spec.unit, "gpu": on_gpu(name, config), "gpu_request": holds_gpu(name, config),
            "status": "ok", "errors": [], "missing": [], "notes": [spec.note] if spec.note else [], "tasks": [],
            "probes": [], **kw}


def per_unit(res: dict) -> tuple[float, float]:
    """(seconds per unit, fixed seconds) of a successful probe result."""
    if "per_unit" in res:
        return float(res["per_unit"]), max(float(res["fixed"]), 0.0)
    if "t1" not in res:  # once: the whole job is one unit
        return float(res["t_cold"]) / res.get("u1", 1), 0.0
    return unit_cost(res["t_cold"], res["t1"], res["t2"], res["u1"], res["u2"])


def add_task(job: dict, label: str, units: float, res: dict | None, seconds: float | None = None,
             key: str | None = None) -> None:
    """Append one task of ``job`` at the config's size, costed from probe ``res`` (or ``seconds`` given).

    Args:
        key: the scheduling job the task belongs to (its DAG job's key, :attr:`gradmc.plan.dag.DagJob.key`;
            default: the rule); tasks of one key finish together. What it waits for is set from the DAG
            (:func:`gradmc.plan.schedule.probe_jobs`).
    """
    task = {"label": label, "units": units, "key": key or job["name"]}
    if seconds is None and res is not None and res.get("status") == "ok":
        per, fixed = per_unit(res)
        seconds = task_seconds(per, fixed, units)
        task.update(per_unit_s=per, fixed_s=fixed)
    task["seconds"] = seconds
    task["peak_rss_mb"] = res.get("peak_rss_mb") if res and res.get("status") == "ok" else None
    job["tasks"].append(task)


def brief(res: dict) -> dict:
    """The fields of a probe result kept in the plan."""
    return {k: res[k] for k in _BRIEF if k in res}


def finish(job: dict) -> dict:
    """Add the failed probes' errors to ``job`` and set its status (partial, error or not run) from them."""
    errors = []
    for pr in job["probes"]:
        if pr.get("status") != "ok":
            cls, err = probe_key("", pr.get("class", [])), pr.get("error") or pr.get("status")
            errors.append(f"{cls}: {err}" if cls else err)
    job["errors"] += errors
    if errors and job["status"] == "ok":
        measured = any(t["seconds"] is not None for t in job["tasks"])
        job["status"] = "partial" if measured else ("error" if any(
            pr.get("status") in ("error", "timeout") for pr in job["probes"]) else "not run")
    return job
