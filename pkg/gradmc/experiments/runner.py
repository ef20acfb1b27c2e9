"""Pieces every sampling experiment shares: a clock that times sampler steps only and counts their
cost, and the constructor of tidy metric frames (DESIGN.md "Results schema").

Non-finite proposals (``Info.nonfinite_proposals``, :mod:`gradmc.samplers.base`) never pass silently: the
clock totals them, every row carries the shard's running total in the ``nonfinite_proposals`` column, a
shard with any adds :meth:`StepClock.nonfinite_rows` (steps and chains affected), and
:func:`warn_nonfinite` (called by :func:`gradmc.experiments.standard.collect`) warns once per sampler."""

from __future__ import annotations

import time
import warnings

import numpy as np
import pandas as pd
import torch

from gradmc.evaluation.ess import ess, ess_discs_per_chain, ess_per_chain

__all__ = ["StepClock", "ROW_COLUMNS", "tidy_frame", "ess_rows", "NonFiniteProposalWarning", "warn_nonfinite",
           "NONFINITE_STEPS", "NONFINITE_CHAIN"]

#: Columns of a row tuple passed to :func:`tidy_frame` (experiment and target are added). The last,
#: ``nonfinite_proposals`` (the shard's running total of proposals rejected for a non-finite value, over steps and
#: chains), may be left off a row: it is then 0.
ROW_COLUMNS = ["sampler", "seed", "chain", "step", "metric", "value", "energy_evals", "grad_evals", "wall_time_s",
               "nonfinite_proposals"]
#: Metric of :meth:`StepClock.nonfinite_rows`: steps with at least one non-finite proposal (chain -1).
NONFINITE_STEPS = "nonfinite_steps"
#: Metric of :meth:`StepClock.nonfinite_rows`: one row per affected chain, its number of non-finite proposals.
NONFINITE_CHAIN = "nonfinite_chain"


class NonFiniteProposalWarning(UserWarning):
    """Proposals were rejected because the target gave NaN/+inf (or a non-finite gradient) there."""


class StepClock:
    """Runs sampler steps and accumulates sampler-only wall time and evaluation counts.

    The device is synchronised before each clock read (DESIGN: "measure sampler time only"), so
    metric computations between steps never count. Attributes: ``seconds`` (float), ``energy_evals``
    and ``grad_evals`` (cumulative ints, per chain-batch call as in Info), ``steps``; the non-finite proposals
    of ``Info.nonfinite_proposals`` are summed per chain on the device (no host read per step) and read by
    :attr:`nonfinite_proposals` and :meth:`nonfinite_rows`.
    """

    def __init__(self, device: str | torch.device = "cpu"):
        self._sync = torch.cuda.synchronize if torch.device(device).type == "cuda" else (lambda: None)
        self.seconds = 0.0
        self.energy_evals = 0
        self.grad_evals = 0
        self.steps = 0
        self._nonfinite = None  # (C,) int64 per-chain totals, on the device
        self._nonfinite_steps = None  # 0-dim int64: steps with any non-finite proposal

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
        self._count_nonfinite(getattr(info, "nonfinite_proposals", 0))
        return state, info

    def _count_nonfinite(self, counts) -> None:
        if not isinstance(counts, torch.Tensor):
            return  # the int 0 of a kernel without rejectable proposals
        any_bad = counts.amax().clamp(max=1)
        if self._nonfinite is None:
            self._nonfinite, self._nonfinite_steps = counts.clone(), any_bad
        else:
            self._nonfinite, self._nonfinite_steps = self._nonfinite + counts, self._nonfinite_steps + any_bad

    @property
    def nonfinite_proposals(self) -> int:
        """Proposals rejected for a non-finite value so far, summed over steps and chains (one host read)."""
        return 0 if self._nonfinite is None else int(self._nonfinite.sum())

    def nonfinite_rows(self, sampler: str, seed: int, chain_offset: int = 0) -> list[tuple]:
        """Rows (:data:`ROW_COLUMNS`) naming where non-finite proposals occurred: :data:`NONFINITE_STEPS` (chain -1,
        the number of steps with any) and one :data:`NONFINITE_CHAIN` row per affected chain (its count; chain
        indices shifted by ``chain_offset``, as in :func:`ess_rows`). Empty when there were none."""
        if self._nonfinite is None or self.nonfinite_proposals == 0:
            return []
        rows = [self.row(sampler, seed, -1, NONFINITE_STEPS, int(self._nonfinite_steps))]
        for c in self._nonfinite.nonzero().flatten().tolist():
            rows.append(self.row(sampler, seed, chain_offset + c, NONFINITE_CHAIN, int(self._nonfinite[c])))
        return rows

    def row(self, sampler: str, seed: int, chain: int, metric: str, value: float) -> tuple:
        """A row tuple (see :data:`ROW_COLUMNS`) at the current step with the cumulative costs."""
        return (sampler, seed, chain, self.steps, metric, float(value), self.energy_evals, self.grad_evals,
                self.seconds, self.nonfinite_proposals)


def tidy_frame(rows: list[tuple] | dict, experiment: str, target: str) -> pd.DataFrame:
    """Tidy metrics DataFrame from row tuples laid out as :data:`ROW_COLUMNS` (or a dict or frame of those
    columns), with fixed dtypes. A row without the last column, ``nonfinite_proposals``, gets 0."""
    if isinstance(rows, list):
        rows = [r if len(r) == len(ROW_COLUMNS) else (*r, 0) for r in rows]
    df = pd.DataFrame(rows, columns=ROW_COLUMNS)
    if "nonfinite_proposals" not in df or df["nonfinite_proposals"].isna().any():
        df["nonfinite_proposals"] = df.get("nonfinite_proposals", pd.Series(0, index=df.index)).fillna(0)
    df.insert(0, "target", target)
    df.insert(0, "experiment", experiment)
    return df.astype({"seed": "int64", "chain": "int64", "step": "int64", "energy_evals": "int64",
                      "grad_evals": "int64", "value": "float64", "wall_time_s": "float64",
                      "nonfinite_proposals": "int64"})


def warn_nonfinite(df: pd.DataFrame) -> None:
    """Warn once per sampler whose shards rejected proposals for a non-finite value (:class:`NonFiniteProposalWarning`).

    Reads the ``nonfinite_proposals`` column (a shard's running total: its maximum per (sampler, seed) is the
    shard's total) and the :meth:`StepClock.nonfinite_rows` metrics; the message names the sampler, the total,
    the steps affected (summed over seeds) and the chains affected (``seed:chain``). Frames without the
    column (older caches) are skipped.
    """
    if "nonfinite_proposals" not in df or not (df["nonfinite_proposals"].fillna(0) > 0).any():
        return
    for sampler, rows in df[df["nonfinite_proposals"].fillna(0) > 0].groupby("sampler", sort=True):
        total = int(rows.groupby("seed")["nonfinite_proposals"].max().sum())
        steps = int(rows.loc[rows["metric"] == NONFINITE_STEPS, "value"].sum())
        chains = rows.loc[rows["metric"] == NONFINITE_CHAIN, ["seed", "chain"]].drop_duplicates()
        listed = [f"{s}:{c}" for s, c in chains.itertuples(index=False)]
        shown = ", ".join(listed[:8]) + (", ..." if len(listed) > 8 else "")
        where = (f" in {steps} steps, {len(listed)} chains (seed:chain) [{shown}]" if listed
                 else " (steps and chains not recorded by this experiment)")
        warnings.warn(f"{sampler}: {total} proposals rejected because the target's log_prob was NaN/+inf or its "
                      f"gradient non-finite there{where}. The chains stayed at finite states, but the target "
                      "misbehaves in part of the space: check its parameters and numerical range",
                      NonFiniteProposalWarning, stacklevel=2)


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
    return rows + clock.nonfinite_rows(sampler, seed, chain_offset)
