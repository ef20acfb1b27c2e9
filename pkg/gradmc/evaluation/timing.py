"""Timing of sampler steps: warm-up, several timed repeats, median steps per second and its spread.

Only sampler time is measured (the device is synchronised before the clock is read); the first
``warmup`` steps are discarded so allocator and thread-pool start-up do not count. The spread over the
repeats (:func:`spread`) is reported with the median, so a reader sees how far one number can be
trusted on a shared machine. :func:`time_sampler` times with ``torch.utils.benchmark.Timer``;
:func:`time_interleaved` keeps its own clock: it alternates samplers run by run, and its steps feed the
sampler-cost experiment's metrics, which the Timer's extra untimed steps would change.
"""

from __future__ import annotations

import statistics
import time

import torch
from torch.utils.benchmark import Measurement, Timer

__all__ = ["spread", "time_interleaved", "time_sampler"]


def spread(values, prefix: str = "steps_per_s") -> dict:
    """Median and spread of repeated measurements, under keys starting with ``prefix``.

    Args:
        values: the measurement of each repeat (e.g. steps/s), at least one, all finite.
        prefix: key prefix, e.g. "steps_per_s" or "ms_per_estimate".

    Returns:
        {prefix: median, f"{prefix}_runs": list of floats in run order, f"{prefix}_min", f"{prefix}_max",
         f"{prefix}_rel_spread": (max - min) / median (0 for one run), "repeats": number of values}.

    Raises:
        ValueError: for no values, or a median that is not positive-finite (the relative spread would be
            meaningless).
    """
    runs = [float(v) for v in values]
    if not runs:
        raise ValueError("spread needs at least one value")
    median = statistics.median(runs)
    if not 0 < median < float("inf"):
        raise ValueError(f"spread needs a positive finite median, got {median} from {runs}")
    lo, hi = min(runs), max(runs)
    return {prefix: median, f"{prefix}_runs": runs, f"{prefix}_min": lo, f"{prefix}_max": hi,
            f"{prefix}_rel_spread": (hi - lo) / median, "repeats": len(runs)}


class _Chain:
    """A kernel's chain state, advanced one step per :meth:`step` (what the benchmark Timer's statement calls)."""

    def __init__(self, sampler, log_prob, x0: torch.Tensor, generator: torch.Generator):
        self.sampler, self.log_prob, self.generator = sampler, log_prob, generator
        self.state, self.info = sampler.init(x0, log_prob), None

    def step(self) -> None:
        self.state, self.info = self.sampler.step(self.state, self.log_prob, self.generator)


def time_sampler(sampler, log_prob, x0: torch.Tensor, generator: torch.Generator, *, steps: int = 100,
                 repeats: int = 5, warmup: int = 20) -> dict:
    """Median steps/s of ``sampler`` on ``log_prob`` from ``x0`` over ``repeats`` runs of ``steps`` steps.

    Each run is one ``torch.utils.benchmark.Timer.timeit(steps)`` (it synchronises CUDA, keeps torch's thread
    count, and runs a few untimed steps of its own first); the chains go on from run to run.

    Args:
        sampler: a kernel with ``init(x, log_prob)`` and ``step(state, log_prob, generator) -> (state, info)``.
        log_prob: the target.
        x0: (C, D) binary or (C, D, K) one-hot initial states of the C chains.
        generator: the random stream of the steps.
        steps: steps per timed run (>= 1). repeats: timed runs (>= 1; the benchmark uses >= 5).
        warmup: untimed steps before the first run (>= 0).

    Returns:
        {"steps_per_s": median over the runs (one step = one transition of all C chains),
         "steps_per_s_runs", "steps_per_s_min", "steps_per_s_max", "steps_per_s_rel_spread", "repeats"
         (see :func:`spread`), "ms_per_step": 1000 / median, "ms_per_step_iqr": interquartile range of the
         runs' ms per step (``Measurement.iqr``), "steps_per_run": steps, "energy_evals_per_step": int,
         "grad_evals_per_step": int (of the last step, per chain-batch call, as ``Info`` counts them),
         "acceptance_rate": mean over the runs of the last step's mean acceptance}

    Raises:
        ValueError: for steps or repeats < 1 or warmup < 0.
    """
    if min(steps, repeats) < 1 or warmup < 0:
        raise ValueError(f"steps and repeats must be >= 1 and warmup >= 0, got {steps}, {repeats}, {warmup}")
    chain = _Chain(sampler, log_prob, x0, generator)
    for _ in range(warmup):
        chain.step()
    timer = Timer("chain.step()", globals={"chain": chain}, num_threads=torch.get_num_threads())
    runs, accept = [], []
    for _ in range(repeats):
        runs.append(timer.timeit(steps))  # .mean: seconds per step
        accept.append(float(chain.info.acceptance_prob.mean()))
    row = spread([1.0 / run.mean for run in runs], "steps_per_s")
    return {**row, "ms_per_step": 1000.0 / row["steps_per_s"],
            "ms_per_step_iqr": 1000.0 * Measurement.merge(runs)[0].iqr, "steps_per_run": steps,
            "energy_evals_per_step": chain.info.energy_evals, "grad_evals_per_step": chain.info.grad_evals,
            "acceptance_rate": statistics.mean(accept)}


def time_interleaved(samplers: dict, log_prob, x0: torch.Tensor, generator: torch.Generator, *, steps: int = 100,
                     repeats: int = 5, warmup: int = 20) -> dict[str, dict]:
    """Time several samplers on one target in alternation: run r times each sampler once, the order rotated by r.

    Slow drifts of a shared machine (another process, thermal state) then hit every sampler alike, so the ratio of
    two samplers' times within one call is steadier than the ratio of two back-to-back :func:`time_sampler` calls.

    Args:
        samplers: name -> kernel (``init``/``step`` as in :func:`time_sampler`), in the base order.
        log_prob, x0, generator, steps, warmup: as :func:`time_sampler` (every sampler warms up first).
        repeats: timed runs per sampler (>= 1).

    Returns:
        name -> {"ms_per_step_runs": ms per step of each run (in run order), "energy_evals_per_step",
        "grad_evals_per_step", "acceptance_rate" (mean over the runs of the last step's mean acceptance)}.

    Raises:
        ValueError: no samplers, steps or repeats < 1, or warmup < 0.
    """
    if not samplers or min(steps, repeats) < 1 or warmup < 0:
        raise ValueError(f"need samplers, steps and repeats >= 1 and warmup >= 0; got {len(samplers)} samplers, "
                         f"{steps}, {repeats}, {warmup}")
    sync = torch.cuda.synchronize if x0.is_cuda else (lambda: None)
    names = list(samplers)
    states, infos = {}, {}
    for name in names:
        state = samplers[name].init(x0, log_prob)
        for _ in range(warmup):
            state, infos[name] = samplers[name].step(state, log_prob, generator)
        states[name] = state
    runs = {name: [] for name in names}
    accept = {name: [] for name in names}
    for r in range(repeats):
        for name in names[r % len(names):] + names[:r % len(names)]:
            kernel, state = samplers[name], states[name]
            sync()
            start = time.perf_counter()
            for _ in range(steps):
                state, info = kernel.step(state, log_prob, generator)
            sync()
            runs[name].append(1000.0 * (time.perf_counter() - start) / steps)
            states[name], infos[name] = state, info
            accept[name].append(float(info.acceptance_prob.mean()))
    return {name: {"ms_per_step_runs": runs[name], "energy_evals_per_step": infos[name].energy_evals,
                   "grad_evals_per_step": infos[name].grad_evals, "acceptance_rate": statistics.mean(accept[name])}
            for name in names}
