"""Read a written plan (``OUT/plan.json``) back, checking the fields the SLURM profile is made from."""

from __future__ import annotations

import json
import math
from pathlib import Path

from gradmc.errors import InputError, MissingInputError
from gradmc.plan.jobs import known_rules

__all__ = ["load_plan", "read_plan", "remake_hint"]


def remake_hint(out: str | Path) -> str:
    """How to (re)make the plan of folder ``out``."""
    return (f"run `gradmc plan --config config/paper.yaml --out {out}` first (with the config you plan; "
            "`make plan-paper` does it for results/paper)")


def _number(x, *, optional: bool) -> bool:
    """A finite number >= 0 (a time or a memory size), or None where ``optional``."""
    if x is None:
        return optional
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x >= 0


def _check(plan, path: Path, out: Path) -> None:
    def bad(what: str) -> InputError:
        return InputError(f"plan {path} {what} (expected a plan.json written by gradmc plan); {remake_hint(out)}")

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


def load_plan(out: str | Path) -> tuple[dict, Path]:
    """The plan in folder ``out`` (``out/plan.json``) and its path, checked.

    Raises:
        gradmc.errors.InputError: ``out`` is not a folder; the file is not JSON, or lacks a field the SLURM
            profile needs (``gpu_speedup_assumed``, ``jobs`` with ``name``, ``gpu``, ``tasks``).
        gradmc.errors.MissingInputError: no ``out/plan.json``.
    """
    out = Path(out)
    path = out / "plan.json"
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {out} is a file; --out must be the plan's folder (the one holding plan.json)")
    if not path.is_file():
        raise MissingInputError(f"no plan in --out {out}: {path} not found; {remake_hint(out)}")
    return read_plan(path), path


def read_plan(path: str | Path) -> dict:
    """The plan in file ``path`` (a ``plan.json``), checked as :func:`load_plan` does.

    Raises:
        gradmc.errors.InputError: the file cannot be read, is not JSON, or lacks a field the profile needs.
    """
    path = Path(path)
    try:
        plan = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as err:
        raise InputError(f"plan {path} could not be read as JSON ({type(err).__name__}: {err}); "
                         f"{remake_hint(path.parent)}") from None
    _check(plan, path, path.parent)
    return plan
