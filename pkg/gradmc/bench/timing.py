"""Timing of sampler steps: warm-up, several timed repeats, median steps per second.

Only sampler time is measured (the device is synchronised before the clock is read); the first
``warmup`` steps are discarded so allocator and thread-pool start-up do not count.
"""

from __future__ import annotations

import statistics
import time

import torch

__all__ = ["time_sampler"]


def time_sampler(sampler, log_prob, x0: torch.Tensor, generator: torch.Generator, *, steps: int = 100,
                 repeats: int = 5, warmup: int = 20) -> dict:
    """Median steps/s of ``sampler`` on ``log_prob`` from ``x0`` (C, ...) over ``repeats`` runs of ``steps``.

    Returns:
        {"steps_per_s": median, "steps_per_s_runs": [...], "ms_per_step": 1000 / median,
         "energy_evals_per_step": int, "grad_evals_per_step": int, "acceptance_rate": float}
    """
    if min(steps, repeats) < 1 or warmup < 0:
        raise ValueError(f"steps and repeats must be >= 1 and warmup >= 0, got {steps}, {repeats}, {warmup}")
    sync = torch.cuda.synchronize if x0.is_cuda else (lambda: None)
    state = sampler.init(x0, log_prob)
    info = None
    for _ in range(warmup):
        state, info = sampler.step(state, log_prob, generator)
    rates, accept = [], []
    for _ in range(repeats):
        sync()
        start = time.perf_counter()
        for _ in range(steps):
            state, info = sampler.step(state, log_prob, generator)
        sync()
        rates.append(steps / (time.perf_counter() - start))
        accept.append(float(info.acceptance_prob.mean()))
    median = statistics.median(rates)
    return {"steps_per_s": median, "steps_per_s_runs": rates, "ms_per_step": 1000.0 / median,
            "energy_evals_per_step": info.energy_evals, "grad_evals_per_step": info.grad_evals,
            "acceptance_rate": statistics.mean(accept)}
