"""GWG paper Fig. 4 (EXPERIMENTS.md A3, Appendix F.1): ESS of samplers on lattice Ising models.

Target: :class:`gradmc.targets.LatticeIsing` (cyclic side x side lattice, log p(x) = theta s^T A s with
s = 2x - 1, no bias; its critical point is theta_c = log(1 + sqrt 2) / 4 ~= 0.22), applied as a roll-based
operator (never a dense D x D matrix). Chains start from uniform random bits.

Stages: :func:`shards` lists one shard per (side, theta, sampler, seed, chunk of chains); :func:`run` runs
one shard and returns tidy rows; :func:`gradmc.experiments.standard.collect` concatenates and sorts them.
The per-chain ESS needs no cross-chain state, so the ``num_chains`` chains of a (side, theta, sampler, seed)
may be split into chunks of at most ``chains_per_shard`` chains.

Statistic (GWG Sec. 5.1-5.2, following Zanella 2020): Hamming distance of each chain's state to a fixed
random configuration, drawn once per (side, theta) from ``seed_from("ising_sampling", "hamming-reference",
side, theta)``, the same for every sampler, seed and chunk.

Metrics (tidy rows, ``metric`` column; extra columns ``side`` (int), ``theta`` (float) and ``chunk``
(int, the first chain index of the shard's chunk)):
- ``ess`` per chain (``chain`` = global chain index): ArviZ rank-normalised bulk ESS of the statistic after
  burn-in; ``ess_per_second`` (divided by the shard's sampler time only, the chunk's chains run as one
  batch) and ``ess_per_energy_eval`` (divided by the energy evaluations of the batched steps) per chain;
  ``acceptance_rate`` per chain.
- ``ess_all_chains`` (chain = -1): ArviZ bulk ESS pooled over all ``num_chains`` chains, written when one
  shard holds every chain (chains_per_shard >= num_chains). When the chains are chunked it is
  ``ess_chunk_chains`` instead, pooled over the chunk's chains only (one row per chunk).
``wall_time_s`` is the shard's sampler time (the device is synchronised before each clock read).
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import torch

from gradmc.experiments.runner import StepClock, ess_rows, tidy_frame
from gradmc.samplers.discrete.registry import make_sampler
from gradmc.seeding import make_generator, seed_from
from gradmc.targets import LatticeIsing

__all__ = ["EXPERIMENT", "META", "Shard", "shards", "run", "reference_configuration"]

EXPERIMENT = "ising_sampling"
META = {
    "title": "GWG Fig. 4: lattice Ising ESS over a theta grid",
    "message": "Sampling lattice Ising models: sides {sides} x thetas {thetas} x {samplers} x seeds {seeds} on Ray",
    "sort_by": ["side", "theta", "sampler", "seed", "metric", "chain", "chunk", "step"],
    "figure": "fig4_ising_sampling",
    "category": "GWG paper",
}


@dataclass(frozen=True)
class Shard:
    """Chains ``chain_start .. chain_start + num_chains - 1`` of one (side, theta, sampler, seed) run."""

    side: int
    theta: float
    sampler: str
    seed: int
    chain_start: int
    num_chains: int
    total_chains: int
    num_steps: int
    burn_in_fraction: float
    device: str


def shards(config: dict, inputs: dict[str, str]) -> list[Shard]:
    """One shard per (side, theta, sampler, seed, chunk) of ``config['ising_sampling']``, in config order
    (no inputs)."""
    spec = config["ising_sampling"]
    total, per = int(spec["num_chains"]), int(spec["chains_per_shard"])
    return [
        Shard(side=int(side), theta=float(theta), sampler=name, seed=int(seed), chain_start=start,
              num_chains=min(per, total - start), total_chains=total, num_steps=int(spec["num_steps"]),
              burn_in_fraction=float(spec["burn_in_fraction"]), device=config["device"])
        for side in spec["sides"] for theta in spec["thetas"] for name in spec["samplers"]
        for seed in spec["seeds"] for start in range(0, total, per)
    ]


def reference_configuration(side: int, theta: float, device: str = "cpu") -> torch.Tensor:
    """The fixed random configuration (D,) of the Hamming statistic; one per (side, theta)."""
    generator = make_generator(seed_from(EXPERIMENT, "hamming-reference", int(side), float(theta)), device)
    return torch.bernoulli(torch.full((int(side) ** 2,), 0.5, device=device), generator=generator)


def run(shard: Shard) -> pd.DataFrame:
    """Run one shard: ``num_steps`` steps of ``shard.sampler`` on its chunk of chains; tidy rows."""
    device = shard.device
    target = LatticeIsing(shard.side, shard.theta).to(device)
    fixed = reference_configuration(shard.side, shard.theta, device)
    generator = make_generator(seed_from(EXPERIMENT, shard.side, shard.theta, shard.sampler, shard.seed,
                                         shard.chain_start), device)
    sampler = make_sampler(shard.sampler)
    T, C = shard.num_steps, shard.num_chains
    x0 = torch.bernoulli(torch.full((C, shard.side ** 2), 0.5, device=device), generator=generator)
    state = sampler.init(x0, target)
    stat = torch.empty(T + 1, C, device=device)  # Hamming distance to `fixed`, per step and chain
    stat[0] = (state.x != fixed).sum(1)
    accept_sum = torch.zeros(C, device=device)
    clock = StepClock(device)
    for t in range(1, T + 1):
        state, info = clock.step(sampler, state, target, generator)
        accept_sum += info.acceptance_prob
        stat[t] = (state.x != fixed).sum(1)
    pooled = "ess_all_chains" if C == shard.total_chains else "ess_chunk_chains"
    rows = ess_rows(clock, stat, accept_sum, sampler=shard.sampler, seed=shard.seed,
                    burn_in_fraction=shard.burn_in_fraction, chain_offset=shard.chain_start, pooled=pooled)
    df = tidy_frame(rows, EXPERIMENT, f"lattice_ising_{shard.side}x{shard.side}")
    df["side"] = shard.side
    df["theta"] = shard.theta
    df["chunk"] = shard.chain_start
    return df.astype({"side": "int64", "theta": "float64", "chunk": "int64"})

