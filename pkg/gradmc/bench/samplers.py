"""Sampler throughput benchmark (issue 3): steps/s on the RBM and lattice-Ising settings of the GWG paper.

Settings (fixed, so numbers compare across commits and with the authors' implementation measured on
the same machine: GWG 160 steps/s on the RBM, 89 steps/s on the Ising model):
- RBM 784 x 500, W ~ N(0, 0.1^2), zero biases, 100 chains: GWG, Gibbs-1, Gibbs-2, HB-10-1, GWG-3,
  exact block Gibbs.
- 40 x 40 cyclic lattice Ising, theta = 0.25, 32 chains: GWG, Gibbs-1.
- Kernel HMC: one KMC-finite iteration and one GPC estimate (see :mod:`gradmc.bench.kmc`).
All with ``torch.set_num_threads(threads)`` (2 on the reference machine) on CPU.
"""

from __future__ import annotations

import json
import os
import platform
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import torch

from gradmc import __version__
from gradmc.atomic import atomic_path
from gradmc.bench.timing import time_sampler
from gradmc.samplers.discrete.registry import make_sampler
from gradmc.seeding import make_generator, seed_from
from gradmc.targets.ising import LatticeIsing
from gradmc.targets.rbm import RBM

__all__ = ["SUITES", "run_benchmark"]


def _rbm_suite(generator) -> tuple[object, torch.Tensor]:
    rbm = RBM(784, 500, weight_std=0.1, generator=generator).requires_grad_(False)
    x0 = torch.bernoulli(torch.full((100, 784), 0.5), generator=generator)
    return rbm, x0


def _ising_suite(generator) -> tuple[object, torch.Tensor]:
    target = LatticeIsing(side=40, theta=0.25)
    x0 = torch.bernoulli(torch.full((32, 1600), 0.5), generator=generator)
    return target, x0


#: suite name -> (builder, sampler names)
SUITES: dict[str, tuple[Callable, tuple[str, ...]]] = {
    "rbm_784x500_100chains": (_rbm_suite, ("GWG", "Gibbs-1", "Gibbs-2", "HB-10-1", "GWG-3", "BlockGibbs")),
    "ising_40x40_theta0.25_32chains": (_ising_suite, ("GWG", "Gibbs-1")),
}


def run_benchmark(out_path: str | Path, *, threads: int = 2, steps: int = 100, repeats: int = 5,
                  progress=print) -> dict:
    """Time every (suite, sampler) pair; write the results as JSON to ``out_path`` atomically; return them."""
    torch.set_num_threads(threads)
    results: dict = {
        "created_utc": datetime.now(UTC).isoformat(timespec="seconds"),
        "gradmc_version": __version__, "torch_version": torch.__version__, "threads": threads,
        "cpu": platform.processor() or platform.machine(), "cpu_count": os.cpu_count(),
        "steps_per_run": steps, "repeats": repeats, "suites": {},
    }
    for suite, (build, names) in SUITES.items():
        generator = make_generator(seed_from("bench", suite))
        target, x0 = build(generator)
        results["suites"][suite] = {}
        for name in names:
            row = time_sampler(make_sampler(name), target, x0, generator, steps=steps, repeats=repeats)
            results["suites"][suite][name] = row
            if progress is not None:
                progress(f"[bench] {suite} {name}: {row['steps_per_s']:.1f} steps/s "
                         f"({row['ms_per_step']:.2f} ms/step)")
    from gradmc.bench.kmc import gpc_estimate_suite, kmc_finite_suite

    kmc = kmc_finite_suite(steps=max(steps // 5, 5), repeats=repeats)
    results["suites"]["kmc_finite_banana8_m1000_L10-100"] = kmc
    for key, row in kmc.items():
        if progress is not None:
            progress(f"[bench] KMC finite banana {key}: {row['ms_per_iteration']:.2f} ms/iteration, "
                     f"{row['iterations_per_s']:.0f} chain-iterations/s")
    gpc = gpc_estimate_suite(repeats=repeats)
    results["suites"]["gpc_glass_estimate_100samples"] = gpc if gpc is not None else "skipped: glass.data missing"
    for key, row in (gpc or {}).items():
        if progress is not None:
            progress(f"[bench] GPC estimate {key}: {row['ms_per_estimate']:.1f} ms")
    if gpc is None and progress is not None:
        progress("[bench] GPC estimate skipped: glass/glass.data not in the data folder (GRADMC_DATA_DIR)")
    with atomic_path(out_path) as tmp:
        tmp.write_text(json.dumps(results, indent=2) + "\n")
    return results
