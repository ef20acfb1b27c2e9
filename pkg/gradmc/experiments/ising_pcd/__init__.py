"""GWG paper Fig. 6 / Fig. 11 (EXPERIMENTS.md A5, Sec. 5.3, Appendix F.2-F.3): learning Ising models with PCD.

Input: the .npz of :mod:`gradmc.experiments.ising_pcd_data` (``META["inputs"]["data"]``): per true model
``num_samples`` examples and the true couplings J (D, D).

Shards: one per (model, sampler in ``samplers`` (Gibbs-1, GWG), K in ``steps``, seed), ordered by
estimated cost (largest first, to balance the Ray workers). Each trains an
:class:`gradmc.training.ising_models.IsingModel` (dense symmetric J, zero diagonal, learned bias; J = 0
and b = 0 at the start) with :class:`gradmc.training.pcd.PCD`: ``buffer_size`` persistent chains
(uniform random start), ``batch_size`` data and buffer rows per iteration, K sampler steps per
iteration (one step of Gibbs-1 = one site update; one step of GWG = one proposed flip), Adam with
learning rate ``lr``, and the penalty ``l1`` * sum_ij |J_ij| (Appendix F.2: 256, 256, 1e-3, 0.01).

Metrics (tidy rows, chain = -1, step = PCD iteration; extra columns ``model`` (kind: lattice / er),
``dim``, ``side`` (0 for ER), ``theta`` (NaN for ER) and ``K``; target = the model key):
- ``log_rmse`` and ``rmse`` every ``log_every`` iterations (and at 0 and the end): RMSE over all D^2
  entries of learned J minus true J, natural log;
- ``final_log_rmse`` at the last iteration; ``train_time_s`` (total PCD time of the shard).
``energy_evals`` / ``grad_evals``: cumulative sampler evaluations (per chain-batch call, as in
:class:`gradmc.samplers.base.Info`); ``wall_time_s``: cumulative sampler time only.

Checkpoints: with ``checkpoint_dir`` set, each shard saves its resumable PCD state every
``checkpoint_every`` iterations under a name hashed from the shard (data digest included), resumes from it
when rerun (e.g. a Ray retry after a worker died), and deletes it once its rows are built.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from gradmc.errors import InputError
from gradmc.experiments.ising_pcd_data import model_keys, model_specs, read_model
from gradmc.experiments.runner import tidy_frame
from gradmc.samplers.discrete.registry import make_sampler
from gradmc.seeding import make_generator, seed_from
from gradmc.training.ising_models import IsingModel
from gradmc.training.pcd import PCD, Penalty

__all__ = ["EXPERIMENT", "META", "Shard", "shards", "run", "shard_samplers"]

EXPERIMENT = "ising_pcd"
META = {
    # what `gradmc plan` shortens and how it counts units (gradmc.registry)
    "plan": {"unit": "PCD sampler step (K per iteration, batch_size chains)", "units": "num_iterations*K",
             "lengths": {"ising_pcd.num_iterations": [2, 4]},
             "schedule": {"ising_pcd.log_every": 1, "ising_pcd.checkpoint_dir": None}, "classes": ["dim", "sampler"]},
    "title": "GWG Fig. 6 / Fig. 11: Ising models learned by PCD, Gibbs-1 vs GWG over K",
    "message": "Training Ising models with PCD: {samplers} x K = {steps} x seeds {seeds}, {num_iterations} "
               "iterations on Ray",
    "sort_by": ["model", "dim", "theta", "target", "sampler", "K", "seed", "metric", "step"],
    "figure": "fig6_ising_pcd",
    "category": "GWG paper",
    "extra_figures": ["vs_steps"],
    "extra_tables": ["curves"],
    "inputs": {"data": "ising_pcd/data.npz"},
}


@dataclass(frozen=True)
class Shard:
    """One PCD run: true model ``target`` (a key of the data file), sampler, K steps per iteration, seed."""

    target: str
    kind: str
    dim: int
    side: int
    theta: float
    sampler: str
    K: int
    seed: int
    num_iterations: int
    data_path: str
    data_digest: str
    batch_size: int
    buffer_size: int
    lr: float
    l1: float
    log_every: int
    learn_bias: bool
    device: str
    checkpoint_dir: str | None
    checkpoint_every: int

    @property
    def cost(self) -> float:
        """Relative cost estimate: iterations x (K + 2) dense evaluations of O(D^2)."""
        return self.num_iterations * (self.K + 2) * float(self.dim) ** 2


def _file_digest(path: str | Path) -> str:
    with open(path, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()[:16]


def _data_keys(path: str | Path) -> list[str]:
    with np.load(path) as npz:
        return model_keys(npz, path)


def shards(config: dict, inputs: dict[str, str]) -> list[Shard]:
    """Every (model, sampler, K, seed) of ``config['ising_pcd']``, largest estimated cost first.

    Raises:
        ValueError: a model of the config missing from the data file (rerun the data stage).
    """
    spec = config["ising_pcd"]
    path = str(Path(inputs["data"]).resolve())  # Ray workers need not share the driver's working directory
    present = _data_keys(path)
    models = model_specs(spec["data"])
    missing = [m.key for m in models if m.key not in present]
    if missing:
        raise InputError(f"{path} lacks the models {missing} of ising_pcd.data (it holds {present}); "
                         "rerun the ising_pcd_data stage")
    ckpt = spec["checkpoint_dir"]
    common = dict(num_iterations=int(spec["num_iterations"]), data_path=path, data_digest=_file_digest(path),
                  batch_size=int(spec["batch_size"]), buffer_size=int(spec["buffer_size"]), lr=float(spec["lr"]),
                  l1=float(spec["l1"]), log_every=int(spec["log_every"]), learn_bias=bool(spec["learn_bias"]),
                  device=config["device"], checkpoint_dir=str(Path(ckpt).resolve()) if ckpt else None,
                  checkpoint_every=int(spec["checkpoint_every"]))
    out = [Shard(target=m.key, kind=m.kind, dim=m.dim, side=m.side, theta=m.theta, sampler=name, K=int(k),
                 seed=int(seed), **common)
           for m in models for name in spec["samplers"] for k in spec["steps"] for seed in spec["seeds"]]
    return sorted(out, key=lambda s: -s.cost)  # stable: config order among equal costs


def _checkpoint_path(shard: Shard) -> Path | None:
    if not shard.checkpoint_dir:
        return None
    from gradmc.experiments.standard import checkpoint_tag  # its code digest names the checkpoint

    digest = checkpoint_tag(EXPERIMENT, shard)
    return Path(shard.checkpoint_dir) / f"{shard.target}_{shard.sampler}_K{shard.K}_seed{shard.seed}_{digest}.pt"


def shard_samplers(shard: Shard) -> tuple[str, ...]:
    """The sampler a shard trains with: ``shard.sampler``.

    The shard cache keys the shard by these samplers' code (:func:`gradmc.experiments.standard.shard_code_digest`).
    """
    return (shard.sampler,)


def run(shard: Shard) -> pd.DataFrame:
    """Train one model with PCD; tidy rows of the J error over iterations (see the module docstring)."""
    device = shard.device
    data = read_model(shard.data_path, shard.target)
    x, J_true = data["x"].to(device), data["J"].to(device)
    model = IsingModel(shard.dim, learn_bias=shard.learn_bias).to(device)
    generator = make_generator(seed_from(EXPERIMENT, shard.target, shard.sampler, shard.K, shard.seed), device)
    trainer = PCD(model, make_sampler(shard.sampler), x, num_steps=shard.K, batch_size=shard.batch_size,
                  buffer_size=shard.buffer_size, lr=shard.lr, generator=generator,
                  penalties=[Penalty("l1", "J", shard.l1)] if shard.l1 > 0 else [])

    def j_error(tr: PCD) -> dict:
        rmse = float((tr.model.couplings_dense() - J_true).pow(2).mean().sqrt())
        return {"rmse": rmse, "log_rmse": math.log(rmse) if rmse > 0 else -math.inf}

    checkpoint = _checkpoint_path(shard)
    history = trainer.train(shard.num_iterations, callback=j_error, callback_every=shard.log_every,
                            checkpoint_path=checkpoint, checkpoint_every=shard.checkpoint_every)
    rows = []
    for h in history:
        for metric in ("log_rmse", "rmse"):
            rows.append((shard.sampler, shard.seed, -1, h["iteration"], metric, h[metric], h["energy_evals"],
                         h["grad_evals"], h["sampler_time_s"]))
    last = history[-1]
    for metric, value in (("final_log_rmse", last["log_rmse"]), ("train_time_s", last["train_time_s"])):
        rows.append((shard.sampler, shard.seed, -1, last["iteration"], metric, value, last["energy_evals"],
                     last["grad_evals"], last["sampler_time_s"]))
    df = tidy_frame(rows, EXPERIMENT, shard.target)
    extra = {"model": shard.kind, "dim": np.int64(shard.dim), "side": np.int64(shard.side),
             "theta": float(shard.theta), "K": np.int64(shard.K)}
    for i, (name, value) in enumerate(extra.items()):
        df.insert(df.columns.get_loc("sampler") + 1 + i, name, value)
    if checkpoint is not None:
        checkpoint.unlink(missing_ok=True)
    return df.astype({"dim": "int64", "side": "int64", "theta": "float64", "K": "int64"})

