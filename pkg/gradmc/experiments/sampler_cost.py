"""Cost per step of each sampler relative to Gibbs-1 (issue 3; GWG paper Sec. 5.1 reports Gibbs-2 1.6x,
HB-10-1 6.6x, GWG 2.1x).

Measured on the trained MNIST RBM of :mod:`gradmc.experiments.rbm_train` and on a cyclic lattice Ising
model. Timings run one after another in this process (not on Ray) so that every sampler sees the same
machine and thread count; each is the median of several timed runs after a warm-up.
"""

from __future__ import annotations

import pandas as pd
import torch

from gradmc.bench.timing import time_sampler
from gradmc.experiments.rbm_model import data_mean_init, load_binary_data, load_rbm
from gradmc.samplers.discrete.registry import make_sampler
from gradmc.seeding import make_generator, seed_from
from gradmc.targets.ising import LatticeIsing

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


def run_cost(config: dict, model_path, data_path, progress=print) -> pd.DataFrame:
    """Tidy rows per target x sampler: ms_per_step, steps_per_s (medians over the timed runs), relative_cost
    (median ms per step / Gibbs-1's), energy_evals_per_step, acceptance_rate, and one ``ms_per_step_run`` row
    per timed run (``chain`` = run index), the replicates of the cost claims (gradmc.claims.sampler_cost)."""
    spec = config[EXPERIMENT]
    torch.set_num_threads(spec["threads"])
    rows = []
    generator = make_generator(seed_from(EXPERIMENT), config["device"])
    for target_name, target, x0 in _targets(config, model_path, data_path, generator):
        timings = {}
        for name in spec["samplers"]:
            timings[name] = time_sampler(make_sampler(name), target, x0, generator, steps=spec["steps"],
                                         repeats=spec["repeats"])
            if progress is not None:
                progress(f"[sampler_cost] {target_name} {name}: {timings[name]['ms_per_step']:.3f} ms/step")
        base = timings.get("Gibbs-1", next(iter(timings.values())))["ms_per_step"]
        for name, t in timings.items():
            for metric, value in (("ms_per_step", t["ms_per_step"]), ("steps_per_s", t["steps_per_s"]),
                                  ("relative_cost", t["ms_per_step"] / base),
                                  ("energy_evals_per_step", t["energy_evals_per_step"]),
                                  ("acceptance_rate", t["acceptance_rate"])):
                rows.append({"experiment": EXPERIMENT, "target": target_name, "sampler": name, "seed": 0,
                             "chain": -1, "step": spec["steps"], "metric": metric, "value": float(value),
                             "energy_evals": t["energy_evals_per_step"], "grad_evals": t["grad_evals_per_step"],
                             "wall_time_s": t["ms_per_step"] / 1000.0})
            for run, steps_per_s in enumerate(t["steps_per_s_runs"]):  # the replicates of the cost claims
                rows.append({"experiment": EXPERIMENT, "target": target_name, "sampler": name, "seed": 0,
                             "chain": run, "step": spec["steps"], "metric": "ms_per_step_run",
                             "value": 1000.0 / steps_per_s, "energy_evals": t["energy_evals_per_step"],
                             "grad_evals": t["grad_evals_per_step"], "wall_time_s": 1.0 / steps_per_s})
    return pd.DataFrame(rows)
