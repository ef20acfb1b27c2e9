"""Write a plan (:func:`gradmc.plan.slice.make_plan`) as ``plan.json`` and ``plan.md``, atomically."""

from __future__ import annotations

import json
import math
from pathlib import Path

from gradmc.atomic import atomic_path

__all__ = ["write_plan", "render_markdown", "status_label"]


def _num(x, digits: int = 2) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    if x == 0:
        return "0"
    if abs(x) >= 100:
        return f"{x:,.0f}"
    return f"{x:.{digits}g}" if abs(x) < 1 else f"{x:.{digits}f}"


def status_label(job: dict) -> str:
    """The job's status for the table: ok, partial, error, timeout, not run, missing data (with counts), or
    probed on stand-in data (``stand_in``: which files stood in for the missing ones)."""
    status = job["status"]
    if job.get("stand_in") and status in ("ok", "partial"):  # probed on other files (see the job's notes)
        return f"{status}: STAND-IN data ({job['stand_in']}; see Notes)"
    if job["missing"] and status in ("ok", "partial"):
        costed, total = job.get("tasks_costed", 0), job.get("num_tasks", 0)
        if costed == total:  # the missing inputs' tasks are not enumerated (e.g. proteins without files)
            return "partial: missing data (those inputs not costed)"
        return f"partial: missing data ({total - costed} of {total} tasks)"
    return status


def _rule_list(rules: list[str]) -> str:
    """Rule names in backticks, the ``fetch_``, ``figure_`` and ``table_`` rules each folded into one entry."""
    folded = [f"`{prefix}*` ({n})" for prefix in ("fetch_", "figure_", "table_")
              if (n := sum(r.startswith(prefix) for r in rules))]
    return ", ".join([*folded, *(f"`{r}`" for r in rules if not r.startswith(("fetch_", "figure_", "table_")))])


def render_markdown(plan: dict) -> str:
    """The plan as Markdown: totals, the makespan table, one row per job, missing data, errors, notes."""
    t = plan["totals"]
    s = plan["gpu_speedup_assumed"]
    requested = ", ".join(f"`{j}`" for j in plan.get("jobs_requested") or [])
    cpu_jobs = ("Kernel HMC, data preparation" if plan.get("config_device") == "cuda" else
                f"every job: the config says device: {plan.get('config_device')}")
    lines = [f"# Compute plan: {plan['config']} (config `{plan['config_name']}`)", "",
             f"Measured by `gradmc plan` on a slice of every job, on this machine's CPU, one thread per probe "
             f"(the config asks for `device: {plan['config_device']}`); {plan['probes']} probes in "
             f"{plan['wall_s'] / 60:.1f} min (budget {plan['budget_s'] / 60:.0f} min). Data folder: "
             f"`{plan['data_dir']}`.", "",
             f"**ASSUMPTION (not measured, no GPU was used): one GPU = {s:g} CPU cores** on the jobs the config "
             "runs on a GPU (`--gpu-speedup`). Every CPU number below is measured; every GPU number is that "
             "assumption applied to it.", "",
             *([f"**Partial plan** (`--jobs`): only {requested} and the upstream jobs that make their inputs; the "
                "totals and the makespan cover these jobs only.", ""] if plan.get("partial") else []),
             "## Totals", "",
             f"- CPU: **{_num(t['core_hours'])} core-hours** for every costed task (jobs with missing data or "
             "failed probes excluded; see the table).",
             f"- GPU (assumed speed-up {s:g}): **{_num(t['gpu_hours_gpu_jobs'])} GPU-hours** for the GPU jobs, "
             f"plus {_num(t['core_hours_cpu_jobs'])} core-hours of CPU-only jobs ({cpu_jobs}).",
             "", "Makespan (hours) of the whole DAG on N workers (list scheduling, longest task first; a worker is "
             "one core, or in the GPU column one GPU with a core; a job waits for the jobs it reads, per data set "
             "for the EBM jobs; `unlimited` is the critical path):", "",
             "| N workers | CPU only (h) | with GPUs, assumed speed-up (h) |", "| --: | --: | --: |"]
    for n, row in t["makespan_hours"].items():
        lines.append(f"| {n} | {_num(row['cpu_hours'])} | {_num(row['gpu_hours'])} |")
    lines += ["", "## Jobs", "",
              "Units are at the config's sizes; s/unit is the measured slope (min-max over the probed classes); "
              "peak RSS is the largest peak resident memory of one probe (one shard or one rule job) in MiB.", "",
              "| job | status | unit | tasks (costed/all) | units (all tasks) | s/unit | core-h | GPU-h (assumed) "
              "| longest task (core-h) | peak RSS per shard (MiB) |",
              "| --- | --- | --- | --: | --: | --: | --: | --: | --: | --: |"]
    for job in plan["jobs"]:
        per = job.get("per_unit_s")
        per_s = "-" if not per else (_num(per[0], 3) if math.isclose(per[0], per[1]) else
                                     f"{_num(per[0], 3)}-{_num(per[1], 3)}")
        lines.append(f"| {job['name']} | {status_label(job)} | {job['unit']} | {job.get('tasks_costed', 0)}/"
                     f"{job.get('num_tasks', 0)} | {_num(job.get('units_total'))} | {per_s} | "
                     f"{_num(job.get('core_hours'))} | {_num(job.get('gpu_hours'))} | "
                     f"{_num(job.get('longest_task_hours'))} | {_num(job.get('peak_rss_mb'))} |")
    for title, field, shown in (("Missing data", "missing", "`{}`"), ("Errors", "errors", "{}")):
        lines += ["", f"## {title}", ""]
        lines += [f"- {job['name']}: {shown.format(x)}" for job in plan["jobs"] for x in job[field]] or ["None."]
    lines += ["", "## Notes", ""]
    lines += [f"- {job['name']}: {n}" for job in plan["jobs"] for n in job["notes"]]
    lines += ["- every job: per-unit cost = (t(2k) - t(k)) / k from warm runs of k and 2k units in one child "
              "process (a pair under 5 s is run 3 times, each level's fastest kept), after a cold run of k units "
              "whose excess is the task's fixed cost; a class's probe costs "
              "every shard of the class (seeds, thetas and grid values share it); see `gradmc.plan.jobs` for the "
              "length keys (shortened) and size keys (kept) of each job",
              "- peak memory is measured at slice length; arrays that grow with the number of steps (per-step "
              "statistics, kept samples) are larger at paper length",
              "- not in the plan: " + (_rule_list(plan["not_costed"]) if plan.get("not_costed")
                                       else "the fetch, figure, table and claims jobs")
              + " (the DAG's jobs without a probe: fetches, figures, tables, claims; seconds each)", ""]
    return "\n".join(lines)


def write_plan(plan: dict, out: str | Path) -> tuple[Path, Path]:
    """Write ``out/plan.json`` and ``out/plan.md`` atomically; returns their paths.

    Raises:
        gradmc.errors.OutputError: ``out`` cannot be created or written.
    """
    out = Path(out)
    js, md = out / "plan.json", out / "plan.md"
    with atomic_path(js) as tmp:
        tmp.write_text(json.dumps(plan, indent=1, default=str) + "\n", encoding="utf-8")
    with atomic_path(md) as tmp:
        tmp.write_text(render_markdown(plan), encoding="utf-8")
    return js, md
