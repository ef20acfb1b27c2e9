"""The probes of a plan in the DAG's order, and the job records they make (plain dicts, written to ``plan.json``).

The jobs, what each reads and what it waits for are Snakemake's (:attr:`gradmc.plan.slice.Planner.dag`, built in
the slice's folder, so a job's inputs there are its upstream probes' outputs). A sharded job runs one probe per
cost class and costs every shard of the class from it; a hand-written rule runs one probe; the EBM and text EBM
rules run probe chains. A job record holds its status, errors, missing files, notes, probes and tasks: one per
shard or rule job, with its units at the config's size, extrapolated seconds (None when not measured), peak
memory, scheduling ``key`` (its DAG job's) and ``after`` (the keys of the DAG jobs upstream of it).
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from gradmc.config import for_dataset
from gradmc.plan.dag import DagJob
from gradmc.plan.extrapolate import task_seconds, unit_cost
from gradmc.plan.jobs import JOBS, holds_gpu, job_spec, on_gpu
from gradmc.plan.probe import benchmark_iterations, class_key

if TYPE_CHECKING:
    from gradmc.plan.slice import Planner

__all__ = ["probe_jobs", "probe_sharded", "probe_stage", "plan_ebm", "plan_text", "probe_key", "new_job", "add_task",
           "finish", "EBM_JOBS", "TEXT_JOBS"]

#: The image EBM rules :func:`plan_ebm` costs, upstream first.
EBM_JOBS = ("prepare_image_dataset", "train_ebm", "ais_ebm")
#: The text EBM rules :func:`plan_text` costs, upstream first.
TEXT_JOBS = ("prepare_ptb", "train_text_ebm", "train_text_lm", "eval_text_ebm")

#: The fields of a probe result kept in the plan.
_BRIEF = ("status", "error", "t_cold", "t1", "t2", "u1", "u2", "per_unit", "fixed", "detail", "peak_rss_mb", "wall_s")
_TRAIN_NOTE = ("includes the validation AIS (validation_runs x (levels x the ais_ebm probe's seconds per level + rows "
               "x its seconds per row))")
_EQUAL_TIME_NOTE = ("equal_time: each Gibbs-1 run trains for its GWG run's seconds, so it is costed as that GWG run "
                    "(and waits for it); Gibbs-1 was not probed separately")
_AIS_NOTES = ("Gibbs-1 models are costed as the GWG model of the same data set (same network, same AIS)",
              "fixed part: f(x) of the test rows and of the hard bound's rows (training images + replay buffer), "
              "timed on 1024 rows and scaled by the row count")


def probe_key(job: str, cls) -> str:
    """How a probe is named in progress lines and results: the job, then its cost class if it has one
    (``rbm_sampling GWG``, ``ising_sampling 40/GWG``; a job without classes is its name alone)."""
    return f"{job} {'/'.join(str(c) for c in cls)}".strip()


def new_job(name: str, config: dict) -> dict:
    """A job record for job ``name`` of ``config``: ``gpu`` (computes on a GPU: the speed-up applies) and
    ``gpu_request`` (its SLURM job must hold a GPU) follow the config's ``device`` and ``gpus_per_shard``
    (:func:`gradmc.plan.jobs.on_gpu`, :func:`gradmc.plan.jobs.holds_gpu`)."""
    spec = job_spec(name)
    return {"name": name, "unit": spec.unit, "gpu": on_gpu(name, config), "gpu_request": holds_gpu(name, config),
            "status": "ok", "errors": [], "missing": [], "notes": [spec.note] if spec.note else [], "tasks": [],
            "probes": []}


def _per_unit(res: dict) -> tuple[float, float]:
    """(seconds per unit, fixed seconds) of a successful probe result."""
    if "per_unit" in res:
        return float(res["per_unit"]), max(float(res["fixed"]), 0.0)
    if "t1" not in res:  # once: the whole job is one unit
        return float(res["t_cold"]) / res.get("u1", 1), 0.0
    return unit_cost(res["t_cold"], res["t1"], res["t2"], res["u1"], res["u2"])


def add_task(job: dict, label: str, units: float, res: dict | None, key: str | None = None) -> None:
    """Append one task of ``job`` at the config's size, costed from probe result ``res`` (None or failed: not
    costed). ``key``: the DAG job it belongs to (:attr:`gradmc.plan.dag.DagJob.key`; default: the rule)."""
    task = {"label": label, "units": units, "key": key or job["name"]}
    seconds = None
    if res is not None and res.get("status") == "ok":
        per, fixed = _per_unit(res)
        seconds = task_seconds(per, fixed, units)
        task.update(per_unit_s=per, fixed_s=fixed)
    task["seconds"] = seconds
    task["peak_rss_mb"] = res.get("peak_rss_mb") if res and res.get("status") == "ok" else None
    job["tasks"].append(task)


def _record(job: dict, cls: list, res: dict) -> dict:
    """Keep probe result ``res`` of class ``cls`` in ``job``'s probes; returns ``res``."""
    job["probes"].append({"class": cls, **{k: res[k] for k in _BRIEF if k in res}})
    return res


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


def _make_benchmarks(p: Planner, dag_job: DagJob, inputs: dict[str, str]) -> None:
    """The short benchmark file kmc_gpc's probes read (``kmc_gpc_benchmark``'s output; made in a child too; its
    time is not part of the plan), when ``dag_job`` reads one and no probe made it."""
    made = {str(p.work / out): u.rule for u in p.dag for out in u.outputs}
    for path in inputs.values():
        if made.get(path) != "kmc_gpc_benchmark" or Path(path).is_file() or p.seconds_left() < 5:
            continue
        code = ("import sys; from gradmc.config import load_config; from gradmc.plan.probe import "
                "produce_benchmark; produce_benchmark(load_config(sys.argv[1]), sys.argv[2])")
        if p.progress:
            chains = p.paper["kmc_gpc"]["benchmark"]["num_chains"]
            p.progress(f"[plan] making a short kmc_gpc benchmark file ({chains} chains x "
                       f"{benchmark_iterations(p.paper)} iterations) for {dag_job.rule}'s probes")
        subprocess.run([sys.executable, "-c", code, str(p.config_path), path], check=False,
                       capture_output=True, timeout=max(p.seconds_left(), 5))


def _inputs(p: Planner, job: dict, dag_job: DagJob) -> dict[str, str] | None:
    """``dag_job``'s inputs, made by its upstream probes; None, with ``job`` marked ``missing data`` (its data
    files are missing) or an error (an upstream probe made no input), when it cannot be probed."""
    missing = p.missing_for(dag_job)
    if missing:
        job.update(status="missing data", missing=missing)
        return None
    inputs = p.inputs(dag_job)
    _make_benchmarks(p, dag_job, inputs)
    lacking = [k for k, v in inputs.items() if not v or not Path(v).is_file()]
    if lacking:
        job.update(status="error", errors=[f"not probed: its input {lacking} was not made by the upstream probe"])
        return None
    return inputs


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
    inputs = _inputs(p, job, dag_job)
    if inputs is None:
        return job
    module = importlib.import_module(f"gradmc.experiments.{name}")
    try:
        shards = module.shards(job_config(name, p.base), dict(inputs))
    except Exception as err:  # a config the job refuses: reported, the plan goes on
        job.update(status="error", errors=[f"{type(err).__name__}: {err}".splitlines()[0]])
        return job
    measured = {}
    for s in shards:
        cls = class_key(s, spec.classes)
        if repr(cls) not in measured:
            measured[repr(cls)] = _record(job, cls, p.probe(name, cls, inputs))
    for s in shards:
        cls = class_key(s, spec.classes)
        add_task(job, probe_key(name, cls), spec.units(s), measured[repr(cls)])
    return finish(job)


def probe_stage(p: Planner, dag_job: DagJob) -> dict:
    """The record of the hand-written rule job ``dag_job`` (one job): one probe at the config's sizes."""
    name, spec = dag_job.rule, job_spec(dag_job.rule)
    job = new_job(name, p.paper)
    inputs = _inputs(p, job, dag_job)
    if inputs is None:
        return job
    cls = list(dag_job.wildcards.values())
    res = _record(job, cls, p.probe(name, cls, inputs, dag_job))
    add_task(job, name, spec.units(p.paper) if spec.kind == "stage" else 1, res)
    return finish(job)


def _probe_data_set(p: Planner, jobs: dict, prep: dict, train: dict, ais: dict) -> dict | None:
    """Prepare, train and AIS probes of one data set (``jobs``: its DAG jobs by rule, the GWG run's for training
    and AIS); its prepare task. Returns the train and AIS results, or None when the data set is missing or its
    preparation failed."""
    pj, tj, aj = (jobs[rule] for rule in EBM_JOBS)
    ds = pj.wildcards["dataset"]
    files = p.missing_for(pj)
    if files:
        for job in (prep, train, ais):
            job["missing"] += [f"{ds}: {f}" for f in files]
        add_task(prep, f"prepare {ds}", 1, None, key=pj.key)
        return None
    res = _record(prep, [ds], p.probe("prepare_image_dataset", [ds], {}, pj))
    add_task(prep, f"prepare {ds}", 1, res, key=pj.key)
    if tj is None:
        return None
    data = p.inputs(tj)["data"]
    if res["status"] != "ok" or not Path(data).is_file():
        return None
    tr = _record(train, [ds, "GWG"], p.probe("train_ebm", [ds, "GWG"], {"data": data}, tj))
    model = tr.get("outputs", {}).get("model")
    ar = {"status": "not run", "error": "no trained model from the train_ebm probe"}
    if tr["status"] == "ok" and model and aj is not None:
        ar = p.probe("ais_ebm", [ds, "GWG"], {**p.inputs(aj), "model": model}, aj)
    return {"train": tr, "ais": _record(ais, [ds, "GWG"], ar)}


def plan_ebm(p: Planner) -> dict[str, dict]:
    """The job records of prepare_image_dataset, train_ebm and ais_ebm, by rule: one task per DAG job (data set /
    data set and sampler). One probe chain per data set whose files are present: prepare it, train the GWG
    model a few iterations, run a few AIS levels on it; the other samplers' runs are costed as the GWG run of the
    same data set (same network, same AIS; under ``equal_time`` they train for the GWG run's seconds)."""
    prep, train, ais = (new_job(n, p.paper) for n in EBM_JOBS)
    spec = p.paper["ebm"]
    dag = {rule: p.jobs_of(rule) for rule in EBM_JOBS}
    done = {}
    for pj in dag["prepare_image_dataset"]:
        ds = pj.wildcards["dataset"]
        gwg = {rule: next((j for j in dag[rule] if j.wildcards == {"dataset": ds, "sampler": "GWG"}), None)
               for rule in EBM_JOBS[1:]}
        if (m := _probe_data_set(p, {"prepare_image_dataset": pj, **gwg}, prep, train, ais)) is not None:
            done[ds] = m
    for rule, job, key in (("train_ebm", train, "train"), ("ais_ebm", ais, "ais")):
        for dj in dag[rule]:
            ds, sampler = dj.wildcards["dataset"], dj.wildcards["sampler"]
            units = JOBS[rule].units({**p.paper, "ebm": {**spec, key: for_dataset(spec[key], ds)}})
            m = done.get(ds)
            add_task(job, f"{rule} {ds}/{sampler}", units, m[key] if m else None, key=dj.key)
    for ds, m in done.items():
        tr, ar = m["train"], m["ais"]
        if tr["status"] == "ok" and ar["status"] == "ok":
            d = ar["detail"]
            valid = d["validation_runs"] * (d["validation_levels"] * ar["per_unit"]
                                            + d["validation_rows"] * d["seconds_per_row"])
            for task in train["tasks"]:
                if task["label"] == f"train_ebm {ds}/GWG":
                    task["seconds"] += valid
                    task["validation_s"] = valid
    if spec["equal_time"]:
        train["notes"].append(_EQUAL_TIME_NOTE)
    train["notes"].append(_TRAIN_NOTE)
    ais["notes"] += list(_AIS_NOTES)
    for dj in dag["train_ebm"]:  # the other samplers: the GWG run's numbers of the same data set
        ds, sampler = dj.wildcards["dataset"], dj.wildcards["sampler"]
        if sampler != "GWG" and ds in done:
            for job in (train, ais):
                twin = next(t for t in job["tasks"] if t["label"].endswith(f" {ds}/GWG"))
                mine = next(t for t in job["tasks"] if t["label"].endswith(f" {ds}/{sampler}"))
                mine.update({k: twin[k] for k in ("seconds", "per_unit_s", "fixed_s", "peak_rss_mb", "validation_s")
                             if k in twin})
    return {n: finish(j) for n, j in zip(EBM_JOBS, (prep, train, ais), strict=True)}


def _stand_in_note(p: Planner) -> str:
    """The note of the text jobs probed on ``ptb.valid.txt`` standing in for ``ptb.train.txt``."""
    manifest = None
    prepare = next((j for j in p.dag if j.rule == "prepare_ptb"), None)
    if prepare is not None:
        try:
            manifest = json.loads(Path(p.outputs(prepare)[0] + ".json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            pass
    vocab = p.paper["text_ebm"]["data"]["vocab_size"]
    got = f"{manifest['vocabulary_size']} words" if manifest else "the stand-in's own size"
    return (f"STAND-IN DATA: {p.ptb_stand_in} (the slice only; every other size is the config's). The vocabulary "
            f"is then {got} against the config's {vocab:,}, so the costs that grow with it (one-hot sentences, "
            "categorical GWG proposals over the vocabulary, the LM's softmax) are under-estimated: a lower bound")


def plan_text(p: Planner) -> dict[str, dict]:
    """The job records of the text EBM rules ``p`` plans, by name, one task each: one probe chain (prepare PTB,
    train the EBM a few iterations, train the LM 5 and 10 iterations, evaluate at 6 and 12 AIS levels). With PTB
    files missing the jobs are ``missing data``, with their units but no cost; with ``ptb.train.txt`` alone
    missing the chain is probed on ``ptb.valid.txt`` standing in for it (:attr:`Planner.ptb_stand_in`), and
    every job says so in its status and notes."""
    dag = {j.rule: j for j in p.dag if j.rule in TEXT_JOBS and j.rule in p.planned}
    names = [n for n in TEXT_JOBS if n in dag]
    jobs = {n: new_job(n, p.paper) for n in names}
    files = p.missing.get("ptb", [])
    if files and not p.ptb_stand_in:
        for n, job in jobs.items():
            job.update(status="missing data", missing=list(files))
            add_task(job, n, JOBS[n].units(p.paper) if JOBS[n].units else 1, None)
        return jobs
    failed: dict[str, str] = {}
    by_id = {j.jobid: j for j in p.dag}
    for n in names:
        job, inputs = jobs[n], p.inputs(dag[n])
        upstream = [by_id[a].rule for a in dag[n].after if by_id[a].rule in TEXT_JOBS and (
            by_id[a].rule in failed or not Path(p.outputs(by_id[a])[0]).is_file())]
        if upstream:
            res = {"status": "not run", "error": f"no input from the {', '.join(upstream)} probe"}
        else:
            res = p.probe(n, [], inputs, dag[n])
        if res["status"] != "ok":
            failed[n] = res.get("error") or res["status"]
        add_task(job, n, JOBS[n].units(p.paper) if JOBS[n].units else 1, _record(job, [], res))
    if p.ptb_stand_in:
        note = _stand_in_note(p)
        for job in jobs.values():
            job.update(missing=list(files), stand_in=p.ptb_stand_in)
            job["notes"].append(note)
    return {n: finish(job) for n, job in jobs.items()}


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
