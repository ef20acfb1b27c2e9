"""Cost per step of each sampler relative to Gibbs-1 (GWG paper Sec. 5.1 reports Gibbs-2 1.6x, HB-10-1 6.6x,
GWG 2.1x, timed on the authors' GPU code).

Measured on the trained MNIST RBM of :mod:`gradmc.experiments.rbm_train` and on a cyclic lattice Ising model. Each of
``processes`` separate processes (spawned one after another, not on Ray, so every sampler sees the same idle
machine and thread count) builds the targets, warms every sampler up, then times ``repeats`` runs of each sampler
in alternation (:func:`gradmc.evaluation.timing.time_interleaved`: the order rotates each run), so a slow drift of the
machine hits all samplers alike. A process is the replicate of the cost claims: its median ms per step per sampler.
"""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor

import pandas as pd
import torch

from gradmc.evaluation.timing import time_interleaved
from gradmc.experiments.rbm_model import data_mean_init, load_binary_data, load_rbm
from gradmc.samplers.discrete.registry import make_sampler
from gradmc.seeding import make_generator, seed_from
from gradmc.targets.ising import LatticeIsing
from gradmc.threads import apply_thread_policy

__all__ = ["EXPERIMENT", "META", "run_cost"]

EXPERIMENT = "sampler_cost"
META = {"stages": {"sampler_cost": ["sampler_cost"]}}


def _targets(config: dict, model_path, data_path, generator):
    spec = config[EXPERIMENT]
    device = config["device"]
    rbm = load_rbm(model_path, device)
    data = load_binary_data(data_path, "train", device)
    yield "mnist_rbm", rbm, data_mean_init(data, spec["rbm_chains"], generator)
    side = spec["ising"]["side"]
    ising = LatticeIsing(side=side, theta=spec["ising"]["theta"]).to(device)
    x0 = torch.bernoulli(torch.full((spec["ising"]["chains"], side * side), 0.5, device=device), generator=generator)
    yield f"ising_{side}x{side}", ising, x0


def _time_one_process(config: dict, model_path, data_path, process: int) -> list[dict]:
    """Every sampler's runs on every target, timed in alternation in this process; tidy rows ``ms_per_step_run``
    (seed = ``process``, chain = run index)."""
    spec = config[EXPERIMENT]
    apply_thread_policy(spec["threads"])  # at most spec["threads"]: fewer when cores are busy (gradmc.threads)
    generator = make_generator(seed_from(EXPERIMENT, process), config["device"])
    rows = []
    for target_name, target, x0 in _targets(config, model_path, data_path, generator):
        timed = time_interleaved({name: make_sampler(name) for name in spec["samplers"]}, target, x0, generator,
                                 steps=spec["steps"], repeats=spec["repeats"])
        for name, t in timed.items():
            for run, ms in enumerate(t["ms_per_step_runs"]):
                rows.append({"experiment": EXPERIMENT, "target": target_name, "sampler": name, "seed": process,
                             "chain": run, "step": spec["steps"], "metric": "ms_per_step_run", "value": ms,
                             "energy_evals": t["energy_evals_per_step"], "grad_evals": t["grad_evals_per_step"],
                             "wall_time_s": ms / 1000.0, "acceptance": t["acceptance_rate"]})
    return rows


def run_cost(config: dict, model_path, data_path, progress=print) -> pd.DataFrame:
    """Time every sampler in ``processes`` separate processes (module docstring).

    Returns:
        Tidy rows per target x sampler: ``ms_per_step_run`` per run (seed = process, chain = run), and over all
        processes ``ms_per_step`` (the median of the per-process medians), ``steps_per_s``, ``relative_cost``
        (ms_per_step / Gibbs-1's, or the first sampler's), ``energy_evals_per_step``, ``acceptance_rate``
        (seed 0, chain -1).
    """
    spec = config[EXPERIMENT]
    processes = int(spec["processes"])
    runs = []
    if processes == 1:
        runs = _time_one_process(config, model_path, data_path, 0)
    else:
        context = multiprocessing.get_context("spawn")
        for process in range(processes):
            with ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
                runs += pool.submit(_time_one_process, config, str(model_path), str(data_path), process).result()
            if progress is not None:
                progress(f"[sampler_cost] process {process + 1} of {processes} timed")
    df = pd.DataFrame(runs)
    per_process = df.groupby(["target", "sampler", "seed"], sort=False)["value"].median()
    rows = []
    for target_name in df["target"].unique():
        medians = {name: float(per_process[target_name][name].median()) for name in spec["samplers"]}
        base = medians.get("Gibbs-1", next(iter(medians.values())))
        for name, ms in medians.items():
            one = df[(df["target"] == target_name) & (df["sampler"] == name)].iloc[0]
            if progress is not None:
                progress(f"[sampler_cost] {target_name} {name}: {ms:.3f} ms/step (median of {processes} processes)")
            for metric, value in (("ms_per_step", ms), ("steps_per_s", 1000.0 / ms), ("relative_cost", ms / base),
                                  ("energy_evals_per_step", one["energy_evals"]),
                                  ("acceptance_rate", df.loc[(df["target"] == target_name) & (df["sampler"] == name),
                                                             "acceptance"].mean())):
                rows.append({"experiment": EXPERIMENT, "target": target_name, "sampler": name, "seed": 0,
                             "chain": -1, "step": spec["steps"], "metric": metric, "value": float(value),
                             "energy_evals": one["energy_evals"], "grad_evals": one["grad_evals"],
                             "wall_time_s": ms / 1000.0})
    return pd.concat([pd.DataFrame(rows), df.drop(columns="acceptance")], ignore_index=True)
