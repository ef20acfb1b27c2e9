"""Does ``torch.compile`` of a kernel's step help on CPU? (``gradmc bench --suite compile``)

For GWG on the RBM and lattice-Ising settings of the steps/s suites, the same kernel is timed eagerly and
as ``torch.compile(kernel.step)`` (inductor; the step counter becomes a dynamic int after its first
recompile) with :func:`gradmc.evaluation.timing.time_sampler`, after an untimed warm-up of 2 * REFRESH_EVERY + 2
steps that compiles every path (the cached step and the periodic refresh) and whose wall time is
recorded. The step holds Python-level logic (the cache check of :mod:`gradmc.core.incremental`,
generator calls, the finiteness check's host read), so dynamo splits it into several graphs.

Opt-in (not part of a plain ``make bench``): compiling takes tens of seconds and needs a C++ compiler;
without one the suite records "skipped: <reason>". The measurement decides whether gradmc offers a
compiled step: it does not, because on the reference machine the compiled step was slower (see the
README's benchmark section for the numbers).
"""

from __future__ import annotations

import time

import torch

from gradmc.core.incremental import REFRESH_EVERY
from gradmc.evaluation.timing import time_sampler
from gradmc.samplers.discrete.registry import make_sampler
from gradmc.seeding import make_generator, seed_from

__all__ = ["compile_suite"]


class _Compiled:
    """A kernel whose ``step`` is ``torch.compile``d; ``init`` stays eager."""

    def __init__(self, kernel):
        self.kernel, self.step = kernel, torch.compile(kernel.step)  # ints become dynamic after a recompile

    def init(self, x, log_prob, generator=None):
        return self.kernel.init(x, log_prob, generator)


def compile_suite(builders: dict, *, steps: int, repeats: int, warmup: int) -> dict | str:
    """Eager and compiled GWG steps/s per setting.

    Args:
        builders: setting name -> ``build(generator) -> (target, x0)`` (the steps/s suites' builders).
        steps, repeats, warmup: as :func:`~gradmc.evaluation.timing.time_sampler`.

    Returns:
        {setting: {"eager": row, "compiled": row, "compile_s": float, "speedup": compiled / eager}} with
        rows as ``time_sampler`` returns them (``steps_per_s`` the median), or "skipped: <reason>" when
        compilation fails (no compiler, unsupported platform).
    """
    out = {}
    for name, build in builders.items():
        gen = make_generator(seed_from("bench", "compile", name))
        target, x0 = build(gen)
        eager = time_sampler(make_sampler("GWG"), target, x0, gen, steps=steps, repeats=repeats, warmup=warmup)
        compiled = _Compiled(make_sampler("GWG"))
        start = time.perf_counter()
        try:
            state = compiled.init(x0, target)
            for _ in range(2 * REFRESH_EVERY + 2):  # compile every path: the cached step, the refresh
                state, _ = compiled.step(state, target, gen)
        except Exception as err:  # noqa: BLE001 -- any compiler failure means "not available here"
            return f"skipped: torch.compile failed ({type(err).__name__}: {str(err).splitlines()[0][:200]})"
        compile_s = time.perf_counter() - start
        row = time_sampler(compiled, target, x0, gen, steps=steps, repeats=repeats, warmup=warmup)
        out[name] = {"eager": eager, "compiled": row, "compile_s": compile_s,
                     "speedup": row["steps_per_s"] / eager["steps_per_s"],
                     "steps_per_s": row["steps_per_s"]}
    return out
