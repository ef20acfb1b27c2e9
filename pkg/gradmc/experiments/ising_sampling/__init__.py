"""GWG paper Fig. 4 (EXPERIMENTS.md A3, Appendix F.1): ESS of samplers on lattice Ising models.

Target: :class:`gradmc.targets.LatticeIsing` (cyclic side x side lattice, log p(x) = theta s^T A s with
s = 2x - 1, no bias; its critical point is theta_c = log(1 + sqrt 2) / 4 ~= 0.22), applied as a roll-based
operator (never a dense D x D matrix). Chains start from uniform random bits.

Stages: :func:`shards` lists one shard per (side, theta, sampler, seed, chunk of chains); :func:`run` runs
one shard and returns tidy rows; :func:`gradmc.experiments.standard.collect` concatenates and sorts them.
The per-chain ESS needs no cross-chain state, so the ``num_chains`` chains of a (side, theta, sampler, seed)
may be split into chunks of at most ``chains_per_shard`` chains. Randomness is drawn per block of
``chain_block`` chains (one generator per block, :class:`gradmc.core.streams.ChainStreams`), so a chain
is the same chain whichever shard runs it: a shard over the memory budget is split into parts of whole
blocks (:func:`shard_memory_bytes`, :func:`run_part`, :func:`merge_parts`;
:mod:`gradmc.distributed.memory_split`) with the rows of the unsplit shard.

Statistic (GWG Sec. 5.1-5.2, following Zanella 2020): Hamming distance of each chain's state to a fixed
random configuration, drawn once per (side, theta) from ``seed_from("ising_sampling", "hamming-reference",
side, theta)``, the same for every sampler, seed and chunk.

Metrics (tidy rows, ``metric`` column; extra columns ``side`` (int), ``theta`` (float) and ``chunk``
(int, the first chain index of the shard's chunk)):
- ``ess`` per chain (``chain`` = global chain index): ArviZ rank-normalised bulk ESS of the statistic after
  burn-in; ``ess_per_second`` (divided by the shard's sampler time only, the chunk's chains run as one
  batch) and ``ess_per_energy_eval`` (divided by the energy evaluations of the batched steps) per chain;
  ``acceptance_rate`` per chain; ``ess_discs`` per chain (the DISCS benchmark's protocol: second half of the
  run, NaN set to 1; :func:`gradmc.evaluation.ess.ess_discs_per_chain`).
- ``ess_all_chains`` (chain = -1): ArviZ bulk ESS pooled over all ``num_chains`` chains, written when one
  shard holds every chain (chains_per_shard >= num_chains). When the chains are chunked it is
  ``ess_chunk_chains`` instead, pooled over the chunk's chains only (one row per chunk).
``wall_time_s`` is the shard's sampler time (the device is synchronised before each clock read).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

import gradmc.core.streams as streams
from gradmc.distributed.memory_split import ShardPart
from gradmc.errors import ConfigError
from gradmc.evaluation.ess import ess
from gradmc.experiments.runner import StepClock, ess_rows, tidy_frame
from gradmc.samplers.discrete.registry import make_sampler
from gradmc.seeding import make_generator, seed_from
from gradmc.targets import LatticeIsing

__all__ = ["EXPERIMENT", "META", "Shard", "merge_parts", "reference_configuration", "run", "run_part",
           "shard_chains", "shard_samplers", "shard_memory_bytes", "shards"]

EXPERIMENT = "ising_sampling"
META = {
    # what `gradmc plan` shortens and how it counts units (gradmc.registry)
    "plan": {"unit": "sampler step (chains_per_shard chains)", "units": "num_steps",
             "lengths": {"ising_sampling.num_steps": [200, 400]}, "classes": ["side", "sampler"]},
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
    chain_block: int
    device: str


def shards(config: dict, inputs: dict[str, str]) -> list[Shard]:
    """One shard per (side, theta, sampler, seed, chunk) of ``config['ising_sampling']``, in config order
    (no inputs)."""
    spec = config["ising_sampling"]
    total, per, block = int(spec["num_chains"]), int(spec["chains_per_shard"]), int(spec["chain_block"])
    if per % block and per < total:
        raise ConfigError(f"ising_sampling.chains_per_shard ({per}) must be a multiple of ising_sampling.chain_block "
                          f"({block}) when it splits the {total} chains: a shard holds whole chain blocks")
    return [
        Shard(side=int(side), theta=float(theta), sampler=name, seed=int(seed), chain_start=start,
              num_chains=min(per, total - start), total_chains=total, num_steps=int(spec["num_steps"]),
              burn_in_fraction=float(spec["burn_in_fraction"]), chain_block=block, device=config["device"])
        for side in spec["sides"] for theta in spec["thetas"] for name in spec["samplers"]
        for seed in spec["seeds"] for start in range(0, total, per)
    ]


def reference_configuration(side: int, theta: float, device: str = "cpu") -> torch.Tensor:
    """The fixed random configuration (D,) of the Hamming statistic; one per (side, theta)."""
    generator = make_generator(seed_from(EXPERIMENT, "hamming-reference", int(side), float(theta)), device)
    return torch.bernoulli(torch.full((int(side) ** 2,), 0.5, device=device), generator=generator)


def _streams(shard: Shard, start: int, stop: int) -> streams.ChainStreams:
    """The random streams of chains ``start .. stop - 1`` of ``shard``: one generator per chain block of the
    whole (side, theta, sampler, seed) run, seeded from the block's index, so a chain's draws do not depend on
    which shard or part runs it."""
    first = shard.chain_start + start
    if first % shard.chain_block:
        raise ValueError(f"chains from {first} do not start a chain block of {shard.chain_block} chains")
    generators, sizes = [], []
    for block_start in range(first, shard.chain_start + stop, shard.chain_block):
        block = block_start // shard.chain_block
        generators.append(make_generator(seed_from(EXPERIMENT, shard.side, shard.theta, shard.sampler, shard.seed,
                                                   "chain-block", block), shard.device))
        sizes.append(min(block_start + shard.chain_block, shard.chain_start + stop) - block_start)
    return streams.ChainStreams(generators, sizes)


def shard_chains(shard: Shard) -> tuple[int, int]:
    """(chains, chain block) of a shard (:mod:`gradmc.distributed.memory_split`)."""
    return shard.num_chains, shard.chain_block


#: float32 (D,)-sized working tensors per chain a kernel may hold at once (a generous bound: GWG holds about
#: 10, HB-10-1 its 11 candidates and their evaluations about 30).
WORKING_TENSORS = 64
#: bytes per chain and recorded step: the float32 statistic trace plus the float64 copies that the ESS
#: computations (ArviZ's rank normalisation, per chain and pooled) hold at once. Measured peak resident memory
#: above the worker's baseline, 40 x 40 lattice: 194 MiB for 64 chains x 40,000 steps (79 bytes per chain and
#: step) and 109 MiB for 256 chains x 5,000 steps (GWG; Gibbs-1 alike), against estimates of 259 and 217 MiB.
BYTES_PER_STEP = 96


def shard_memory_bytes(shard: Shard, num_chains: int) -> int:
    """Estimated peak bytes of running ``num_chains`` of the shard's chains, beyond the worker's baseline:
    per chain :data:`BYTES_PER_STEP` per step (T + 1 recorded) and :data:`WORKING_TENSORS` float32 (D,)
    tensors of the kernel."""
    T, D = shard.num_steps, shard.side ** 2
    return int(num_chains) * (BYTES_PER_STEP * (T + 1) + 4 * D * WORKING_TENSORS)


def shard_samplers(shard: Shard) -> tuple[str, ...]:
    """The sampler a shard builds: ``shard.sampler``.

    The shard cache keys the shard by these samplers' code (:func:`gradmc.experiments.standard.shard_code_digest`).
    """
    return (shard.sampler,)


def run(shard: Shard) -> pd.DataFrame:
    """Run one shard: ``num_steps`` steps of ``shard.sampler`` on its chunk of chains; tidy rows."""
    return run_part(ShardPart(shard, 0, shard.num_chains))


#: metric of a part's kept statistic trace (chain, step, value), from which merge_parts pools the ESS
TRACE_METRIC = "kept_statistic"


def run_part(part: ShardPart) -> pd.DataFrame:
    """Chains ``part.start .. part.stop - 1`` of ``part.shard`` (whole chain blocks): their per-chain rows and,
    for the whole shard, the pooled ESS row; a part of a split shard instead adds its kept statistic as
    :data:`TRACE_METRIC` rows, for :func:`merge_parts`."""
    shard = part.shard
    device = shard.device
    target = LatticeIsing(shard.side, shard.theta).to(device)
    fixed = reference_configuration(shard.side, shard.theta, device)
    generator = _streams(shard, part.start, part.stop)
    sampler = make_sampler(shard.sampler)
    T, C = shard.num_steps, part.stop - part.start
    x0 = streams.bernoulli(torch.full((C, shard.side ** 2), 0.5, device=device), generator)
    state = sampler.init(x0, target)
    stat = torch.empty(T + 1, C, device=device)  # Hamming distance to `fixed`, per step and chain
    stat[0] = (state.x != fixed).sum(1)
    accept_sum = torch.zeros(C, device=device)
    clock = StepClock(device)
    for t in range(1, T + 1):
        state, info = clock.step(sampler, state, target, generator)
        accept_sum += info.acceptance_prob
        stat[t] = (state.x != fixed).sum(1)
    whole = part.start == 0 and part.stop == shard.num_chains
    rows = ess_rows(clock, stat, accept_sum, sampler=shard.sampler, seed=shard.seed,
                    burn_in_fraction=shard.burn_in_fraction, chain_offset=shard.chain_start + part.start,
                    pooled=_pooled_metric(shard) if whole else None)
    df = _frame(shard, rows)
    if whole:
        return df
    burn = int(shard.burn_in_fraction * T)
    kept = stat[burn + 1:].T.cpu().numpy().astype(np.float64)  # (C, kept steps)
    steps = np.arange(burn + 1, T + 1)
    trace = tidy_frame({  # columns straight into the tidy frame: no intermediate DataFrame
        "sampler": shard.sampler, "seed": shard.seed,
        "chain": np.repeat(np.arange(C) + shard.chain_start + part.start, kept.shape[1]),
        "step": np.tile(steps, C), "metric": TRACE_METRIC, "value": kept.reshape(-1),
        "energy_evals": clock.energy_evals, "grad_evals": clock.grad_evals, "wall_time_s": clock.seconds},
        EXPERIMENT, df["target"].iloc[0])
    return pd.concat([df, _frame_columns(shard, trace)], ignore_index=True)


def _pooled_metric(shard: Shard) -> str:
    return "ess_all_chains" if shard.num_chains == shard.total_chains else "ess_chunk_chains"


def _frame(shard: Shard, rows: list[tuple]) -> pd.DataFrame:
    return _frame_columns(shard, tidy_frame(rows, EXPERIMENT, f"lattice_ising_{shard.side}x{shard.side}"))


def _frame_columns(shard: Shard, df: pd.DataFrame) -> pd.DataFrame:
    df["side"] = shard.side
    df["theta"] = shard.theta
    df["chunk"] = shard.chain_start
    return df.astype({"side": "int64", "theta": "float64", "chunk": "int64"})


def merge_parts(shard: Shard, frames: list[pd.DataFrame]) -> pd.DataFrame:
    """The rows of the whole shard from its parts' frames (:func:`run_part`): the per-chain rows as they
    are, and the pooled ESS over the parts' kept statistic traces (chain -1; its costs are the parts'
    per-batch counts, its ``wall_time_s`` the parts' summed sampler time).

    Raises:
        ValueError: the parts do not cover the shard's chains, or their step counts differ.
    """
    df = pd.concat(frames, ignore_index=True)
    trace = df[df["metric"] == TRACE_METRIC]
    rows = df[df["metric"] != TRACE_METRIC]
    chains = sorted(trace["chain"].unique())
    expected = list(range(shard.chain_start, shard.chain_start + shard.num_chains))
    if chains != expected:
        raise ValueError(f"parts of {shard!r} hold chains {chains[:3]}..{chains[-3:]}, "
                         f"not {expected[0]}..{expected[-1]}")
    trace = trace.sort_values(["chain", "step"], kind="stable")
    kept = trace["value"].to_numpy(np.float64).reshape(len(chains), -1)  # (C, kept steps)
    last = rows[rows["metric"] == "ess"]
    if last["step"].nunique() != 1 or last["energy_evals"].nunique() != 1:
        raise ValueError(f"parts of {shard!r} ran different numbers of steps or evaluations")
    first = last.iloc[0]
    seconds = sum(float(f.loc[f["metric"] == "ess", "wall_time_s"].iloc[0]) for f in frames)
    pooled = (shard.sampler, shard.seed, -1, int(first["step"]), _pooled_metric(shard), float(ess(kept)),
              int(first["energy_evals"]), int(first["grad_evals"]), seconds)
    return pd.concat([rows, _frame(shard, [pooled])], ignore_index=True)
