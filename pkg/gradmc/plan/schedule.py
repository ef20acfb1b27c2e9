"""The probes of a plan in the DAG's order: each job's probes, fed the files its upstream probes made (a sliced
RBM, sliced Ising samples, a short benchmark: same sizes, fewer steps), and its job record
(:mod:`gradmc.plan.records`).

The jobs, what each reads and writes and what it waits for are Snakemake's (:attr:`gradmc.plan.planner.Planner.dag`,
the DAG of the slice's config built in the slice's folder, so a job's inputs there are its upstream probes'
outputs). Sharded jobs (:func:`probe_sharded`) run one probe per cost class and cost every shard of the class
from it; hand-written rules (:func:`probe_stage`) run one probe; the EBM jobs are in :mod:`gradmc.plan.ebm_jobs`,
the text EBM's in :mod:`gradmc.plan.text_jobs`. A job whose data files are missing is recorded as ``missing
data``, naming them; one whose upstream probe made no input is recorded as an error. Every task waits for the
keys of the DAG's jobs upstream of its own (:meth:`Planner.after`).
"""

from __future__ import annotations

import importlib
from pathlib import Path

from gradmc.plan.dag import DagJob
from gradmc.plan.ebm_jobs import EBM_JOBS, plan_ebm
from gradmc.plan.jobs import job_spec
from gradmc.plan.planner import Planner, probe_key
from gradmc.plan.probe import class_key
from gradmc.plan.records import add_task, brief, finish, new_job
from gradmc.plan.text_jobs import TEXT_JOBS, plan_text

__all__ = ["probe_jobs", "probe_sharded", "probe_stage"]


def _lacking(job: dict, inputs: dict[str, str]) -> bool:
    lacking = [k for k, v in inputs.items() if not v or not Path(v).is_file()]
    if lacking:
        job.update(status="error", errors=[f"not probed: its input {lacking} was not made by the upstream probe"])
    return bool(lacking)


def probe_sharded(p: Planner, dag_job: DagJob) -> dict:
    """The record of the sharded job ``dag_job`` (a standard experiment's rule): one probe per cost class, every
    shard costed from its class."""
    from gradmc.experiments.standard import job_config

    name = dag_job.rule
    spec, job = job_spec(name), new_job(name, p.paper)
    if name == "potts_proteins":  # the slice keeps the proteins whose files are present
        job["missing"] = [f for k, v in p.missing.items() if k.startswith("protein:") for f in v]
        if p.potts_missing_all:
            job["status"] = "missing data"
            return job
    missing = p.missing_for(dag_job)
    if missing:
        job.update(status="missing data", missing=missing)
        return job
    inputs = p.inputs(dag_job)
    _make_benchmarks(p, dag_job, inputs)
    if _lacking(job, inputs):
        return job
    module = importlib.import_module(f"gradmc.experiments.{name}")
    try:
        shards = module.shards(job_config(name, p.base), dict(inputs))
    except Exception as err:  # a config the job refuses: reported, the plan goes on
        job.update(status="error", errors=[f"{type(err).__name__}: {err}".splitlines()[0]])
        return job
    classes: list[list] = []
    for s in shards:
        if class_key(s, spec.classes) not in classes:
            classes.append(class_key(s, spec.classes))
    measured = {}
    for cls in classes:
        res = p.probe(name, cls, inputs)
        measured[repr(cls)] = res
        job["probes"].append({"class": cls, **brief(res)})
    for s in shards:
        cls = class_key(s, spec.classes)
        add_task(job, probe_key(name, cls), spec.units(s), measured[repr(cls)])
    return finish(job)


def probe_stage(p: Planner, dag_job: DagJob) -> dict:
    """The record of the hand-written rule job ``dag_job`` (one job): one probe at the config's sizes."""
    name, spec = dag_job.rule, job_spec(dag_job.rule)
    job = new_job(name, p.paper)
    missing = p.missing_for(dag_job)
    if missing:
        job.update(status="missing data", missing=missing)
        return job
    inputs = p.inputs(dag_job)
    if _lacking(job, inputs):
        return job
    res = p.probe(name, list(dag_job.wildcards.values()), inputs, dag_job)
    job["probes"].append({"class": list(dag_job.wildcards.values()), **brief(res)})
    add_task(job, name, spec.units(p.paper) if spec.kind == "stage" else 1, res)
    return finish(job)


def probe_jobs(p: Planner) -> list[dict]:
    """Run the probes of every job ``p`` plans (:meth:`Planner.rules`: those asked for and the upstream jobs that
    make their inputs), in the DAG's order; their records, each task with the keys it waits for.

    Raises:
        gradmc.errors.InputError: Snakemake could not build the DAG, or ``only`` names a job it does not have.
    """
    rules = p.rules()
    p.planned = set(rules)
    jobs: dict[str, dict] = {}
    for rule in rules:
        if rule in jobs:
            continue
        if rule in EBM_JOBS:
            jobs.update(plan_ebm(p))
        elif rule in TEXT_JOBS:
            jobs.update(plan_text(p))
        elif job_spec(rule).kind == "standard":
            (dag_job,) = p.jobs_of(rule)
            jobs[rule] = probe_sharded(p, dag_job)
        else:
            for dag_job in p.jobs_of(rule):  # a hand-written rule without wildcards: one job
                jobs[rule] = probe_stage(p, dag_job)
    keys = {j.key: j for j in p.dag}
    for job in jobs.values():
        for task in job["tasks"]:
            dag_job = keys.get(task["key"])
            task["after"] = p.after(dag_job) if dag_job else []
    return [jobs[r] for r in rules if r in jobs]


def _make_benchmarks(p: Planner, dag_job: DagJob, inputs: dict[str, str]) -> None:
    """The short benchmark file kmc_gpc's probes read (``kmc_gpc_benchmark``'s output; made in a child too; its
    time is not part of the plan), when ``dag_job`` reads one and no probe made it."""
    import subprocess
    import sys

    made = {str(p.work / out): u.rule for u in p.dag for out in u.outputs}
    for path in inputs.values():
        if made.get(path) != "kmc_gpc_benchmark" or Path(path).is_file() or p.seconds_left() < 5:
            continue
        code = ("import sys; from gradmc.config import load_config; from gradmc.plan.probe import "
                "produce_benchmark; produce_benchmark(load_config(sys.argv[1]), sys.argv[2])")
        if p.progress:
            from gradmc.plan.probe import benchmark_iterations

            chains = p.paper["kmc_gpc"]["benchmark"]["num_chains"]
            p.progress(f"[plan] making a short kmc_gpc benchmark file ({chains} chains x "
                       f"{benchmark_iterations(p.paper)} iterations) for {dag_job.rule}'s probes")
        subprocess.run([sys.executable, "-c", code, str(p.config_path), path], check=False,
                       capture_output=True, timeout=max(p.seconds_left(), 5))
