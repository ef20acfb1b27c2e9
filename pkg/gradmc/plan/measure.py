"""What one probe runs, inside its child process (:mod:`gradmc.plan.probe` starts it).

A probe is one task of one job (a shard of a standard experiment, or one hand-written rule job) at the slice's
lengths; it reads its inputs and writes its outputs where the slice's DAG puts them (the probe's ``inputs`` and
``outputs``). A job that runs once at full size (data preparation, one epoch of RBM training) is run by Snakemake
itself on the slice's config (:func:`_run_rule`): its time and peak memory are the rule's ``benchmark:`` record.
:func:`measure` runs it three times in the same process: at level 1 (cold: the start-up of the task
included), at level 1 again and at level 2 (warm). The per-unit cost is then (t2 - t1) / (u2 - u1), free of
start-up; the task's fixed cost is t_cold - u1 * per_unit. All times are wall seconds on one CPU thread. A cold
run longer than :data:`LONG_COLD_S` stands for the warm level-1 run too. Where a warm pair is short (under
:data:`REPEAT_BELOW_S`), it is run :data:`WARM_REPEATS` times and each level keeps its fastest time: one hiccup
(a lazy import on the first longer run, another process) in a 0.05 s run would otherwise pass for a per-unit
cost many times the real one.
"""

from __future__ import annotations

import copy
import csv
import importlib
import os
import subprocess
import sys
import time
from pathlib import Path

from gradmc.plan.jobs import JobSpec, ebm_evals, job_spec

__all__ = ["at_level", "class_key", "measure", "produce_benchmark", "warm_pair", "LONG_COLD_S", "REPEAT_BELOW_S",
           "WARM_REPEATS"]

#: A cold level-1 run longer than this (seconds) is also the warm level-1 time: its fixed cost (e.g. a KMC
#: cross-validation at n = 2000) dwarfs the process's one-time start-up, and a third run would not fit the budget.
LONG_COLD_S = 30.0
#: A warm level-1 + level-2 pair shorter than this (seconds) is repeated (:data:`WARM_REPEATS` pairs in all).
REPEAT_BELOW_S = 5.0
#: Warm pairs run when the first is short; each level keeps its minimum.
WARM_REPEATS = 3


def at_level(config: dict, spec: JobSpec, level: int | None) -> dict:
    """A copy of ``config`` with ``spec``'s length keys at ``level`` (1 or 2) and its schedule keys set; None:
    the config itself (copied). Raises KeyError for a dotted key the config lacks."""
    out = copy.deepcopy(config)
    if level is None:
        return out
    for key, value in [*((k, v[level - 1]) for k, v in spec.lengths.items()), *spec.schedule.items()]:
        *path, last = key.split(".")
        node = out
        for part in path:
            node = node[part]
        if last not in node:
            raise KeyError(f"{spec.name}: config key {key!r} not found")
        node[last] = value
    return out


def class_key(shard, classes) -> list:
    """The shard's cost class: its values of the ``classes`` attributes (JSON-friendly list)."""
    return [getattr(shard, name) for name in classes]


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _standard_task(spec: JobSpec, config: dict, probe: dict, level: int):
    from gradmc.experiments.standard import job_config

    module = importlib.import_module(f"gradmc.experiments.{spec.name}")
    shards = module.shards(job_config(spec.name, at_level(config, spec, level)), dict(probe.get("inputs", {})))
    found = [s for s in shards if class_key(s, spec.classes) == list(probe["cls"])]
    if not found:
        raise LookupError(f"{spec.name}: no shard of class {probe['cls']} in the slice")
    shard = found[0] if spec.pick == "first" else found[-1]
    return (lambda: module.run(shard)), int(spec.units(shard))


def _run_rule(probe: dict) -> dict:
    """Run the probe's DAG job (a ``once`` rule) through Snakemake on the slice's config, in the slice's folder
    (``--force`` on its first output; its upstream files are the earlier probes'), and read the rule's
    ``benchmark:`` record: wall seconds and peak resident memory (MiB) of the job's own processes.

    Raises:
        LookupError: the probe names no DAG output or no benchmark file (a rule without ``benchmark:``).
        RuntimeError: Snakemake failed (its last line), or wrote no benchmark record.
    """
    from gradmc.plan.dag import REPO_ROOT

    target, bench = probe.get("target"), probe.get("benchmark")
    if not target or not bench:
        raise LookupError(f"{probe['job']}: no output or no benchmark: file in the DAG to run and time it by (give "
                          "the rule a benchmark: directive)")
    Path(bench).unlink(missing_ok=True)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    argv = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO_ROOT / "Snakefile"), "--directory",
            probe["workdir"], "--configfile", probe["config_path"], "--workflow-profile", "none", "--cores", "1",
            "--force", "--quiet", "all", "--", target]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        lines = [ln for ln in (done.stderr + done.stdout).strip().splitlines() if ln.strip()]
        raise RuntimeError(f"snakemake {target} exited with status {done.returncode}: "
                           + (" | ".join(lines[-3:]) if lines else ""))
    try:
        with open(bench, encoding="utf-8") as fh:
            row = next(csv.DictReader(fh, delimiter="\t"))
        seconds = float(row["s"])
    except (OSError, StopIteration, KeyError, ValueError) as err:
        raise RuntimeError(f"{probe['job']}: no benchmark record in {bench} ({type(err).__name__})") from None
    out = {"t_cold": seconds, "u1": 1, "benchmark": bench}
    try:
        out["peak_rss_mb"] = float(row["max_rss"])
    except (KeyError, ValueError):  # "NA": too short to sample; the probe's own peak is kept
        pass
    return out


def _output(probe: dict, index: int = 0) -> Path:
    """The probe's ``index``-th DAG output (a path in the slice's folder), its folder made."""
    if len(probe.get("outputs") or ()) <= index:
        raise LookupError(f"{probe['job']}: the probe names no output {index} (its DAG job's)")
    path = Path(probe["outputs"][index])
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def _stage_task(spec: JobSpec, config: dict, probe: dict, level: int | None):
    inputs = probe.get("inputs", {})
    cfg = at_level(config, spec, level)
    units = int(spec.units(cfg)) if spec.units else 1
    if spec.name == "rbm_reference":
        from gradmc.experiments.rbm_reference import reference_stage

        return (lambda: reference_stage(cfg, inputs["model"], inputs["data"], _output(probe),
                                        progress=None)), units
    if spec.name == "sampler_cost":
        from gradmc.experiments.sampler_cost import run_cost

        return (lambda: run_cost(cfg, inputs["model"], inputs["data"], progress=None)), units
    if spec.name == "ising_pcd_data":
        from gradmc.experiments.ising_pcd_data import write_data

        return (lambda: write_data(cfg, _output(probe), progress=None)), units
    if spec.name == "train_text_lm":
        from gradmc.experiments.text_lm import train_lm_stage

        return (lambda: train_lm_stage(cfg, inputs["data"], str(_output(probe)), progress=None)), units
    if spec.name == "eval_text_ebm":
        from gradmc.experiments.text_ebm import evaluate_stage

        return (lambda: evaluate_stage(cfg, inputs["data"], inputs["model"], inputs["lm"], progress=None)), units
    raise LookupError(f"no stage runner for {spec.name!r}")


def _train_ebm(config: dict, probe: dict) -> dict:
    """Short trainings timed by the trainer's own clock (sampler + update, no data loading, evaluation or
    saving): 2 iterations of 1 sampler step (cold, then warm) and 2 iterations of 3 steps. Seconds per step
    s = (t(2, 3) - t(2, 1)) / 4, per update u = t(2, 1) / 2 - s; one iteration at the config's num_steps S is
    u + S * s. A step that comes out <= 0 (noise) is replaced by t(2, 3) / 6, an upper bound; u is at least 0.
    The fixed cost is the cold run's wall time less its training seconds. Validation is cut to 1 level on 2
    rows here; its real cost is added by the plan from the ais_ebm probe (seconds per level and per row)."""
    from gradmc.config import for_dataset
    from gradmc.experiments.ebm import train_stage

    ds, sampler = probe["cls"]
    steps = int(for_dataset(config["ebm"]["train"], ds)["num_steps"])
    model = _output(probe)

    def run(iterations: int, num_steps: int) -> tuple[float, float]:
        # the data set's own settings with the slice's put over them: a data set's ``overrides`` entry (e.g.
        # frey's iterations and eval_every) would otherwise put its full length back over the slice's
        cfg = copy.deepcopy(config)
        cfg["ebm"]["train"] = {**for_dataset(cfg["ebm"]["train"], ds), "iterations": iterations,
                               "num_steps": num_steps, "eval_every": 0, "checkpoint_every": 1000000, "log_every": 1}
        cfg["ebm"]["ais"] = {**for_dataset(cfg["ebm"]["ais"], ds), "validation_intermediate": 1,
                             "validation_examples": 2}
        model.unlink(missing_ok=True)
        start = time.perf_counter()
        meta = train_stage(cfg, ds, sampler, probe["inputs"]["data"], str(model), progress=None)
        return time.perf_counter() - start, float(meta["seconds"])

    return {**_step_split(run, steps), "outputs": {"model": str(model)}}


def _step_split(run, steps: int) -> dict:
    """Seconds per PCD iteration of ``steps`` sampler steps from ``run(iterations, num_steps)`` -> (wall seconds,
    the trainer's own seconds): 2 iterations of 1 step (cold, then warm) and 2 of 3 steps (see :func:`_train_ebm`)."""
    cold_wall, cold_train = run(2, 1)
    _, one = run(2, 1)
    _, three = run(2, 3)
    step = (three - one) / 4
    if step <= 0:
        step = three / 6
    update = max(one / 2 - step, 0.0)
    return {"t_cold": cold_wall, "per_unit": update + steps * step, "fixed": max(cold_wall - one, 0.0),
            "detail": {"seconds_per_sampler_step": step, "seconds_per_update": update, "num_steps": steps,
                       "train_seconds": {"2x1_cold": cold_train, "2x1": one, "2x3": three}}}


def _train_text_ebm(config: dict, probe: dict) -> dict:
    """The text EBM's training timed as the image EBM's (:func:`_step_split`): categorical GWG steps and updates
    by the trainer's own clock, one iteration at the config's num_steps = update + num_steps x step."""
    from gradmc.experiments.text_ebm import train_ebm_stage

    steps = int(config["text_ebm"]["train"]["num_steps"])
    model = _output(probe)

    def run(iterations: int, num_steps: int) -> tuple[float, float]:
        cfg = copy.deepcopy(config)
        cfg["text_ebm"]["train"].update(iterations=iterations, num_steps=num_steps, log_every=1)
        model.unlink(missing_ok=True)
        start = time.perf_counter()
        meta = train_ebm_stage(cfg, probe["inputs"]["data"], str(model), progress=None)
        return time.perf_counter() - start, float(meta["seconds"])

    return {**_step_split(run, steps), "outputs": {"model": str(model)}}


def _ais_ebm(config: dict, probe: dict) -> dict:
    """AIS at 4 levels (cold), 4 and 8 levels (warm), then f(x) of 1024 rows at the bound's batch size: the
    fixed part of the job (test rows, the hard bound over the training rows and the buffer) is rows x that,
    plus the bound's mode search (``bound_search_steps`` GWG steps on ``bound_search_chains`` chains), costed
    roughly as that many AIS levels scaled linearly by chains / ``num_chains`` (an AIS level is one GWG step
    and one f(x); a search step is one GWG step)."""
    import torch

    from gradmc.config import for_dataset
    from gradmc.experiments.ebm import _ais, _f_values, load_data, load_trained, subset
    from gradmc.seeding import seed_from

    ds, sampler = probe["cls"]
    spec = config["ebm"]
    data = load_data(probe["inputs"]["data"], "cpu")
    ais = for_dataset(spec["ais"], ds)  # the data set's own settings (e.g. frey's: no mode search)
    model, state = load_trained(probe["inputs"]["model"], spec, data)

    def levels(k: int) -> float:
        out = _timed(lambda: _ais(model, data, k, int(ais["num_chains"]), seed_from("plan", ds, k)))
        model.requires_grad_(True)
        return out

    cold, t1, t2 = levels(4), levels(4), levels(8)
    rows = subset(data.splits["train"], 1024, 0)
    with torch.no_grad():
        t_rows = _timed(lambda: _f_values(model, data, rows, batch=1024 if data.levels == 2 else 64))
    test = min(int(ais["test_examples"]), int(data.splits["test"].shape[0]))
    bound_rows = int(data.splits["train"].shape[0]) + int(state["buffer"].shape[0])
    per_level = (t2 - t1) / 4
    if per_level <= 0:
        per_level = t2 / 8
    per_row = t_rows / rows.shape[0]
    search_steps = int(ais["bound_search_steps"])
    search = search_steps * per_level * int(ais["bound_search_chains"]) / int(ais["num_chains"])
    fixed = max(cold - 4 * per_level, 0.0) + per_row * (test + bound_rows) + search
    return {"t_cold": cold, "per_unit": per_level, "fixed": fixed,
            "detail": {"seconds_per_row": per_row, "test_rows": test, "bound_rows": bound_rows,
                       "bound_search_steps": search_steps, "bound_search_seconds": search,
                       "validation_rows": min(int(ais["validation_examples"]), int(data.splits["valid"].shape[0])),
                       "validation_levels": int(ais["validation_intermediate"]),
                       "validation_runs": ebm_evals(for_dataset(spec["train"], ds))}}


def measure(probe: dict, config: dict) -> dict:
    """Run one probe (a dict: ``job``, ``cls``, ``inputs``, ``workdir``, ``config_path``; for a hand-written
    rule also its DAG job's ``outputs``, ``target`` and ``benchmark``) on ``config`` (the slice's base config).
    Returns ``t_cold``, ``t1``, ``t2``, ``u1``, ``u2`` seconds / units (or ``per_unit`` and
    ``fixed`` directly for the EBM stages), plus ``outputs`` (files a later probe reads).

    Raises:
        LookupError: no shard of the probe's class, or no runner for the job.
        Whatever the job itself raises (the plan reports it as the job's error).
    """
    spec = job_spec(probe["job"])
    if spec.kind == "once":
        return _run_rule(probe)
    if spec.name == "train_ebm":
        return _train_ebm(config, probe)
    if spec.name == "ais_ebm":
        return _ais_ebm(config, probe)
    if spec.name == "train_text_ebm":
        return _train_text_ebm(config, probe)
    task = _standard_task if spec.kind == "standard" else _stage_task
    fn1, u1 = task(spec, config, probe, 1)
    cold = _timed(fn1)
    fn2, u2 = task(spec, config, probe, 2)
    if cold > LONG_COLD_S:  # start-up is then small beside the task's own fixed cost: no second level-1 run
        t1, t2 = cold, _timed(fn2)
    else:
        t1, t2 = warm_pair(lambda: task(spec, config, probe, 1)[0], fn2)
    return {"t_cold": cold, "t1": t1, "t2": t2, "u1": u1, "u2": u2}


def warm_pair(make_level1, level2, repeats: int = WARM_REPEATS, repeat_below_s: float = REPEAT_BELOW_S,
              timer=None) -> tuple[float, float]:
    """Warm wall seconds (t1, t2) of a level-1 and a level-2 run: one pair, or, when that pair takes under
    ``repeat_below_s`` seconds, ``repeats`` pairs with each level's minimum (the least disturbed run).

    Args:
        make_level1: returns a fresh level-1 callable (a stage task may need one per run).
        level2: the level-2 callable.
        repeats: pairs in all when the first is short (>= 1).
        repeat_below_s: the first pair's seconds under which it is repeated.
        timer: ``fn -> seconds`` (default: wall time of one call); tests pass a fake clock.
    """
    timer = timer or _timed
    t1, t2 = timer(make_level1()), timer(level2)
    if t1 + t2 < repeat_below_s:
        for _ in range(repeats - 1):
            t1, t2 = min(t1, timer(make_level1())), min(t2, timer(level2))
    return t1, t2


def benchmark_iterations(config: dict, least: int = 100) -> int:
    """Iterations per chain of the slice's benchmark file: ``least``, or more where kmc_gpc's ``num_history``
    needs more samples than ``num_chains x least`` (kmc_gpc refuses a benchmark file shorter than its history)."""
    spec = config["kmc_gpc"]
    chains = int(spec["benchmark"]["num_chains"])
    return max(int(least), -(-int(spec.get("num_history", 0) or 0) // chains))


def produce_benchmark(config: dict, out: str, iterations: int | None = None) -> None:
    """The GP-classification benchmark file kmc_gpc reads, at slice length: every chain of
    ``kmc_gpc.benchmark`` for ``iterations`` iterations (default :func:`benchmark_iterations`), no burn-in, no
    thinning (num_chains x iterations samples; kmc_gpc needs num_history of them)."""
    from gradmc.experiments.standard import collect, job_config
    from gradmc.results import provenance, write_parquet

    iterations = benchmark_iterations(config) if iterations is None else iterations
    cfg = copy.deepcopy(config)
    cfg["kmc_gpc"]["benchmark"].update(num_iterations=iterations, num_burn_in=0, thin=1)
    module = importlib.import_module("gradmc.experiments.kmc_gpc_benchmark")
    part = job_config("kmc_gpc_benchmark", cfg)
    df = collect("kmc_gpc_benchmark", [module.run(s) for s in module.shards(part, {})], {})
    write_parquet(df, out, provenance({"name": cfg["name"], **part}), validate=True)
