"""Run every job of a config on its slice and build the compute plan (``gradmc plan``).

:func:`make_plan` checks which data files are missing (those jobs are reported as ``missing data``, naming the
files), runs the probes of :mod:`gradmc.plan.jobs` in DAG order (each in a child process,
:mod:`gradmc.plan.probe`), feeding each job the files its upstream probes made (a sliced RBM, sliced Ising
samples, a short benchmark: same sizes, fewer steps), extrapolates every task of the config
(:mod:`gradmc.plan.extrapolate`) and returns the plan as a dict (:mod:`gradmc.plan.report` writes it). A probe
that fails is reported with its error and the other probes go on; probes past the time budget are reported as
not run.
"""

from __future__ import annotations

import copy
import importlib
import math
import time
from collections.abc import Callable
from pathlib import Path

from gradmc.plan.extrapolate import gpu_hours, makespan, task_seconds, unit_cost
from gradmc.plan.jobs import JOBS, ebm_runs
from gradmc.plan.measure import class_key
from gradmc.plan.probe import run_probe

__all__ = ["make_plan", "missing_data", "DEFAULT_WORKERS", "DEFAULT_SPEEDUP"]

#: Worker counts of the critical-path table.
DEFAULT_WORKERS = (1, 8, 64)
#: ASSUMED speed-up of one GPU over one CPU core on the GPU jobs (no GPU measured; ``--gpu-speedup``).
DEFAULT_SPEEDUP = 20.0
#: Order the probes run in (upstream first; the costliest jobs of the paper early, so a short budget keeps them).
ORDER = ("prepare_mnist", "train_rbm", "rbm_reference", "prepare_image_dataset", "train_ebm", "ais_ebm",
         "rbm_sampling", "sampler_cost", "rbm_relaxed", "fhmm_sampling", "ising_sampling", "ising_pcd_data",
         "ising_pcd", "potts_proteins", "kmc_gpc_benchmark", "kmc_gpc", "kmc_banana", "kmc_abc", "kmc_trajectories")


def missing_data(config: dict, folder: Path) -> dict[str, list[str]]:
    """Data files missing from ``folder``, by what reads them: ``mnist``, ``images:<data set>``, ``glass``,
    ``protein:<name>`` -> list of missing paths (relative to the folder, or the loader's message); keys with
    nothing missing are left out."""
    from gradmc.data.catalog import config_datasets, dataset_files, image_datasets
    from gradmc.proteins.loaders import missing_files

    def files(names) -> list[str]:
        return [f.relpath for n in names for f in dataset_files(n, folder) if not (folder / f.relpath).exists()]

    out = {"mnist": files(config_datasets({"data": {"mnist": config["data"]["mnist"]}}))}
    images = config["data"].get("images", {})
    for ds in config.get("ebm", {}).get("datasets", []):
        out[f"images:{ds}"] = files(image_datasets(ds, images.get(ds, {})))
    if "kmc_gpc" in config:
        out["glass"] = files(["glass"])
    for protein in config.get("potts_proteins", {}).get("proteins", []):
        out[f"protein:{protein}"] = [_relative(m.split(" (")[0].split(": ", 1)[-1], folder)
                                     for m in missing_files([protein], folder)]
    return {k: v for k, v in out.items() if v}


def _relative(path: str, folder: Path) -> str:
    try:
        return str(Path(path).relative_to(folder))
    except ValueError:
        return path


class _Planner:
    def __init__(self, config: dict, out: Path, timeout_s: float, budget_s: float, progress):
        from gradmc.data.registry import data_dir

        self.paper = config
        self.folder = data_dir().resolve()
        self.missing = missing_data(config, self.folder)
        self.work = out / "slice"
        self.base = copy.deepcopy(config)
        self.base["device"] = "cpu"
        self.potts_missing_all = False
        if "potts_proteins" in self.base:
            spec = self.base["potts_proteins"]
            present = [p for p in spec["proteins"] if f"protein:{p}" not in self.missing]
            self.potts_missing_all = not present
            spec["proteins"] = present or spec["proteins"]  # the schema wants one; none is probed then
        self.config_path = self.work / "config.yaml"
        self._write_config()
        self.timeout_s, self.deadline, self.progress = timeout_s, time.monotonic() + budget_s, progress
        self.files: dict[str, str] = {}  # name -> file made by a probe
        self.results: dict[str, dict] = {}
        self.count = 0
        self.only = None

    def wants(self, name: str) -> bool:
        """Whether job ``name`` is planned (all jobs unless ``only`` names some)."""
        return self.only is None or name in self.only

    def _write_config(self) -> None:
        import yaml

        from gradmc.atomic import atomic_path

        with atomic_path(self.config_path) as tmp:
            tmp.write_text(yaml.safe_dump(self.base, sort_keys=False), encoding="utf-8")

    def probe(self, job: str, cls: list, inputs: dict[str, str] | None = None) -> dict:
        """Run (or skip, past the budget) one probe; record and return its result."""
        key = f"{job} {'/'.join(str(c) for c in cls)}".strip()
        self.count += 1
        left = self.deadline - time.monotonic()
        if left < 5:
            res = {"status": "not run", "error": "time budget of the slice spent"}
        else:
            probe = {"job": job, "cls": cls, "inputs": inputs or {}, "workdir": str(self.work),
                     "config_path": str(self.config_path)}
            name = key.replace(" ", "__").replace("/", "_").replace(".", "p")
            res = run_probe(probe, self.work / "probes", min(self.timeout_s, left), name)
        self.results[key] = res
        if self.progress:
            what = (f"{res['wall_s']:.1f} s, peak {res['peak_rss_mb']:.0f} MiB" if "wall_s" in res else "")
            err = f": {res['error']}" if res.get("error") else ""
            self.progress(f"[plan] probe {self.count} {key}: {res['status']} {what}{err}")
        return res


def _per_unit(res: dict) -> tuple[float, float]:
    if "per_unit" in res:
        return float(res["per_unit"]), max(float(res["fixed"]), 0.0)
    if "t1" not in res:  # once: the whole job is one unit
        return float(res["t_cold"]) / res.get("u1", 1), 0.0
    return unit_cost(res["t_cold"], res["t1"], res["t2"], res["u1"], res["u2"])


def _job(name: str, **kw) -> dict:
    spec = JOBS[name]
    return {"name": name, "unit": spec.unit, "gpu": spec.gpu, "status": "ok", "errors": [], "missing": [],
            "notes": [spec.note] if spec.note else [], "tasks": [], "probes": [], **kw}


def _add_task(job: dict, label: str, units: float, res: dict | None, seconds: float | None = None,
              key: str | None = None) -> None:
    """One task of ``job`` at the config's size, costed from probe ``res`` (or ``seconds`` given)."""
    task = {"label": label, "units": units, "key": key or job["name"]}
    if seconds is None and res is not None and res.get("status") == "ok":
        per, fixed = _per_unit(res)
        seconds = task_seconds(per, fixed, units)
        task.update(per_unit_s=per, fixed_s=fixed)
    task["seconds"] = seconds
    task["peak_rss_mb"] = res.get("peak_rss_mb") if res and res.get("status") == "ok" else None
    job["tasks"].append(task)


def _standard(p: _Planner, name: str, inputs: dict[str, str]) -> dict:
    from gradmc.experiments.standard import job_config

    spec, job = JOBS[name], _job(name)
    if name == "potts_proteins":
        job["missing"] = [f for k, v in p.missing.items() if k.startswith("protein:") for f in v]
        if p.potts_missing_all:
            job["status"] = "missing data"
            return job
    if name in ("kmc_gpc", "kmc_gpc_benchmark") and "glass" in p.missing:
        job.update(status="missing data", missing=p.missing["glass"])
        return job
    lacking = [k for k, v in inputs.items() if not v or not Path(v).is_file()]
    if lacking:
        job.update(status="error", errors=[f"not probed: its input {lacking} was not made by the upstream probe"])
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
        job["probes"].append({"class": cls, **_brief(res)})
    for s in shards:
        cls = class_key(s, spec.classes)
        _add_task(job, f"{name} {cls}", spec.units(s), measured[repr(cls)])
    return _finish(job)


def _brief(res: dict) -> dict:
    keep = ("status", "error", "t_cold", "t1", "t2", "u1", "u2", "per_unit", "fixed", "detail", "peak_rss_mb", "wall_s")
    return {k: res[k] for k in keep if k in res}


def _finish(job: dict) -> dict:
    errors = [f"{pr.get('class', '')}: {pr['error']}" for pr in job["probes"] if pr.get("status") != "ok"]
    job["errors"] += errors
    if errors and job["status"] == "ok":
        measured = any(t["seconds"] is not None for t in job["tasks"])
        job["status"] = "partial" if measured else ("error" if any(
            pr.get("status") in ("error", "timeout") for pr in job["probes"]) else "not run")
    return job


def _stage(p: _Planner, name: str, inputs: dict[str, str], cls=()) -> tuple[dict, dict]:
    job = _job(name)
    lacking = [k for k, v in inputs.items() if not v or not Path(v).is_file()]
    if lacking:
        job.update(status="error", errors=[f"not probed: its input {lacking} was not made by the upstream probe"])
        return job, {}
    res = p.probe(name, list(cls), inputs)
    job["probes"].append({"class": list(cls), **_brief(res)})
    spec = JOBS[name]
    _add_task(job, name, spec.units(p.paper) if spec.kind == "stage" else 1, res)
    return _finish(job), res


def _ebm(p: _Planner) -> tuple[dict, dict, dict]:
    """prepare_image_dataset, train_ebm and ais_ebm: one task per data set / (data set, sampler)."""
    prep, train, ais = _job("prepare_image_dataset"), _job("train_ebm"), _job("ais_ebm")
    spec = p.paper["ebm"]
    runs = ebm_runs(p.paper)
    done: dict[str, dict] = {}
    for ds in spec["datasets"]:
        if f"images:{ds}" in p.missing:
            files = p.missing[f"images:{ds}"]
            for job in (prep, train, ais):
                job["missing"] += [f"{ds}: {f}" for f in files]
            _add_task(prep, f"prepare {ds}", 1, None, key="prepare_image_dataset")
            continue
        res = p.probe("prepare_image_dataset", [ds])
        prep["probes"].append({"class": [ds], **_brief(res)})
        _add_task(prep, f"prepare {ds}", 1, res)
        out = p.work / "data" / "images" / f"{ds}.npz"
        if res["status"] != "ok" or not out.is_file():
            continue
        tr = p.probe("train_ebm", [ds, "GWG"], {"data": str(out)})
        train["probes"].append({"class": [ds, "GWG"], **_brief(tr)})
        model = tr.get("outputs", {}).get("model")
        ar = {"status": "not run", "error": "no trained model from the train_ebm probe"}
        if tr["status"] == "ok" and model:
            ar = p.probe("ais_ebm", [ds, "GWG"], {"data": str(out), "model": model})
        ais["probes"].append({"class": [ds, "GWG"], **_brief(ar)})
        done[ds] = {"train": tr, "ais": ar}
    units_train, units_ais = JOBS["train_ebm"].units(p.paper), JOBS["ais_ebm"].units(p.paper)
    for ds, sampler in runs:
        m = done.get(ds)
        tr, ar = (m["train"], m["ais"]) if m else (None, None)
        key = "train_ebm" if sampler == "GWG" or not spec["equal_time"] else "train_ebm_equal_time"
        _add_task(train, f"train_ebm {ds}/{sampler}", units_train, tr, key=key)
        _add_task(ais, f"ais_ebm {ds}/{sampler}", units_ais, ar)
        if tr and ar and tr["status"] == "ok" and ar["status"] == "ok":
            d = ar["detail"]
            valid = d["validation_runs"] * (d["validation_levels"] * ar["per_unit"] + d["validation_rows"]
                                            * d["seconds_per_row"])
            train["tasks"][-1]["seconds"] += valid
            train["tasks"][-1]["validation_s"] = valid
    if spec["equal_time"]:
        train["notes"].append("equal_time: each Gibbs-1 run trains for its GWG run's seconds, so it is costed as "
                              "that GWG run (and waits for it); Gibbs-1 was not probed separately")
    train["notes"].append("includes the validation AIS (validation_runs x (levels x the ais_ebm probe's seconds "
                          "per level + rows x its seconds per row))")
    ais["notes"].append("Gibbs-1 models are costed as the GWG model of the same data set (same network, same AIS)")
    ais["notes"].append("fixed part: f(x) of the test rows and of the hard bound's rows (training images + replay "
                        "buffer), timed on 1024 rows and scaled by the row count")
    for ds, sampler in runs:  # Gibbs-1: the GWG run's numbers of the same data set
        if sampler != "GWG" and ds in done:
            for job in (train, ais):
                twin = next(t for t in job["tasks"] if t["label"].endswith(f" {ds}/GWG"))
                mine = next(t for t in job["tasks"] if t["label"].endswith(f" {ds}/{sampler}"))
                mine.update({k: twin[k] for k in ("seconds", "per_unit_s", "fixed_s", "peak_rss_mb") if k in twin})
    return _finish(prep), _finish(train), _finish(ais)


def _missing_job(name: str, files: list[str]) -> dict:
    return _job(name, status="missing data", missing=list(files))


def _probe_jobs(p: _Planner) -> list[dict]:
    jobs: dict[str, dict] = {}
    w = p.work
    mnist, rbm = str(w / "data" / "mnist.npz"), str(w / "rbm_sampling" / "rbm.pt")
    rbm_jobs = ("prepare_mnist", "train_rbm", "rbm_reference", "rbm_sampling", "sampler_cost")
    if "mnist" in p.missing:
        for n in rbm_jobs:
            if p.wants(n):
                jobs[n] = _missing_job(n, p.missing["mnist"])
    elif any(p.wants(n) for n in rbm_jobs):  # the chain's inputs come from its upstream probes
        jobs["prepare_mnist"], _ = _stage(p, "prepare_mnist", {})
        jobs["train_rbm"], _ = _stage(p, "train_rbm", {"data": mnist})
        if any(p.wants(n) for n in rbm_jobs[2:]):
            jobs["rbm_reference"], _ = _stage(p, "rbm_reference", {"model": rbm, "data": mnist})
    if "ebm" in p.paper and any(p.wants(n) for n in ("prepare_image_dataset", "train_ebm", "ais_ebm")):
        jobs["prepare_image_dataset"], jobs["train_ebm"], jobs["ais_ebm"] = _ebm(p)
    if "mnist" not in p.missing:
        if p.wants("rbm_sampling"):
            jobs["rbm_sampling"] = _standard(p, "rbm_sampling", {
                "model": rbm, "reference": str(w / "rbm_sampling" / "reference.npz"), "data": mnist})
        if p.wants("sampler_cost"):
            jobs["sampler_cost"], _ = _stage(p, "sampler_cost", {"model": rbm, "data": mnist})
    for name in ("rbm_relaxed", "fhmm_sampling", "ising_sampling"):
        if p.wants(name):
            jobs[name] = _standard(p, name, {})
    if p.wants("ising_pcd_data") or p.wants("ising_pcd"):
        jobs["ising_pcd_data"], _ = _stage(p, "ising_pcd_data", {})
        if p.wants("ising_pcd"):
            jobs["ising_pcd"] = _standard(p, "ising_pcd", {"data": str(w / "ising_pcd" / "data.npz")})
    if p.wants("potts_proteins"):
        jobs["potts_proteins"] = _standard(p, "potts_proteins", {})
    if p.wants("kmc_gpc_benchmark") or p.wants("kmc_gpc"):
        jobs["kmc_gpc_benchmark"] = _standard(p, "kmc_gpc_benchmark", {})
    if p.wants("kmc_gpc"):
        bench = w / "kmc_gpc" / "benchmark.parquet"
        if "glass" not in p.missing:
            _produce_benchmark(p, bench)
        jobs["kmc_gpc"] = _standard(p, "kmc_gpc", {"benchmark": str(bench)})
    for name in ("kmc_banana", "kmc_abc", "kmc_trajectories"):
        if p.wants(name):
            jobs[name] = _standard(p, name, {})
    return [jobs[n] for n in ORDER if n in jobs]


def _produce_benchmark(p: _Planner, path: Path) -> None:
    """The short benchmark file kmc_gpc's probes read (made in a child too; its time is not part of the plan)."""
    import subprocess
    import sys

    if p.deadline - time.monotonic() < 5:
        return
    code = ("import sys; from gradmc.config import load_config; from gradmc.plan.measure import produce_benchmark; "
            "produce_benchmark(load_config(sys.argv[1]), sys.argv[2])")
    if p.progress:
        p.progress("[plan] making a short kmc_gpc benchmark file (10 chains x 100 iterations) for kmc_gpc's probes")
    subprocess.run([sys.executable, "-c", code, str(p.config_path), str(path)], check=False,
                   capture_output=True, timeout=max(p.deadline - time.monotonic(), 5))


def _summarise(jobs: list[dict], speedup: float, workers, after) -> dict:
    tasks_cpu, tasks_gpu = [], []
    total_cpu = total_gpu = total_gpu_cpu = 0.0
    for job in jobs:
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
        longest = max(secs) if secs else None
        job["longest_task_hours"] = longest / 3600 if longest is not None else None
        total_cpu += sum(secs)
        if job["gpu"]:
            total_gpu += sum(secs) / speedup
        else:
            total_gpu_cpu += sum(secs)
        for t in job["tasks"]:
            if t["seconds"] is not None:
                tasks_cpu.append((t["key"], t["seconds"]))
                tasks_gpu.append((t["key"], t["seconds"] / speedup if job["gpu"] else t["seconds"]))
    table = {}
    for n in [*workers, math.inf]:
        label = "unlimited" if math.isinf(n) else str(int(n))
        table[label] = {"cpu_hours": makespan(tasks_cpu, after, n) / 3600,
                        "gpu_hours": makespan(tasks_gpu, after, n) / 3600}
    return {"core_hours": total_cpu / 3600, "gpu_hours_gpu_jobs": total_gpu / 3600,
            "core_hours_cpu_jobs": total_gpu_cpu / 3600, "makespan_hours": table}


def dependencies() -> dict[str, tuple[str, ...]]:
    """Job -> the jobs it waits for (rule level; Gibbs-1 EBM training waits for GWG's under equal_time)."""
    after = {name: spec.after for name, spec in JOBS.items()}
    after["train_ebm_equal_time"] = ("train_ebm",)
    after["ais_ebm"] = ("train_ebm", "train_ebm_equal_time")
    return after


def make_plan(config_path: str | Path, out: str | Path, *, workers=DEFAULT_WORKERS, speedup: float = DEFAULT_SPEEDUP,
              budget_s: float = 1140.0, timeout_s: float = 240.0, only=None,
              progress: Callable[[str], None] | None = print) -> dict:
    """Slice every job of ``config_path``, measure it and extrapolate: the plan dict that
    :func:`gradmc.plan.report.write_plan` writes.

    Args:
        config_path: the config to plan (normally ``config/paper.yaml``); its ``device`` is ignored: the slice
            runs on this machine's CPU, one thread per probe.
        out: folder of the plan; the slice's files go to ``out/slice/``.
        workers: worker counts of the makespan table (each worker: one core, or one GPU with a core).
        speedup: ASSUMED GPU speed-up over one core, for the jobs the config runs on a GPU (``JobSpec.gpu``).
        budget_s: wall seconds for all probes; the probes left when it is spent are reported as not run.
        timeout_s: wall seconds for one probe.
        only: job names to plan (their upstream probes run too, to make their inputs); None: every job.
        progress: callable receiving progress lines, or None.

    Raises:
        gradmc.config.ConfigError (a ValueError): an invalid config.
        gradmc.errors.InputError: an unknown job name in ``only``.
    """
    from gradmc.config import load_config

    start = time.monotonic()
    config = load_config(config_path)
    unknown = sorted(set(only or ()) - set(JOBS))
    if unknown:
        from gradmc.errors import InputError

        raise InputError(f"unknown jobs {unknown}; known: {', '.join(JOBS)}")
    planner = _Planner(config, Path(out), timeout_s, budget_s, progress)
    planner.only = set(only) if only else None
    if progress:
        progress(f"[plan] {config_path}: slicing every job on this machine's CPU (the config says device: "
                 f"{config['device']}); data folder {planner.folder}; budget {budget_s:.0f} s")
        for what, files in planner.missing.items():
            progress(f"[plan] missing data for {what}: {', '.join(files)}")
    jobs = _probe_jobs(planner)
    summary = _summarise(jobs, speedup, tuple(workers), dependencies())
    return {"config": str(config_path), "config_name": config["name"], "config_device": config["device"],
            "slice_device": "cpu (one thread per probe)", "data_dir": str(planner.folder),
            "missing_data": planner.missing, "gpu_speedup_assumed": speedup, "workers": list(workers),
            "budget_s": budget_s, "wall_s": time.monotonic() - start, "probes": planner.count,
            "jobs": jobs, "totals": summary}
