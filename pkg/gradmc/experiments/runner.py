"""Pieces every sampling experiment shares: a clock that times sampler steps only and counts their
cost, and the constructor of tidy metric frames (DESIGN.md "Results schema")."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import torch

from gradmc.evaluation.ess import ess, ess_discs_per_chain, ess_per_chain

__all__ = ["StepClock", "ROW_COLUMNS", "tidy_frame", "ess_rows"]

#: Columns of a row tuple passed to :func:`tidy_frame` (experiment and target are added).
ROW_COLUMNS = ["sampler", "seed", "chain", "step", "metric", "value", "energy_evals", "grad_evals", "wall_time_s"]


class StepClock:
    """Runs sampler steps and accumulates sampler-only wall time and evaluation counts.

    The device is synchronised before each clock read (DESIGN: "measure sampler time only"), so
    metric computations between steps never count. Attributes: ``seconds`` (float), ``energy_evals``
    and ``grad_evals`` (cumulative ints, per chain-batch call as in Info), ``steps``.
    """

    def __init__(self, device: str | torch.device = "cpu"):
        self._sync = torch.cuda.synchronize if torch.device(device).type == "cuda" else (lambda: None)
        self.seconds = 0.0
        self.energy_evals = 0
        self.grad_evals = 0
        self.steps = 0

    def step(self, sampler, state, log_prob, generator: torch.Generator):
        """One timed ``sampler.step``; returns (state, info)."""
        self._sync()
        tic = time.perf_counter()
        state, info = sampler.step(state, log_prob, generator)
        self._sync()
        self.seconds += time.perf_counter() - tic
        self.energy_evals += info.energy_evals
        self.grad_evals += info.grad_evals
        self.steps += 1
        return state, info

    def row(self, sampler: str, seed: int, chain: int, metric: str, value: float) -> tuple:
        """A row tuple (see :data:`ROW_COLUMNS`) at the current step with the cumulative costs."""
        return (sampler, seed, chain, self.steps, metric, float(value), self.energy_evals, self.grad_evals,
                self.seconds)


def tidy_frame(rows: list[tuple] | dict, experiment: str, target: str) -> pd.DataFrame:
    """Tidy metrics DataFrame from row tuples laid out as :data:`ROW_COLUMNS` (or a dict or frame of those
    columns), with fixed dtypes."""
    df = pd.DataFrame(rows, columns=ROW_COLUMNS)
    df.insert(0, "target", target)
    df.insert(0, "experiment", experiment)
    return df.astype({"seed": "int64", "chain": "int64", "step": "int64", "energy_evals": "int64",
                      "grad_evals": "int64", "value": "float64", "wall_time_s": "float64"})


def ess_rows(clock: StepClock, stat: torch.Tensor, accept_sum: torch.Tensor, *, sampler: str, seed: int,
             burn_in_fraction: float, chain_offset: int = 0, pooled: str | None = "ess_all_chains") -> list[tuple]:
    """ESS rows of a scalar statistic recorded every step (the GWG paper's Hamming-distance statistic).

    Args:
        clock: the run's clock (its step count is T, its time and costs go into every row).
        stat: (T + 1, C) statistic per step (row 0 = initial state) and chain.
        accept_sum: (C,) summed acceptance probabilities over the T steps.
        burn_in_fraction: leading fraction of the T steps dropped before ESS.
        chain_offset: global index of this shard's first chain (chunked shards).
        pooled: metric name of the ESS over all C chains together (chain = -1); None: no pooled row.

    Returns:
        Row tuples (:data:`ROW_COLUMNS`): per chain ``ess``, ``ess_per_second`` (sampler time only),
        ``ess_per_energy_eval``, ``acceptance_rate`` and ``ess_discs`` (the DISCS benchmark's protocol:
        the second half of all T steps, whatever ``burn_in_fraction``, NaN set to 1;
        :func:`~gradmc.evaluation.ess.ess_discs_per_chain`; per second / per evaluation from the row's
        ``wall_time_s`` / ``energy_evals``); then the pooled ESS. ``ess`` is ArviZ's rank-normalised bulk
        ESS (:mod:`gradmc.evaluation.ess`).
    """
    T = clock.steps
    burn = int(burn_in_fraction * T)
    kept = stat[burn + 1:].T.cpu().numpy().astype(np.float64)  # (C, T - burn)
    per_chain = ess_per_chain(kept)  # (C,)
    discs = ess_discs_per_chain(stat[1:].T.cpu().numpy().astype(np.float64))  # (C,) second half of the T steps
    acceptance = (accept_sum / max(T, 1)).cpu().numpy()
    rows = []
    for c in range(kept.shape[0]):
        for metric, value in (("ess", per_chain[c]), ("ess_per_second", per_chain[c] / clock.seconds),
                              ("ess_per_energy_eval", per_chain[c] / max(clock.energy_evals, 1)),
                              ("acceptance_rate", acceptance[c]), ("ess_discs", discs[c])):
            rows.append(clock.row(sampler, seed, chain_offset + c, metric, value))
    if pooled is not None:
        rows.append(clock.row(sampler, seed, -1, pooled, ess(kept)))
    return rows
