"""Run every job of a config on its slice and build the compute plan (``gradmc plan``).

:class:`Planner` holds one run's state: the config sliced for this machine's CPU, the data files missing (their
jobs are reported as ``missing data``, naming the files), Snakemake's DAG of the slice's config, the time budget,
and :meth:`Planner.probe`, which runs (or, past the budget, skips) one probe in a child process and records its
result. :func:`make_plan` runs the probes in the DAG's order (:mod:`gradmc.plan.schedule`) and sums the plan up
(:mod:`gradmc.plan.extrapolate`); :mod:`gradmc.plan.report` writes it. A probe that fails is reported with its
error and the other probes go on.
"""

from __future__ import annotations

import copy
import functools
import math
import time
from collections.abc import Callable
from pathlib import Path

from gradmc.plan.dag import DagJob, nearest, pipeline_dag, upstream
from gradmc.plan.extrapolate import summarise
from gradmc.plan.jobs import known_rules
from gradmc.plan.probe import run_probe
from gradmc.plan.schedule import probe_jobs, probe_key

__all__ = ["make_plan", "missing_data", "Planner", "progress_line", "DEFAULT_WORKERS", "DEFAULT_SPEEDUP"]

#: Worker counts of the critical-path table.
DEFAULT_WORKERS = (1, 8, 64)
#: ASSUMED speed-up of one GPU over one CPU core on the GPU jobs (no GPU measured; ``--gpu-speedup``).
DEFAULT_SPEEDUP = 20.0
#: The PTB files whose absence the slice can stand in for: ptb.valid.txt trains the probes' text EBM and LM.
PTB_TRAIN, PTB_VALID = "ptb/ptb.train.txt", "ptb/ptb.valid.txt"


def missing_data(config: dict, folder: Path) -> dict[str, list[str]]:
    """Data files missing from ``folder``, by what reads them: ``mnist``, ``images:<data set>``, ``glass``,
    ``protein:<name>``, ``ptb`` (the PTB files of ``text_ebm.data.train_split``) -> list of missing paths
    (relative to the folder, or the loader's message); keys with nothing missing are left out."""
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
    if "text_ebm" in config:
        out["ptb"] = files(["ptb_heldout" if config["text_ebm"]["data"]["train_split"] == "valid" else "ptb"])
    for protein in config.get("potts_proteins", {}).get("proteins", []):
        out[f"protein:{protein}"] = [_relative(m.split(" (")[0].split(": ", 1)[-1], folder)
                                     for m in missing_files([protein], folder)]
    return {k: v for k, v in out.items() if v}


def _relative(path: str, folder: Path) -> str:
    try:
        return str(Path(path).relative_to(folder))
    except ValueError:
        return path


class Planner:
    """One plan run: the config (``paper``: as given; ``base``: sliced for this machine's CPU and written to
    ``out/slice/config.yaml`` for the probes), the missing data, the jobs asked for, the budget, the results.

    When ``ptb.train.txt`` is the only PTB file missing and the config trains on it, ``base`` trains on
    ``ptb.valid.txt`` instead (every size kept) and ``ptb_stand_in`` says so (None otherwise).

    Args:
        config: the validated config to plan.
        out: the plan's folder; the slice's files go to ``out/slice/``.
        timeout_s: wall seconds of one probe.
        budget_s: wall seconds of all probes.
        progress: callable receiving progress lines, or None.
        only: job names to plan, or None for every job.
    """

    def __init__(self, config: dict, out: Path, timeout_s: float, budget_s: float, progress, only=None):
        import yaml

        from gradmc.atomic import atomic_path
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
        self.ptb_stand_in = None
        if self.missing.get("ptb") == [PTB_TRAIN] and self.base["text_ebm"]["data"]["train_split"] == "train":
            self.base["text_ebm"]["data"]["train_split"] = "valid"  # the slice only: ptb.valid.txt trains
            self.ptb_stand_in = f"{PTB_VALID} for {PTB_TRAIN}"
        self.config_path = self.work / "config.yaml"
        with atomic_path(self.config_path) as tmp:
            tmp.write_text(yaml.safe_dump(self.base, sort_keys=False), encoding="utf-8")
        self.timeout_s, self.deadline, self.progress = timeout_s, time.monotonic() + budget_s, progress
        self.count = 0
        self.only = set(only) if only else None
        self.planned: set[str] = set()  # the rules to plan, once :func:`gradmc.plan.schedule.probe_jobs` set them

    @functools.cached_property
    def dag(self) -> list[DagJob]:
        """Snakemake's DAG of the slice's config, built in the slice's folder: every path of it is relative to
        :attr:`work`, where the probes read and write."""
        return pipeline_dag(self.config_path, workdir=self.work)

    @staticmethod
    def costed(job: DagJob) -> bool:
        """Whether the plan costs ``job``: its rule is a standard experiment of the registry or a hand-written rule
        the plan probes; fetch, figure, table and claims jobs are not."""
        return job.rule in known_rules()

    def costed_rules(self) -> list[str]:
        """The DAG's costed rules, upstream first."""
        return list(dict.fromkeys(j.rule for j in self.dag if self.costed(j)))

    def jobs_of(self, rule: str) -> list[DagJob]:
        """The DAG's jobs of ``rule``, in DAG order."""
        return [j for j in self.dag if j.rule == rule]

    def rules(self) -> list[str]:
        """The rules to plan, upstream first: the DAG's costed rules, or those ``only`` names and every costed
        rule they wait for (its probes make their inputs).

        Raises:
            gradmc.errors.InputError: ``only`` names a rule the DAG does not cost.
        """
        from gradmc.errors import InputError

        costed = self.costed_rules()
        if self.only is None:
            return costed
        unknown = sorted(self.only - set(costed))
        if unknown:
            raise InputError(f"--jobs: unknown jobs {unknown}; the jobs of this config: {', '.join(costed)}")
        needed = set(self.only)
        for job in self.dag:
            if job.rule in self.only:
                needed.update(u.rule for u in upstream(self.dag, job) if self.costed(u))
        return [r for r in costed if r in needed]

    def after(self, job: DagJob) -> list[str]:
        """The scheduling keys ``job`` waits for: its nearest costed upstream jobs in the DAG."""
        return [u.key for u in nearest(self.dag, job, self.costed)]

    def inputs(self, job: DagJob) -> dict[str, str]:
        """``job``'s named inputs that the pipeline makes (paths in the slice's folder); data-folder files,
        which the probes read from the data folder themselves, are left out."""
        return {name: str(self.work / path) for name, path in job.inputs.items() if not Path(path).is_absolute()}

    def outputs(self, job: DagJob) -> list[str]:
        """``job``'s outputs in the slice's folder."""
        return [str(self.work / path) for path in job.outputs]

    def missing_for(self, job: DagJob) -> list[str]:
        """The data-folder files ``job`` needs, directly or through its upstream jobs, that are missing: the
        absent outputs (absolute paths) of its uncosted upstream jobs (the fetches), relative to the data folder."""
        out = []
        for u in upstream(self.dag, job):
            if not self.costed(u):
                out += [_relative(f, self.folder) for f in u.outputs if Path(f).is_absolute() and not Path(f).exists()]
        return list(dict.fromkeys(out))

    def seconds_left(self) -> float:
        """Wall seconds left of the budget of all probes."""
        return self.deadline - time.monotonic()

    def probe(self, job: str, cls: list, inputs: dict[str, str] | None = None, dag_job: DagJob | None = None) -> dict:
        """Run (or skip, past the budget) one probe of rule ``job``, cost class ``cls``; report and return its
        result. ``dag_job``: the DAG's job it stands for (its outputs, in the slice's folder, are where the probe
        writes; a ``once`` job is run by Snakemake, which records its ``benchmark:``)."""
        key = probe_key(job, cls)
        self.count += 1
        left = self.seconds_left()
        if left < 5:
            res = {"status": "not run", "error": "time budget of the slice spent"}
        else:
            probe = {"job": job, "cls": cls, "inputs": inputs or {}, "workdir": str(self.work),
                     "config_path": str(self.config_path)}
            if dag_job is not None:
                probe.update(outputs=self.outputs(dag_job), benchmark=dag_job.benchmark and str(
                    self.work / dag_job.benchmark), target=dag_job.outputs[0] if dag_job.outputs else None)
            name = key.replace(" ", "__").replace("/", "_").replace(".", "p")
            res = run_probe(probe, self.work / "probes", min(self.timeout_s, left), name)
        if self.progress:
            self.progress(progress_line(self.count, key, res))
        return res


def progress_line(count: int, key: str, res: dict) -> str:
    """The progress line of probe number ``count``: ``[plan] probe 3 rbm_sampling GWG: ok 12.0 s, peak 800 MiB``
    (the time and memory only when measured; the error, if any, after a colon)."""
    parts = [res["status"]]
    if "wall_s" in res:
        parts.append(f"{res['wall_s']:.1f} s, peak {res['peak_rss_mb']:.0f} MiB")
    err = f": {res['error']}" if res.get("error") else ""
    return f"[plan] probe {count} {key}: {' '.join(parts)}{err}"


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
    from gradmc.errors import InputError

    start = time.monotonic()
    for name, value in (("speedup", speedup), ("budget_s", budget_s), ("timeout_s", timeout_s)):
        if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
            raise InputError(f"{name} must be a finite number > 0, got {value!r}")
    workers = tuple(workers)
    if not workers or any(not isinstance(n, int) or n < 1 for n in workers):
        raise InputError(f"workers must be whole numbers >= 1, got {list(workers)!r}")
    unknown = sorted(set(only or ()) - set(known_rules()))
    if unknown:
        raise InputError(f"--jobs: unknown jobs {unknown}; known: {', '.join(known_rules())}")
    config = load_config(config_path)
    planner = Planner(config, Path(out), timeout_s, budget_s, progress, only=only)
    if progress:
        progress(f"[plan] {config_path}: slicing every job on this machine's CPU (the config says device: "
                 f"{config['device']}); data folder {planner.folder}; budget {budget_s:.0f} s")
        for what, files in planner.missing.items():
            progress(f"[plan] missing data for {what}: {', '.join(files)}")
    jobs = probe_jobs(planner)
    return {"config": str(config_path), "config_name": config["name"], "config_device": config["device"],
            "gpus_per_shard": config.get("gpus_per_shard", 0),
            "partial": bool(only) and not set(planner.costed_rules()) <= set(only),
            "jobs_requested": sorted(set(only)) if only else None,
            "slice_device": "cpu (one thread per probe)", "data_dir": str(planner.folder),
            "missing_data": planner.missing, "gpu_speedup_assumed": speedup, "workers": list(workers),
            "budget_s": budget_s, "wall_s": time.monotonic() - start, "probes": planner.count,
            "jobs": jobs, "totals": summarise(jobs, speedup, workers),
            "not_costed": sorted({j.rule for j in planner.dag if not planner.costed(j)})}
