"""GWG paper Fig. 3 (EXPERIMENTS.md A1): sampling a trained MNIST RBM.

Stages: :mod:`gradmc.experiments.rbm_reference` draws the block-Gibbs ground truth; :func:`shards`
lists one shard per (sampler, seed); :func:`run` runs one shard and returns tidy rows. All chains of
a (sampler, seed) stay in one shard because log MMD compares the joint set of current samples with
the ground truth.

Metrics (tidy rows, ``metric`` column):
- ``log_mmd`` every ``mmd_every`` steps (chain = -1): log10 of the biased MMD^2 estimate between the
  current chains and the ground truth with K(x, x') = exp(-mean_i [x_i != x'_i]).
- ``log_mmd_target`` (sampler "Target", chain = -1): the same between two independent ground-truth sets.
- ``ess`` per chain and ``ess_all_chains`` (chain = -1) of the statistic "Hamming distance to a fixed
  random configuration" after burn-in (ArviZ rank-normalised bulk ESS), ``ess_per_second`` (sampler
  time only) and ``ess_per_energy_eval`` per chain; ``acceptance_rate`` per chain; ``ess_discs`` per chain
  (the DISCS benchmark's protocol: second half of the run, NaN set to 1; per second and per evaluation from
  the row's ``wall_time_s`` and ``energy_evals``).
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import torch

from gradmc.distributed.shared import load_once
from gradmc.evaluation.mmd import ReferenceMMD
from gradmc.experiments.rbm_model import data_mean_init, load_binary_data, load_rbm
from gradmc.experiments.rbm_reference import load_reference
from gradmc.experiments.runner import StepClock, ess_rows, tidy_frame
from gradmc.samplers.discrete.registry import make_sampler
from gradmc.seeding import make_generator, seed_from

__all__ = ["EXPERIMENT", "META", "Shard", "shards", "run", "shard_samplers", "target_rows", "finalize"]

EXPERIMENT = "rbm_sampling"  # also the seed namespace shared with rbm_reference
META = {
    # what `gradmc plan` shortens and how it counts units (gradmc.registry)
    "plan": {"unit": "sampler step (num_chains chains)", "units": "num_steps",
             "lengths": {"rbm_sampling.num_steps": [20, 40]}, "schedule": {"rbm_sampling.mmd_every": 10},
             "classes": ["sampler"]},
    "title": "GWG Fig. 3: sampling a trained MNIST RBM (log MMD to block-Gibbs ground truth, ESS)",
    "message": "Sampling the RBM: {samplers} x seeds {seeds} on Ray",
    "sort_by": ["sampler", "seed", "metric", "chain", "step"],
    "figure": "fig3_rbm_sampling",
    "category": "GWG paper",
    "inputs": {"model": "rbm_sampling/rbm.pt", "reference": "rbm_sampling/reference.npz", "data": "data/mnist.npz"},
    "config_keys": ["rbm_sampling.samplers", "rbm_sampling.seeds", "rbm_sampling.num_chains",
                    "rbm_sampling.num_steps", "rbm_sampling.mmd_every", "rbm_sampling.burn_in_fraction"],
}
TARGET = "mnist_rbm"


@dataclass(frozen=True)
class Shard:
    """One (sampler, seed) run of ``num_chains`` chains; paths point at the stage inputs."""

    sampler: str
    seed: int
    num_chains: int
    num_steps: int
    mmd_every: int
    burn_in_fraction: float
    model_path: str
    reference_path: str
    data_path: str
    device: str


def shards(config: dict, inputs: dict[str, str]) -> list[Shard]:
    """One shard per (sampler, seed) of ``config['rbm_sampling']``, in config order.

    ``inputs``: ``model`` (RBM checkpoint of ``train_rbm``), ``reference`` (``rbm_reference`` samples) and
    ``data`` (prepared MNIST .npz: the data-mean initial distribution).
    """
    spec = config["rbm_sampling"]
    model_path, reference_path, data_path = inputs["model"], inputs["reference"], inputs["data"]
    return [
        Shard(sampler=name, seed=seed, num_chains=spec["num_chains"], num_steps=spec["num_steps"],
              mmd_every=spec["mmd_every"], burn_in_fraction=spec["burn_in_fraction"],
              model_path=str(model_path), reference_path=str(reference_path), data_path=str(data_path),
              device=config["device"])
        for name in spec["samplers"] for seed in spec["seeds"]
    ]


def shard_samplers(shard: Shard) -> tuple[str, ...]:
    """The sampler a shard builds: ``shard.sampler``.

    The shard cache keys the shard by these samplers' code (:func:`gradmc.experiments.standard.shard_code_digest`).
    """
    return (shard.sampler,)


def run(shard: Shard) -> pd.DataFrame:
    """Run one shard: ``num_steps`` steps of ``shard.sampler`` on ``num_chains`` chains; tidy rows."""
    device = shard.device
    rbm = load_once(load_rbm, shard.model_path, device)  # once per worker process: read-only
    reference, _ = load_once(load_reference, shard.reference_path, device)  # (R, D)
    data = load_once(load_binary_data, shard.data_path, "train", device)
    generator = make_generator(seed_from(EXPERIMENT, shard.sampler, shard.seed), device)
    stat_generator = make_generator(seed_from(EXPERIMENT, "hamming-reference"), device)
    fixed = torch.bernoulli(torch.full((data.shape[1],), 0.5, device=device), generator=stat_generator)
    sampler = make_sampler(shard.sampler)
    state = sampler.init(data_mean_init(data, shard.num_chains, generator), rbm)
    T, C = shard.num_steps, shard.num_chains
    stat = torch.empty(T + 1, C, device=device)  # Hamming distance to `fixed`, per step and chain
    stat[0] = (state.x != fixed).sum(1)
    accept_sum = torch.zeros(C, device=device)
    clock, rows = StepClock(device), []

    to_reference = ReferenceMMD(reference)  # its (R, R) kernel term once, not at every record

    def record_mmd() -> None:
        rows.append(clock.row(shard.sampler, shard.seed, -1, "log_mmd", float(to_reference.log_mmd(state.x))))

    record_mmd()
    for t in range(1, T + 1):
        state, info = clock.step(sampler, state, rbm, generator)
        accept_sum += info.acceptance_prob
        stat[t] = (state.x != fixed).sum(1)
        if t % shard.mmd_every == 0 or t == T:
            record_mmd()
    rows += ess_rows(clock, stat, accept_sum, sampler=shard.sampler, seed=shard.seed,
                     burn_in_fraction=shard.burn_in_fraction)
    return tidy_frame(rows, EXPERIMENT, TARGET)


def target_rows(reference_path) -> pd.DataFrame:
    """The "Target" line: log MMD between two independent ground-truth sets, as one tidy row."""
    _, target = load_reference(reference_path, "cpu")
    return tidy_frame([("Target", -1, -1, 0, "log_mmd_target", target, 0, 0, 0.0)], EXPERIMENT, TARGET)


def finalize(df: pd.DataFrame, inputs: dict[str, str]) -> pd.DataFrame:
    """The shard rows followed by the Target row of ``inputs["reference"]`` (:func:`target_rows`)."""
    return pd.concat([df, target_rows(inputs["reference"])], ignore_index=True)
