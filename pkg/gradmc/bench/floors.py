"""Where a sampler step's time goes (opt-in: ``gradmc bench --suite floors``): its steps/s beside two floors.

For each setting (the RBM and Ising suites' targets at their sizes) and each sampler:

- ``ms_per_step``: the step at full size (:func:`~gradmc.evaluation.timing.time_sampler`);
- ``evaluation_ms``: the one-evaluation floor, what a gradient kernel cannot avoid: f and grad f at a
  state one flip away, from the cached evaluation (the target's ``eval_flips``, the call GWG makes once a step);
- ``fixed_ms``: the same sampler's step on a tiny instance of the same target (2 chains, a handful of sites),
  where the arithmetic is negligible: the cost of dispatching the step's tensor operations, whatever the size;
- ``ops_per_step``: the tensor operations (top-level ``aten::`` calls, counted by ``torch.profiler``) of one
  step of the tiny instance;
- ``rest_ms``: ms_per_step - evaluation_ms - fixed_ms, the size-dependent work beyond the evaluation
  (the proposal's passes over the (C, D) logits, the draw). The dispatch of the evaluation's own operations
  is in both evaluation_ms and fixed_ms, so this is a lower bound, negative when those dominate.

Operation counts are those of the tiny instance; at full size a few branches differ (e.g.
:class:`~gradmc.core.incremental.RowChoice` copies rows instead of a ``torch.where``).

So a step's gap to the one-evaluation floor splits into fixed dispatch (fewer operations) and work that
grows with the size (fewer passes over the data).
"""

from __future__ import annotations

import contextlib
import os
import statistics
import sys
import timeit
from collections.abc import Callable, Iterator, Sequence

import torch

from gradmc.core.incremental import current_evaluation, eval_flips
from gradmc.evaluation.timing import time_sampler
from gradmc.samplers.discrete.registry import make_sampler
from gradmc.seeding import make_generator, seed_from

__all__ = ["FLOORS_SAMPLERS", "count_ops", "evaluation_floor_ms", "floors_suite"]

#: the samplers of the suite: GWG, the two later gradient kernels that trail DISCS most, and PAS without replacement
FLOORS_SAMPLERS = ("GWG", "PAS-3", "PAS-3-wor", "DMALA")


def count_ops(sampler, log_prob, x0: torch.Tensor, generator: torch.Generator, steps: int = 5) -> float:
    """Mean top-level ``aten::`` operations per ``sampler.step`` (after 3 untimed steps), counted by
    ``torch.profiler`` on the CPU.

    Args:
        sampler: a kernel with ``init`` and ``step``; log_prob: its target; x0: (C, ...) initial states.
        steps: profiled steps (>= 1).

    Returns:
        Operations per step (calls made inside another ``aten::`` call are not counted again).

    Raises:
        ValueError: steps < 1.
    """
    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    from torch.profiler import ProfilerActivity, profile

    state = sampler.init(x0, log_prob)
    for _ in range(3):
        state, _ = sampler.step(state, log_prob, generator)
    prof = profile(activities=[ProfilerActivity.CPU])
    with _quiet_stderr():
        prof.start()
    try:
        for _ in range(steps):
            state, _ = sampler.step(state, log_prob, generator)
    finally:
        with _quiet_stderr():
            prof.stop()

    def is_op(event) -> bool:
        return event.name.startswith("aten::")

    top = [e for e in prof.events() if is_op(e) and (e.cpu_parent is None or not is_op(e.cpu_parent))]
    return len(top) / steps


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """Standard error (file descriptor 2) to /dev/null around a profiler's start or stop: its C++ side prints a
    line at each (``profiler_start``, ``profiler_stop``). Only those calls run inside; fd 2 is restored after."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
            yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


def evaluation_floor_ms(log_prob, x0: torch.Tensor, generator: torch.Generator, repeats: int = 5,
                        number: int = 50) -> float:
    """Median ms of one ``eval_flips`` with the gradient: f and grad f at x0 (C, D) with one random bit per
    chain flipped, from the cached evaluation at x0 (the one evaluation a GWG step makes).

    Raises:
        ValueError: repeats or number < 1.
    """
    if min(repeats, number) < 1:
        raise ValueError(f"repeats and number must be >= 1, got {repeats}, {number}")
    kernel = make_sampler("GWG")
    state = kernel.init(x0, log_prob)
    ev, _, _ = current_evaluation(state, log_prob, state.x, grad=True)
    sites = torch.randint(0, x0.shape[1], (x0.shape[0], 1), generator=generator)
    mask = torch.ones_like(sites, dtype=torch.bool)

    def once():
        eval_flips(log_prob, state.x, ev, sites, mask, grad=True)

    once()
    return 1000.0 * statistics.median(timeit.repeat(once, number=number, repeat=repeats)) / number


def floors_suite(settings: dict[str, tuple[Callable, Callable]], *, samplers: Sequence[str] = FLOORS_SAMPLERS,
                 steps: int, repeats: int, warmup: int) -> dict:
    """The rows of the floors suite (module docstring).

    Args:
        settings: name -> (``build(generator) -> (target, x0)`` at full size, the same for the tiny instance).
        samplers: names for :func:`~gradmc.samplers.discrete.make_sampler`.
        steps, repeats, warmup: as :func:`~gradmc.evaluation.timing.time_sampler` (the tiny instance takes
            10 times the steps, its steps being short).

    Returns:
        {"<setting> <sampler>": time_sampler's row plus "evaluation_ms", "fixed_ms", "ops_per_step",
        "rest_ms"}; the row's ``steps_per_s`` is the full-size one.
    """
    out = {}
    for setting, (build, build_tiny) in settings.items():
        gen = make_generator(seed_from("bench", "floors", setting))
        target, x0 = build(gen)
        tiny, tiny_x0 = build_tiny(gen)
        floor = evaluation_floor_ms(target, x0, gen, repeats=repeats)
        for name in samplers:
            row = time_sampler(make_sampler(name), target, x0, gen, steps=steps, repeats=repeats, warmup=warmup)
            small = time_sampler(make_sampler(name), tiny, tiny_x0, gen, steps=10 * steps, repeats=repeats,
                                 warmup=warmup)
            ops = count_ops(make_sampler(name), tiny, tiny_x0, gen)
            out[f"{setting} {name}"] = {**row, "evaluation_ms": floor, "fixed_ms": small["ms_per_step"],
                                        "ops_per_step": ops,
                                        "rest_ms": row["ms_per_step"] - floor - small["ms_per_step"]}
    return out
