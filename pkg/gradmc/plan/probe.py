"""One probe: a task of one job at the slice's lengths, run in a child process whose peak resident memory the
parent reads.

The parent (:func:`run_probe`) writes the probe as JSON and starts ``python -m gradmc.plan.probe REQUEST RESULT``
on one CPU thread in its own session; it reaps the child with :func:`os.wait4`, whose ``ru_maxrss`` is that
child's peak resident set size alone. A probe past its timeout is killed (its process group).

In the child, :func:`measure` runs the task at level 1 (cold: start-up included), level 1 again and level 2
(warm): per unit = (t2 - t1) / (u2 - u1), free of start-up; fixed = t_cold - u1 x per unit. A job that runs once
at full size is run by Snakemake on the slice's config and read from its rule's ``benchmark:`` record.
"""

from __future__ import annotations

import copy
import csv
import importlib
import json
import os
import signal
import subprocess
import sys
import time
import traceback
from pathlib import Path

from gradmc.atomic import atomic_path
from gradmc.plan.extrapolate import unit_cost
from gradmc.plan.jobs import JobSpec, ebm_evals, job_spec

__all__ = ["run_probe", "measure", "at_level", "class_key", "warm_pair", "benchmark_iterations",
           "produce_benchmark"]

#: A cold level-1 run longer than this (seconds) is also the warm level-1 time: its fixed cost (e.g. a KMC
#: cross-validation at n = 2000) dwarfs the process's one-time start-up, and a third run would not fit the budget.
LONG_COLD_S = 30.0
#: A warm level-1 + level-2 pair shorter than this (seconds) is run this many times, each level's fastest kept: one
#: hiccup in a 0.05 s run would otherwise pass for a per-unit cost many times the real one.
REPEAT_BELOW_S, WARM_REPEATS = 5.0, 3
#: Iterations per chain of the slice's kmc_gpc benchmark file, unless kmc_gpc's history needs more.
BENCHMARK_ITERATIONS = 100


def at_level(config: dict, spec: JobSpec, level: int) -> dict:
    """A copy of ``config`` with ``spec``'s length keys at ``level`` (1 or 2) and its schedule keys set.
    Raises KeyError for a dotted key the config lacks."""
    out = copy.deepcopy(config)
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


def _output(probe: dict) -> Path:
    """The probe's first DAG output (a path in the slice's folder), its folder made."""
    if not probe.get("outputs"):
        raise LookupError(f"{probe['job']}: the probe names no output 0 (its DAG job's)")
    path = Path(probe["outputs"][0])
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def _stage_task(spec: JobSpec, config: dict, probe: dict, level: int):
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


def _timed_training(probe: dict, steps: int, train) -> dict:
    """Seconds per PCD iteration of ``steps`` sampler steps, by the trainer's own clock (sampler + update, no data
    loading, evaluation or saving), from ``train(iterations, num_steps, model_path)`` -> the trainer's meta: 2
    iterations of 1 step (cold, then warm) and 2 of 3 steps give the seconds per step s (:func:`unit_cost` over
    2 and 6 steps) and per update u = t(2, 1) / 2 - s >= 0; one iteration is u + steps x s. The fixed cost is the
    cold run's wall time less the warm run's training seconds."""
    model = _output(probe)

    def run(iterations: int, num_steps: int) -> tuple[float, float]:
        model.unlink(missing_ok=True)
        start = time.perf_counter()
        meta = train(iterations, num_steps, str(model))
        return time.perf_counter() - start, float(meta["seconds"])

    cold_wall, cold_train = run(2, 1)
    _, one = run(2, 1)
    _, three = run(2, 3)
    step = unit_cost(one, one, three, 2, 6)[0]
    update = max(one / 2 - step, 0.0)
    return {"t_cold": cold_wall, "per_unit": update + steps * step, "fixed": max(cold_wall - one, 0.0),
            "outputs": {"model": str(model)},
            "detail": {"seconds_per_sampler_step": step, "seconds_per_update": update, "num_steps": steps,
                       "train_seconds": {"2x1_cold": cold_train, "2x1": one, "2x3": three}}}


def _train_ebm(config: dict, probe: dict) -> dict:
    """The image EBM's training (:func:`_timed_training`). Validation is cut to 1 level on 2 rows here; the plan
    adds its real cost from the ais_ebm probe (seconds per level and per row)."""
    from gradmc.config import for_dataset
    from gradmc.experiments.ebm import train_stage

    ds, sampler = probe["cls"]

    def train(iterations: int, num_steps: int, model: str) -> dict:
        # the data set's own settings with the slice's put over them: a data set's ``overrides`` entry (e.g.
        # frey's iterations and eval_every) would otherwise put its full length back over the slice's
        cfg = copy.deepcopy(config)
        cfg["ebm"]["train"] = {**for_dataset(cfg["ebm"]["train"], ds), "iterations": iterations,
                               "num_steps": num_steps, "eval_every": 0, "checkpoint_every": 1000000, "log_every": 1}
        cfg["ebm"]["ais"] = {**for_dataset(cfg["ebm"]["ais"], ds), "validation_intermediate": 1,
                             "validation_examples": 2}
        return train_stage(cfg, ds, sampler, probe["inputs"]["data"], model, progress=None)

    return _timed_training(probe, int(for_dataset(config["ebm"]["train"], ds)["num_steps"]), train)


def _train_text_ebm(config: dict, probe: dict) -> dict:
    """The text EBM's training, categorical GWG steps and updates (:func:`_timed_training`)."""
    from gradmc.experiments.text_ebm import train_ebm_stage

    def train(iterations: int, num_steps: int, model: str) -> dict:
        cfg = copy.deepcopy(config)
        cfg["text_ebm"]["train"].update(iterations=iterations, num_steps=num_steps, log_every=1)
        return train_ebm_stage(cfg, probe["inputs"]["data"], model, progress=None)

    return _timed_training(probe, int(config["text_ebm"]["train"]["num_steps"]), train)


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
    per_level, start_up = unit_cost(cold, t1, t2, 4, 8)
    per_row = t_rows / rows.shape[0]
    search_steps = int(ais["bound_search_steps"])
    search = search_steps * per_level * int(ais["bound_search_chains"]) / int(ais["num_chains"])
    fixed = start_up + per_row * (test + bound_rows) + search
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
    in_parts = {"train_ebm": _train_ebm, "ais_ebm": _ais_ebm, "train_text_ebm": _train_text_ebm}
    if spec.name in in_parts:
        return in_parts[spec.name](config, probe)
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


def benchmark_iterations(config: dict) -> int:
    """Iterations per chain of the slice's benchmark file: :data:`BENCHMARK_ITERATIONS`, or more where kmc_gpc's
    ``num_history`` needs more samples than that x ``num_chains`` (kmc_gpc refuses a shorter benchmark file)."""
    spec = config["kmc_gpc"]
    chains = int(spec["benchmark"]["num_chains"])
    return max(BENCHMARK_ITERATIONS, -(-int(spec.get("num_history", 0) or 0) // chains))


def produce_benchmark(config: dict, out: str) -> None:
    """Write the GP-classification benchmark file kmc_gpc reads to ``out``, at slice length: every chain of
    ``kmc_gpc.benchmark`` for :func:`benchmark_iterations` iterations, no burn-in, no thinning."""
    from gradmc.experiments.standard import collect, job_config
    from gradmc.results import provenance, write_parquet

    cfg = copy.deepcopy(config)
    cfg["kmc_gpc"]["benchmark"].update(num_iterations=benchmark_iterations(config), num_burn_in=0, thin=1)
    module = importlib.import_module("gradmc.experiments.kmc_gpc_benchmark")
    part = job_config("kmc_gpc_benchmark", cfg)
    df = collect("kmc_gpc_benchmark", [module.run(s) for s in module.shards(part, {})], {})
    write_parquet(df, out, provenance({"name": cfg["name"], **part}), validate=True)


def _write_json(path, payload) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(payload, indent=1, default=str), encoding="utf-8")


def run_probe(probe: dict, folder: str | Path, timeout_s: float, name: str) -> dict:
    """Run ``probe`` (see :func:`measure`) in a child process.

    Args:
        probe: JSON-able probe description.
        folder: where the request, result and the child's log go (``<name>.json``, ``.result.json``, ``.log``).
        timeout_s: wall seconds before the child is killed.
        name: file stem of this probe.

    Returns:
        The child's measurement plus ``status`` (``"ok"``, ``"error"`` or ``"timeout"``), ``error`` (the last
        line of the child's error, if any), ``peak_rss_mb`` (MiB, from ``os.wait4``, unless the measurement
        gives its own: a Snakemake ``benchmark:`` record of the job alone) and ``wall_s`` (seconds,
        the whole child including its start-up).
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    request, result, log = folder / f"{name}.json", folder / f"{name}.result.json", folder / f"{name}.log"
    result.unlink(missing_ok=True)
    _write_json(request, probe)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    start = time.perf_counter()
    with open(log, "wb") as fh:
        child = subprocess.Popen([sys.executable, "-m", "gradmc.plan.probe", str(request), str(result)],
                                 stdout=fh, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        timed_out = False
        while True:
            pid, status, usage = os.wait4(child.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() - start > timeout_s:
                timed_out = True
                os.killpg(child.pid, signal.SIGKILL)
                pid, status, usage = os.wait4(child.pid, 0)
                break
            time.sleep(0.1)
        child.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
    out: dict = json.loads(result.read_text(encoding="utf-8")) if result.is_file() else {}
    out["wall_s"] = time.perf_counter() - start
    if not isinstance(out.get("peak_rss_mb"), (int, float)):  # else: the job's own, from its benchmark: record
        out["peak_rss_mb"] = usage.ru_maxrss / 1024.0 if sys.platform != "darwin" else usage.ru_maxrss / 2**20
    if timed_out:
        out.update(status="timeout", error=f"killed after {timeout_s:.0f} s, peak RSS {out['peak_rss_mb']:.0f} MiB "
                                           f"so far (log: {log})")
    elif child.returncode != 0 or "error" in out:
        tail = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-1:] if log.is_file() else []
        out.update(status="error", error=out.get("error") or (tail[0] if tail else f"exit {child.returncode}"))
    else:
        out["status"] = "ok"
    return out


def _child(request: str, result: str) -> int:
    import torch

    torch.set_num_threads(1)
    from gradmc.config import load_config

    probe = json.loads(Path(request).read_text(encoding="utf-8"))
    try:
        out = measure(probe, load_config(probe["config_path"]))
    except Exception as err:  # reported in the plan; the other probes go on
        traceback.print_exc()
        _write_json(result, {"error": f"{type(err).__name__}: {err}".splitlines()[0][:500]})
        return 1
    _write_json(result, out)
    return 0


if __name__ == "__main__":
    sys.exit(_child(sys.argv[1], sys.argv[2]))
