"""Kernel HMC paper Fig. 4 right (EXPERIMENTS.md B4): ABC posterior of a 10-D skew normal's location.

Target: :class:`gradmc.targets.abc_skew_normal.ABCSkewNormalPosterior` (theta_true = alpha = 10 * 1, d = 10,
summary = mean of 10 draws, prior N(0, 25 I), Gaussian ABC kernel eps = 0.55, M = 10 simulated summaries
per unbiased likelihood estimate). CPU only, whatever ``device`` says: the chains are one-row,
launch-overhead-bound computations and the target has no device argument. Every chain starts at
theta_true (within ~1 posterior sd of the mode: burn-in is tuning, not search). A "simulation" is one
simulated summary (one data set of 10 draws).

Samplers:
- ``RW``: pseudo-marginal random walk (:class:`PseudoMarginalMH`, isotropic Gaussian proposal), log scale
  adapted towards ``rw_target_acceptance`` by :func:`adapt_log_scale` in burn-in, then frozen.
- ``KMC``: KMC lite (eq. 7), L = ``num_steps``, eps ~ U[step_size_range] per iteration, pseudo-marginal
  MH recycling the current estimate (one estimate = M simulations per iteration). History: the burn-in is
  the adaptive pseudo-marginal RW above. Its distinct states (rejections repeat states; duplicates would
  sit in a training and a held-out fold at once) choose (sigma, lambda) once by k-fold score-matching CV
  (:func:`cross_validate_lite`) and give the first surrogate. ``adaptation: vanishing`` (Alg. 1): after
  kept iteration t the surrogate is refitted with probability a_t = 1 / sqrt(t + 1) on at most
  ``kmc_history_size`` distinct states drawn uniformly from the whole history (burn-in + kept), same
  (sigma, lambda); kept iterations include this adaptation (exact as a_t -> 0). ``fixed``: no refit.
  (Why the width grid is 10-100: the ``kmc_sigma_grid`` description of the config schema.)
- ``HABC``: Meeds et al. (2015): synthetic likelihood N(y; mu_S, Sigma_S + eps^2 I) (the ABC kernel's
  eps^2 as ``jitter``, as in Meeds & Welling's SL-ABC; it also keeps Sigma_S non-singular for S = 10
  < d + 1), SPSA gradients, sticky random numbers, no MH step. Own step sizes ``habc_step_size_range``
  (KMC's diverge without friction: the schema's description).
  Cost: 2 R (L + 1) synthetic likelihoods of S simulations each per iteration. Its runs are batched as
  independent chains of one shard (own momenta, step sizes, SPSA directions and simulator noise per row).

Reference (the figure's black line): the EXACT ABC posterior marginal of theta_1, a finite Gaussian
mixture in closed form (:func:`gradmc.targets.abc_reference.reference_marginal`).

Tidy rows (seed = run, chain 0; float column ``x``: NaN except for ``density_theta1``):
- ``theta1``: step = kept iteration 1..T, theta_1 of the chain (cumulative evals and sampler seconds).
- ``acf_theta1``: step = lag 0..max_lag, ArviZ FFT autocorrelation of the kept theta_1 (NaN if constant).
- step = B + T: ``acceptance_rate`` (kept; HABC 1), ``burn_in_acceptance``,
  ``ess_theta1`` (ArviZ rank-normalised bulk ESS), ``mean_theta1``, ``std_theta1``,
  ``simulations_per_iteration``, ``likelihood_estimates_per_iteration`` (HABC: synthetic likelihoods);
  RW and KMC ``proposal_scale`` (burn-in RW); KMC ``surrogate_refits``, ``surrogate_sigma``, ``surrogate_lambda``.
- sampler ``reference`` (seed 0, chain -1): ``mean_theta1``, ``std_theta1`` (step 0) and
  ``density_theta1`` (step = grid index, x = theta_1 on a grid of mean +- 6 sd).
energy_evals = likelihood estimates (HABC: synthetic likelihoods) so far, burn-in included, per chain
(HABC's chains run batched: each chain's count equals the batch's). wall_time_s = sampler time only
(surrogate fits excluded); for batched HABC chains it is the time of the whole batch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
import torch

from gradmc.errors import ConfigError
from gradmc.evaluation.autocorrelation import autocorrelation
from gradmc.evaluation.ess import ess
from gradmc.experiments.runner import StepClock, tidy_frame
from gradmc.samplers.continuous import HABC, KMC, GaussianRandomWalkProposal, PseudoMarginalMH, adapt_log_scale
from gradmc.samplers.continuous.adaptation import should_adapt
from gradmc.seeding import make_generator, seed_from
from gradmc.surrogates import fit_lite_on_history
from gradmc.targets.abc_reference import reference_marginal
from gradmc.targets.abc_skew_normal import ABCSkewNormalPosterior

__all__ = ["EXPERIMENT", "META", "TARGET", "Shard", "shards", "run"]

EXPERIMENT = "kmc_abc"
META = {
    # what `gradmc plan` shortens and how it counts units (gradmc.registry)
    "plan": {"unit": "MCMC iteration (burn-in or kept)", "units": ["num_burn_in", "num_iterations"],
             "lengths": {"kmc_abc.num_burn_in": [20, 40], "kmc_abc.num_iterations": [30, 60]},
             "schedule": {"kmc_abc.max_lag": 5}, "classes": ["sampler"]},
    "cpu_only": True,  # one-row chains: launch-bound on a GPU (gradmc.registry)
    "title": "KMC Fig. 4 right: ABC skew normal, KMC lite vs pseudo-marginal RW and HABC",
    "message": "ABC skew normal: {samplers}, runs {runs}, {num_burn_in} + {num_iterations} iterations on Ray",
    "sort_by": ["sampler", "seed", "metric", "step"],
    "figure": "kmc_fig4_abc",
    "category": "Kernel HMC paper",
}
TARGET = "abc_skew_normal"
_TARGET_KEYS = ("d", "alpha_value", "num_obs", "epsilon", "num_sims", "prior_var", "data_seed")  # passed as they are
_INT_KEYS = ("num_burn_in", "num_iterations", "num_steps", "kmc_history_size", "kmc_cv_folds", "habc_num_sims",
             "habc_num_perturbations", "max_lag")
_RANGE_KEYS = ("step_size_range", "kmc_sigma_grid", "kmc_lambda_grid", "habc_step_size_range")  # tuples of floats
_FLOAT_KEYS = ("habc_perturbation", "rw_target_acceptance", "rw_initial_scale")


@dataclass(frozen=True)
class Shard:
    """Chains of one sampler, one per run in ``runs`` (one run for KMC and RW; HABC batches its runs).

    ``sampler = "reference"``: the exact marginal, no chain.
    """

    sampler: str
    runs: tuple[int, ...]
    num_burn_in: int
    num_iterations: int
    step_size_range: tuple[float, float]
    num_steps: int
    kmc_history_size: int
    kmc_sigma_grid: tuple[float, ...]
    kmc_lambda_grid: tuple[float, ...]
    kmc_cv_folds: int
    adaptation: str
    habc_step_size_range: tuple[float, float]
    habc_num_sims: int
    habc_num_perturbations: int
    habc_perturbation: float
    rw_target_acceptance: float
    rw_initial_scale: float
    max_lag: int
    d: int
    alpha_value: float
    num_obs: int
    epsilon: float
    num_sims: int
    prior_var: float
    data_seed: int


def shards(config: dict, inputs: dict[str, str]) -> list[Shard]:
    """Shards of ``config['kmc_abc']`` (no inputs): one per (KMC or RW, run); HABC's runs batched as chains in
    chunks of ``habc_chains_per_shard`` (0: all runs in one shard; a batched HABC step costs about as much
    as a single-chain one); and one ``reference`` shard. Samplers, adaptation and grids are checked by the schema.

    Raises:
        ValueError: num_iterations <= max_lag.
    """
    spec = config["kmc_abc"]
    max_lag = int(spec["max_lag"])
    if int(spec["num_iterations"]) <= max_lag:
        raise ConfigError(f"kmc_abc.num_iterations ({spec['num_iterations']}) must exceed max_lag ({max_lag})")
    floats = lambda key: tuple(float(v) for v in spec[key])  # noqa: E731
    runs = [int(r) for r in spec["runs"]]
    chunk = int(spec["habc_chains_per_shard"]) or len(runs)
    common = {**{k: int(spec[k]) for k in _INT_KEYS}, **{k: floats(k) for k in _RANGE_KEYS},
              **{k: float(spec[k]) for k in _FLOAT_KEYS}, "adaptation": spec["adaptation"],
              **{k: spec[k] for k in _TARGET_KEYS}}
    out = []
    for name in spec["samplers"]:
        groups = [runs[i:i + chunk] for i in range(0, len(runs), chunk)] if name == "HABC" else [[r] for r in runs]
        out += [Shard(sampler=name, runs=tuple(g), **common) for g in groups]
    return out + [Shard(sampler="reference", runs=(0,), **common)]


def _target(shard: Shard) -> ABCSkewNormalPosterior:
    return ABCSkewNormalPosterior(shard.d, shard.alpha_value, num_obs=shard.num_obs, epsilon=shard.epsilon,
                                  num_sims=shard.num_sims, prior_var=shard.prior_var, seed=shard.data_seed)


def _fit(points: torch.Tensor, shard: Shard, gen: torch.Generator, params: tuple[float, float] | None):
    """Lite surrogate on <= kmc_history_size distinct points; CV of (sigma, lambda) when params is None."""
    return fit_lite_on_history(points, shard.kmc_history_size, shard.kmc_sigma_grid, shard.kmc_lambda_grid,
                               shard.kmc_cv_folds, gen, params)


def _step(clock: StepClock, kernel, state, log_prob, gen: torch.Generator, t: int):
    """One timed step; a non-finite state (HABC has no MH step and can diverge) raises RuntimeError."""
    try:
        state, info = clock.step(kernel, state, log_prob, gen)
    except torch.linalg.LinAlgError as err:
        raise RuntimeError(f"{type(kernel).__name__} failed at iteration {t} ({err}); a diverged HABC chain "
                           "gives a singular synthetic covariance: lower habc_step_size_range") from err
    if not bool(torch.isfinite(state.x).all()):
        raise RuntimeError(f"{type(kernel).__name__} chain diverged at iteration {t} (non-finite theta); "
                           "lower the step size range")
    return state, info


def _chain(shard: Shard, target: ABCSkewNormalPosterior, gen: torch.Generator, clock: StepClock):
    """Burn-in + kept iterations of C = len(runs) chains (C = 1 unless HABC).

    Returns kept theta (T, C, d) numpy, cumulative (energy, grad) evals and seconds per kept step, and a
    dict metric -> (C,) array of per-chain summaries (scalars broadcast).
    """
    C, B, T = len(shard.runs), shard.num_burn_in, shard.num_iterations
    x0 = target.theta_true.expand(C, -1).clone()
    L = (shard.num_steps, shard.num_steps)
    if shard.sampler == "HABC":
        kernel = HABC(lambda th, g: target.simulate_summaries(th, shard.habc_num_sims, g), target.s_obs,
                      shard.habc_step_size_range, L, shard.habc_perturbation, shard.habc_num_perturbations,
                      jitter=shard.epsilon**2)
        state, log_prob = kernel.init(x0, target.log_prior), target.log_prior
    else:  # RW and KMC (C = 1): adaptive pseudo-marginal random-walk burn-in
        log_scale = torch.full((1,), math.log(shard.rw_initial_scale), dtype=torch.float64)
        kernel = PseudoMarginalMH(GaussianRandomWalkProposal(shard.rw_initial_scale))
        state, log_prob = kernel.init(x0, target.log_prob, gen), target.log_prob
    history, burn_acc = [], torch.zeros(C, dtype=torch.float64)
    for t in range(B):
        state, info = _step(clock, kernel, state, log_prob, gen, t)
        burn_acc += info.acceptance_prob.cpu()
        if shard.sampler != "HABC":
            history.append(state.x[0].cpu())
            log_scale = adapt_log_scale(log_scale, info.acceptance_prob.cpu(), t, shard.rw_target_acceptance)
            kernel = PseudoMarginalMH(GaussianRandomWalkProposal(float(log_scale.exp())))
    extra = {"burn_in_acceptance": (burn_acc / B).numpy() if B else np.full(C, np.nan)}
    if shard.sampler != "HABC":
        extra["proposal_scale"] = float(log_scale.exp())
    if shard.sampler == "KMC":
        if B < 1:
            raise ConfigError("KMC needs num_burn_in >= 1: its first surrogate is fitted on the burn-in states")
        surrogate, params = _fit(torch.stack(history), shard, gen, None)
        kernel, refits = KMC(surrogate, shard.step_size_range, L, pseudo_marginal=True), 0
    kept, evals, times, acc = [], [], [], torch.zeros(C, dtype=torch.float64)
    for t in range(T):
        state, info = _step(clock, kernel, state, log_prob, gen, B + t)
        acc += info.acceptance_prob.cpu()
        kept.append(state.x.cpu())
        evals.append((clock.energy_evals, clock.grad_evals))
        times.append(clock.seconds)
        if shard.sampler == "KMC" and shard.adaptation == "vanishing":
            history.append(state.x[0].cpu())
            if should_adapt(t, gen):  # a_t = 1 / sqrt(t + 1), one draw from gen
                surrogate, _ = _fit(torch.stack(history), shard, gen, params)
                kernel, refits = replace(kernel, surrogate=surrogate), refits + 1
    extra["acceptance_rate"] = (acc / T).numpy()
    if shard.sampler == "KMC":
        extra.update(surrogate_refits=refits, surrogate_sigma=params[0], surrogate_lambda=params[1])
    extra = {k: np.broadcast_to(np.asarray(v, dtype=np.float64), (C,)) for k, v in extra.items()}
    return torch.stack(kept).numpy(), evals, times, extra


def _reference_rows(target: ABCSkewNormalPosterior) -> pd.DataFrame:
    ref = reference_marginal(target)
    rows = [("reference", 0, -1, 0, "mean_theta1", ref["mean"], 0, 0, 0.0),
            ("reference", 0, -1, 0, "std_theta1", ref["std"], 0, 0, 0.0)]
    rows += [("reference", 0, -1, i, "density_theta1", v, 0, 0, 0.0) for i, v in enumerate(ref["density"])]
    df = tidy_frame(rows, EXPERIMENT, TARGET)
    df["x"] = np.concatenate([[np.nan, np.nan], ref["grid"]])
    return df


def run(shard: Shard) -> pd.DataFrame:
    """Run one shard (protocol and rows: module doc).

    Raises:
        ValueError: num_iterations <= max_lag; a KMC or RW shard with other than one run (HABC: none);
            KMC with num_burn_in < 1. RuntimeError: a diverged chain.
    """
    if shard.num_iterations <= shard.max_lag:
        raise ValueError(f"num_iterations ({shard.num_iterations}) must exceed max_lag ({shard.max_lag})")
    if len(shard.runs) < 1 or (shard.sampler in ("KMC", "RW") and len(shard.runs) != 1):
        raise ValueError(f"{shard.sampler} shards hold exactly one run (HABC: >= 1), got runs {shard.runs}")
    target = _target(shard)
    if shard.sampler == "reference":
        return _reference_rows(target)
    gen = make_generator(seed_from(EXPERIMENT, shard.sampler, shard.runs))
    clock = StepClock("cpu")
    kept, evals, times, extra = _chain(shard, target, gen, clock)
    per_call = shard.habc_num_sims if shard.sampler == "HABC" else shard.num_sims
    per_iter = clock.energy_evals / max(clock.steps, 1)
    name, c, rows = shard.sampler, clock, []
    for j, seed in enumerate(shard.runs):
        theta1 = kept[:, j, 0]
        summary = {**{k: v[j] for k, v in extra.items()}, "ess_theta1": ess(theta1[None]),
                   "mean_theta1": float(theta1.mean()), "std_theta1": float(theta1.std(ddof=1)),
                   "likelihood_estimates_per_iteration": per_iter, "simulations_per_iteration": per_iter * per_call}
        rows += [(name, seed, 0, t + 1, "theta1", float(v), *evals[t], times[t]) for t, v in enumerate(theta1)]
        rows += [(name, seed, 0, lag, "acf_theta1", float(v), c.energy_evals, c.grad_evals, c.seconds)
                 for lag, v in enumerate(autocorrelation(theta1, shard.max_lag))]
        rows += [clock.row(name, seed, 0, metric, value) for metric, value in sorted(summary.items())]
    rows += clock.nonfinite_rows(name, shard.runs[0])  # chain j is the run shard.runs[j]
    df = tidy_frame(rows, EXPERIMENT, TARGET)
    df["x"] = np.nan
    return df

