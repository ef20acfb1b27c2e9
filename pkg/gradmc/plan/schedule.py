"""The probes of a plan in DAG order: each job's probes, fed the files its upstream probes made (a sliced RBM,
sliced Ising samples, a short benchmark: same sizes, fewer steps), and its job record (:mod:`gradmc.plan.records`).

Sharded jobs (:func:`probe_sharded`) run one probe per cost class and cost every shard of the class from it;
hand-written rules (:func:`probe_stage`) run one probe; the EBM jobs are in :mod:`gradmc.plan.ebm_jobs`, the text
EBM's in :mod:`gradmc.plan.text_jobs`. A job
whose data files are missing is recorded as ``missing data``, naming them; one whose upstream probe made no
input is recorded as an error.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from gradmc.plan.ebm_jobs import plan_ebm
from gradmc.plan.jobs import JOBS, TEXT_JOBS
from gradmc.plan.measure import class_key
from gradmc.plan.planner import Planner, probe_key
from gradmc.plan.records import add_task, brief, finish, new_job
from gradmc.plan.text_jobs import plan_text

__all__ = ["ORDER", "probe_jobs", "probe_sharded", "probe_stage"]

#: Order the probes run in (upstream first; the costliest jobs of the paper early, so a short budget keeps them).
# the text EBM's probes come last: added after the rest, they are the ones a spent budget leaves "not run"
ORDER = ("prepare_mnist", "train_rbm", "rbm_reference", "prepare_image_dataset", "train_ebm", "ais_ebm",
         "rbm_sampling", "sampler_cost", "rbm_relaxed", "fhmm_sampling", "ising_sampling", "ising_pcd_data",
         "ising_pcd", "potts_proteins", "kmc_gpc_benchmark", "kmc_gpc", "kmc_banana", "kmc_abc", "kmc_trajectories",
         "prepare_ptb", "train_text_ebm", "train_text_lm", "eval_text_ebm")


def _lacking(job: dict, inputs: dict[str, str]) -> bool:
    lacking = [k for k, v in inputs.items() if not v or not Path(v).is_file()]
    if lacking:
        job.update(status="error", errors=[f"not probed: its input {lacking} was not made by the upstream probe"])
    return bool(lacking)


def probe_sharded(p: Planner, name: str, inputs: dict[str, str]) -> dict:
    """The record of sharded job ``name``: one probe per cost class, every shard costed from its class."""
    from gradmc.experiments.standard import job_config

    spec, job = JOBS[name], new_job(name, p.paper)
    if name == "potts_proteins":
        job["missing"] = [f for k, v in p.missing.items() if k.startswith("protein:") for f in v]
        if p.potts_missing_all:
            job["status"] = "missing data"
            return job
    if name in ("kmc_gpc", "kmc_gpc_benchmark") and "glass" in p.missing:
        job.update(status="missing data", missing=p.missing["glass"])
        return job
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


def probe_stage(p: Planner, name: str, inputs: dict[str, str], cls=()) -> dict:
    """The record of hand-written rule ``name`` (one job): one probe at the config's sizes."""
    job = new_job(name, p.paper)
    if _lacking(job, inputs):
        return job
    res = p.probe(name, list(cls), inputs)
    job["probes"].append({"class": list(cls), **brief(res)})
    spec = JOBS[name]
    add_task(job, name, spec.units(p.paper) if spec.kind == "stage" else 1, res)
    return finish(job)


def _missing_job(p: Planner, name: str, files: list[str]) -> dict:
    return new_job(name, p.paper, status="missing data", missing=list(files))


def _rbm_chain(p: Planner, jobs: dict[str, dict], mnist: str, rbm: str) -> None:
    rbm_jobs = ("prepare_mnist", "train_rbm", "rbm_reference", "rbm_sampling", "sampler_cost")
    if "mnist" in p.missing:
        for n in rbm_jobs:
            if p.wants(n):
                jobs[n] = _missing_job(p, n, p.missing["mnist"])
    elif any(p.wants(n) for n in rbm_jobs):  # the chain's inputs come from its upstream probes
        jobs["prepare_mnist"] = probe_stage(p, "prepare_mnist", {})
        jobs["train_rbm"] = probe_stage(p, "train_rbm", {"data": mnist})
        if any(p.wants(n) for n in rbm_jobs[2:]):
            jobs["rbm_reference"] = probe_stage(p, "rbm_reference", {"model": rbm, "data": mnist})


def probe_jobs(p: Planner) -> list[dict]:
    """Run the probes of every job ``p`` wants (and of their upstream jobs), in :data:`ORDER`; their records."""
    jobs: dict[str, dict] = {}
    w = p.work
    mnist, rbm = str(w / "data" / "mnist.npz"), str(w / "rbm_sampling" / "rbm.pt")
    _rbm_chain(p, jobs, mnist, rbm)
    if "ebm" in p.paper and any(p.wants(n) for n in ("prepare_image_dataset", "train_ebm", "ais_ebm")):
        jobs["prepare_image_dataset"], jobs["train_ebm"], jobs["ais_ebm"] = plan_ebm(p)
    if "mnist" not in p.missing:
        if p.wants("rbm_sampling"):
            jobs["rbm_sampling"] = probe_sharded(p, "rbm_sampling", {
                "model": rbm, "reference": str(w / "rbm_sampling" / "reference.npz"), "data": mnist})
        if p.wants("sampler_cost"):
            jobs["sampler_cost"] = probe_stage(p, "sampler_cost", {"model": rbm, "data": mnist})
    for name in ("rbm_relaxed", "fhmm_sampling", "ising_sampling"):
        if p.wants(name):
            jobs[name] = probe_sharded(p, name, {})
    if p.wants("ising_pcd_data") or p.wants("ising_pcd"):
        jobs["ising_pcd_data"] = probe_stage(p, "ising_pcd_data", {})
        if p.wants("ising_pcd"):
            jobs["ising_pcd"] = probe_sharded(p, "ising_pcd", {"data": str(w / "ising_pcd" / "data.npz")})
    if p.wants("potts_proteins"):
        jobs["potts_proteins"] = probe_sharded(p, "potts_proteins", {})
    if p.wants("kmc_gpc_benchmark") or p.wants("kmc_gpc"):
        jobs["kmc_gpc_benchmark"] = probe_sharded(p, "kmc_gpc_benchmark", {})
    if p.wants("kmc_gpc"):
        bench = w / "kmc_gpc" / "benchmark.parquet"
        if "glass" not in p.missing:
            _produce_benchmark(p, bench)
        jobs["kmc_gpc"] = probe_sharded(p, "kmc_gpc", {"benchmark": str(bench)})
    for name in ("kmc_banana", "kmc_abc", "kmc_trajectories"):
        if p.wants(name):
            jobs[name] = probe_sharded(p, name, {})
    if "text_ebm" in p.paper and any(p.wants(n) for n in TEXT_JOBS):
        jobs.update(plan_text(p))
    return [jobs[n] for n in ORDER if n in jobs]


def _produce_benchmark(p: Planner, path: Path) -> None:
    """The short benchmark file kmc_gpc's probes read (made in a child too; its time is not part of the plan)."""
    import subprocess
    import sys

    if p.seconds_left() < 5:
        return
    code = ("import sys; from gradmc.config import load_config; from gradmc.plan.measure import produce_benchmark; "
            "produce_benchmark(load_config(sys.argv[1]), sys.argv[2])")
    if p.progress:
        from gradmc.plan.measure import benchmark_iterations

        chains = p.paper["kmc_gpc"]["benchmark"]["num_chains"]
        p.progress(f"[plan] making a short kmc_gpc benchmark file ({chains} chains x {benchmark_iterations(p.paper)} "
                   "iterations) for kmc_gpc's probes")
    subprocess.run([sys.executable, "-c", code, str(p.config_path), str(path)], check=False,
                   capture_output=True, timeout=max(p.seconds_left(), 5))
