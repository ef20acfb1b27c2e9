"""Kernel HMC paper Fig. 4 left (EXPERIMENTS.md B3): pseudo-marginal GP classification on UCI Glass.

Target: as :mod:`gradmc.experiments.kmc_gpc_benchmark` (settings from ``kmc_gpc.benchmark``); every
likelihood is an unbiased importance-sampling estimate, the current state's estimate is recycled.

Samplers (one shard per (sampler, run), one chain each, ``num_iterations`` steps from ``start``, no
burn-in removed, as the paper's 6,000 iterations):
- ``KMC``: KMC lite (eq. 7) on a fixed history of ``num_history`` points, (sigma, lambda) chosen by
  ``cv_folds``-fold cross-validated score matching (:func:`cross_validate_lite`) over the grids
  ``kmc_sigmas`` x ``kmc_lambdas``; L ~ U{1..10}, eps ~ U[step_size_range] per step, standard Gaussian
  momentum (:class:`KMC` with ``pseudo_marginal=True``). The surrogate is never refitted. The paper's
  eps ~ U[0.01, 0.1] is for the authors' theta' = log ARD weight = -theta / 2 (+ const); unit-mass
  leapfrog with eps in theta' is exactly unit-mass leapfrog with 2 eps in theta, hence [0.02, 0.2] here.
- ``KAMH``: KAMH proposal (:class:`KAMH`, Hastings-corrected) on the same history inside
  :class:`PseudoMarginalMH`; kernel length scale by the median heuristic (2 sigma^2 = median squared
  distance of the history), isotropic part ``kamh_gamma``, and nu adapted by Robbins-Monro towards
  ``target_acceptance`` at every step (vanishing adaptation, step size (t + 1)^-0.6).
- ``RW``: pseudo-marginal isotropic random walk, scale adapted the same way.
History (``history``): ``benchmark``: ``num_history`` points drawn without replacement from the
benchmark samples (the paper: "1000 samples from the chain history", a sub-sample of an earlier chain;
we reuse the benchmark chains as that earlier chain), the same points for KMC and KAMH in one run;
``pilot``: ``num_history`` evenly spaced states of a separate adaptive pseudo-marginal RW pilot chain of
``pilot_iterations`` steps from ``start`` (its estimates are counted in ``likelihood_estimates``).

Metrics (tidy rows, seed = run, chain 0; ``energy_evals`` = likelihood estimates so far, the initial one
included; ``wall_time_s`` = sampler time so far, CV and history excluded):
- ``mmd2`` at step = t for t in the grid mmd_every, 2 mmd_every, ..., num_iterations: the biased
  V-statistic of MMD^2 (what the paper plots) between the first t states and the benchmark samples,
  kernel (1 + <theta, theta'>)^3 (:func:`gradmc.evaluation.mmd.polynomial_kernel`), computed blockwise
  (:func:`gradmc.evaluation.mmd.mmd2_prefixes`).
- at step = num_iterations: ``min_ess`` (minimum over the 9 coordinates of ArviZ's rank-normalised bulk
  ESS of all states of the chain), ``acceptance_rate``, ``likelihood_estimates``, ``benchmark_size``,
  and for KMC the chosen ``kmc_sigma`` and ``kmc_lambda``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from gradmc.data.glass import load_glass
from gradmc.data.registry import data_dir as default_data_dir
from gradmc.distributed.shared import load_once
from gradmc.errors import ConfigError
from gradmc.evaluation.ess import ess
from gradmc.evaluation.mmd import mmd2_prefixes
from gradmc.experiments import kmc_gpc_benchmark as bench
from gradmc.experiments.runner import StepClock, tidy_frame
from gradmc.samplers.continuous import KAMH, KMC, GaussianRandomWalkProposal, PseudoMarginalMH, adapt_log_scale
from gradmc.seeding import make_generator, seed_from
from gradmc.surrogates import cross_validate_lite, fit_lite

__all__ = ["EXPERIMENT", "META", "Shard", "shards", "run"]

EXPERIMENT = "kmc_gpc"
META = {
    # what `gradmc plan` shortens and how it counts units (gradmc.registry)
    "plan": {"unit": "pseudo-marginal MH iteration (one chain)", "units": "num_iterations",
             "lengths": {"kmc_gpc.num_iterations": [20, 40]}, "schedule": {"kmc_gpc.mmd_every": 10},
             "classes": ["sampler"]},
    "cpu_only": True,  # one-row chains: launch-bound on a GPU (gradmc.registry)
    "title": "KMC Fig. 4 left: GP classification on Glass, KMC vs KAMH and RW (MMD, min ESS)",
    "message": "GPC sampling: {samplers} x runs {runs}, {num_iterations} iterations each, MMD to the benchmark, "
               "on Ray",
    "sort_by": ["sampler", "seed", "metric", "step"],
    "figure": "kmc_fig4_gpc",
    "category": "Kernel HMC paper",
    "inputs": {"benchmark": "kmc_gpc/benchmark.parquet"},
}


@dataclass(frozen=True)
class Shard:
    """One run of one sampler; paths are absolute (benchmark file, data folder)."""

    sampler: str
    run: int
    benchmark_path: str
    data_dir: str
    num_iterations: int
    mmd_every: int
    start: str
    history: str
    num_history: int
    pilot_iterations: int
    step_size_range: tuple[float, float]
    num_steps_range: tuple[int, int]
    kmc_sigmas: tuple[float, ...]
    kmc_lambdas: tuple[float, ...]
    cv_folds: int
    kamh_gamma: float
    initial_scale: float
    target_acceptance: float
    num_importance_samples: int
    prior_var: float


def shards(config: dict, inputs: dict[str, str]) -> list[Shard]:
    """One shard per (sampler, run) of ``config['kmc_gpc']``; ``inputs['benchmark']`` is the benchmark file.
    Samplers, history and start are checked by the schema.

    Raises:
        ValueError: an ill-shaped benchmark file (names it); fewer benchmark samples than ``num_history``
            (history "benchmark"); pilot_iterations < 1 (history "pilot"); mmd_every not in [1, num_iterations].
        FileNotFoundError / KeyError: the benchmark file (or the ``benchmark`` input) or the Glass file is missing.
    """
    spec, target_spec = config["kmc_gpc"], config["kmc_gpc"]["benchmark"]
    if "benchmark" not in inputs:
        raise KeyError("kmc_gpc needs the input 'benchmark' (--benchmark PATH)")
    history, start = spec["history"], spec["start"]
    T, every, n = int(spec["num_iterations"]), int(spec["mmd_every"]), int(spec["num_history"])
    if not 1 <= every <= T or T < 4:
        raise ConfigError(f"kmc_gpc needs num_iterations >= 4 and 1 <= mmd_every <= num_iterations, got {T}, {every}")
    path = str(Path(inputs["benchmark"]).resolve())
    size = bench.load_benchmark(path).shape[0]
    if history == "benchmark" and n > size:
        raise ConfigError(f"kmc_gpc.num_history = {n} but the benchmark file {path} holds only {size} samples")
    if history == "pilot" and int(spec["pilot_iterations"]) < 1:
        raise ConfigError("kmc_gpc.history 'pilot' needs pilot_iterations >= 1")
    folder = str(default_data_dir().resolve())
    load_glass(folder)  # fail before any shard starts
    common = dict(benchmark_path=path, data_dir=folder, num_iterations=T, mmd_every=every, start=start,
                  history=history, num_history=n, pilot_iterations=int(spec["pilot_iterations"]),
                  step_size_range=tuple(float(e) for e in spec["step_size_range"]),
                  num_steps_range=tuple(int(s) for s in spec["num_steps_range"]),
                  kmc_sigmas=tuple(float(s) for s in spec["kmc_sigmas"]),
                  kmc_lambdas=tuple(float(v) for v in spec["kmc_lambdas"]), cv_folds=int(spec["cv_folds"]),
                  kamh_gamma=float(spec["kamh_gamma"]), initial_scale=float(spec["initial_scale"]),
                  target_acceptance=float(spec["target_acceptance"]),
                  num_importance_samples=int(target_spec["num_importance_samples"]),
                  prior_var=float(target_spec["prior_var"]))
    return [Shard(sampler=name, run=int(r), **common) for name in spec["samplers"] for r in spec["runs"]]


@dataclass(frozen=True)
class _KAMHProposal:
    """KAMH as a pseudo-marginal proposal: (x, generator) -> (x' ~ N(x, Sigma_x), log q(x|x') - log q(x'|x))."""

    kamh: KAMH

    def __call__(self, x: torch.Tensor, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        chol = torch.linalg.cholesky(self.kamh.covariance(x))  # (C, d, d)
        noise = torch.randn(x.shape, generator=generator, dtype=x.dtype)
        x_new = x + (chol @ noise[..., None]).squeeze(-1)
        return x_new, self.kamh.log_q_ratio(x, x_new, chol)


def _adaptive_chain(shard: Shard, target, x0, generator, num_steps: int, make_proposal, clock=None, on_step=None):
    """num_steps of pseudo-marginal MH whose proposal scale (make_proposal(scale)) is adapted every step."""
    log_scale = torch.full((1,), math.log(shard.initial_scale), dtype=torch.float64)
    kernel = PseudoMarginalMH(make_proposal(shard.initial_scale))
    state = kernel.init(x0, target.log_prob, generator)
    states = []
    for t in range(num_steps):
        state, info = clock.step(kernel, state, target.log_prob, generator) if clock else \
            kernel.step(state, target.log_prob, generator)
        log_scale = adapt_log_scale(log_scale, info.acceptance_prob, t, shard.target_acceptance)
        kernel = PseudoMarginalMH(make_proposal(float(log_scale.exp()[0])))
        states.append(state.x[0])
        if on_step:
            on_step(info)
    return torch.stack(states)


def run(shard: Shard) -> pd.DataFrame:
    """Run one (sampler, run) shard: history, tuning, num_iterations steps; tidy rows (module docstring). CPU only.

    Raises:
        FileNotFoundError / ValueError: missing or bad Glass or benchmark file.
    """
    target = bench.make_target(shard.data_dir, shard.num_importance_samples, shard.prior_var)
    reference = load_once(bench.load_benchmark, shard.benchmark_path)  # (M, 9), once per worker: read-only
    x0 = bench.start_point(shard.start, shard.prior_var, make_generator(seed_from(EXPERIMENT, "start", shard.run)))
    generator = make_generator(seed_from(EXPERIMENT, shard.sampler, shard.run))
    extra_estimates, extra_rows, history = 0, [], None
    if shard.sampler != "RW":
        hist_gen = make_generator(seed_from(EXPERIMENT, "history", shard.run))
        if shard.history == "benchmark":
            history = reference[torch.randperm(reference.shape[0], generator=hist_gen)[:shard.num_history]]
        else:
            pilot = _adaptive_chain(shard, target, x0, hist_gen, shard.pilot_iterations, GaussianRandomWalkProposal)
            history = pilot[torch.linspace(0, shard.pilot_iterations - 1, shard.num_history).round().long()]
            extra_estimates = shard.pilot_iterations + 1
    clock, T = StepClock("cpu"), shard.num_iterations
    grid = list(range(shard.mmd_every, T + 1, shard.mmd_every)) + ([T] if T % shard.mmd_every else [])
    grid_set, costs, acc = set(grid), {}, [0.0]

    def record(info) -> None:
        acc[0] += float(info.acceptance_prob[0])
        if clock.steps in grid_set:
            costs[clock.steps] = (clock.energy_evals + 1 + extra_estimates, clock.seconds)

    if shard.sampler == "KMC":
        cv = cross_validate_lite(history, shard.kmc_sigmas, shard.kmc_lambdas, shard.cv_folds,
                                 make_generator(seed_from(EXPERIMENT, "cv", shard.run)))
        kernel = KMC(fit_lite(history, cv.best_width, cv.best_lambda), shard.step_size_range, shard.num_steps_range,
                     pseudo_marginal=True)
        extra_rows = [("kmc_sigma", cv.best_width), ("kmc_lambda", cv.best_lambda)]
        state, states = kernel.init(x0, target.log_prob, generator), []
        for _ in range(T):
            state, info = clock.step(kernel, state, target.log_prob, generator)
            states.append(state.x[0])
            record(info)
        states = torch.stack(states)
    elif shard.sampler == "KAMH":
        sigma = math.sqrt(0.5 * float(torch.pdist(history).pow(2).median()))
        kamh = KAMH(history, sigma, shard.kamh_gamma, shard.initial_scale)
        states = _adaptive_chain(shard, target, x0, generator, T, lambda nu: _KAMHProposal(replace(kamh, nu=nu)),
                                 clock, record)
    else:
        states = _adaptive_chain(shard, target, x0, generator, T, GaussianRandomWalkProposal, clock, record)
    arr = states.numpy()
    min_ess = float(np.min([ess(arr[None, :, d]) for d in range(arr.shape[1])]))  # NaN if a coordinate is stuck
    rows = [(shard.sampler, shard.run, 0, t, "mmd2", v, costs[t][0], 0, costs[t][1])
            for t, v in zip(grid, mmd2_prefixes(states, reference, grid), strict=True)]
    final = [("min_ess", min_ess), ("acceptance_rate", acc[0] / T),
             ("likelihood_estimates", costs[T][0]), ("benchmark_size", reference.shape[0]), *extra_rows]
    rows += [(shard.sampler, shard.run, 0, T, m, float(v), costs[T][0], 0, costs[T][1]) for m, v in final]
    rows += clock.nonfinite_rows(shard.sampler, shard.run)
    return tidy_frame(rows, EXPERIMENT, bench.TARGET)

