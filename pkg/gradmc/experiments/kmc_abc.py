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
  The default width grid (10-100) brackets the posterior's squared inter-point distance (~2 d 0.4 = 8):
  over a wider grid (sigma 0.3-30, lambda 0.01-100) CV picked sigma = 1-3, lambda = 1, which gave
  acceptance 0.11-0.14, vs mostly 0.25-0.47 for sigma in [10, 100] (150-200 iterations each; the
  pseudo-marginal ceiling, KMC with the exact posterior's Gaussian gradient, is 0.62).
- ``HABC``: Meeds et al. (2015): synthetic likelihood N(y; mu_S, Sigma_S + eps^2 I) (the ABC kernel's
  eps^2 as ``jitter``, as in Meeds & Welling's SL-ABC; it also keeps Sigma_S non-singular for S = 10
  < d + 1), SPSA gradients, sticky random numbers, no MH step. Own step sizes: with KMC's U[0.01, 0.1]
  the frictionless SPSA dynamics diverged (|theta_1| ~ 1e27 within 300 iterations, S = 10 and 20);
  default U[0.01, 0.05] (10 chains x 2,200 iterations stayed finite, max |theta_1| 153).
  Cost: 2 R (L + 1) synthetic likelihoods of S simulations each per iteration. Its runs are batched as
  independent chains of one shard (own momenta, step sizes, SPSA directions and simulator noise per row).

Reference (the figure's black line): the EXACT ABC posterior marginal of theta_1,
:func:`reference_marginal`. The summary at theta is theta + delta A + G, A the mean of n half-normals,
G ~ N(0, (I - delta delta^T) / n) independent (additive skew-normal representation), so the ABC
likelihood is p_eps(s_obs | theta) = E_A[N(s_obs - theta; A delta, Sigma)], Sigma = (I - delta delta^T)
/ n + eps^2 I. Given A = a the posterior is N(theta; m(a), P), P = (I / v + Sigma^-1)^-1, m(a) =
P Sigma^-1 (s_obs - a delta), with weight prop. to p_A(a) N(s_obs - a delta; 0, v I + Sigma) (prior
N(0, v I)). p_A is the n-fold convolution of half-normal bin masses (step h), so the reference is a
finite Gaussian mixture in closed form, exact up to the grid (O(h^2) in moments).

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
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
from scipy import signal, stats

from gradmc.evaluation.ess import ess
from gradmc.experiments.runner import StepClock, tidy_frame
from gradmc.samplers.continuous import HABC, KMC, GaussianRandomWalkProposal, PseudoMarginalMH, adapt_log_scale
from gradmc.seeding import make_generator, seed_from
from gradmc.surrogates import cross_validate_lite, fit_lite
from gradmc.targets.abc_skew_normal import ABCSkewNormalPosterior

__all__ = ["EXPERIMENT", "TARGET", "SAMPLERS", "Shard", "shards", "run", "collect", "autocorrelation",
           "half_normal_mean_pmf", "reference_marginal", "abc_log_likelihood"]

EXPERIMENT = "kmc_abc"
TARGET = "abc_skew_normal"
SAMPLERS = ("KMC", "RW", "HABC")
ADAPTATIONS = ("vanishing", "fixed")
_TARGET_KEYS = ("d", "alpha_value", "num_obs", "epsilon", "num_sims", "prior_var", "data_seed")


@dataclass(frozen=True)
class Shard:
    """Chains of one sampler, one per run in ``runs`` (one run for KMC and RW; HABC batches its runs).

    ``sampler = "reference"``: the exact marginal, no chain. Defaults are the paper's sizes (B4).
    """

    sampler: str
    runs: tuple[int, ...]
    num_burn_in: int = 200
    num_iterations: int = 5000
    step_size_range: tuple[float, float] = (0.01, 0.1)
    num_steps: int = 50
    kmc_history_size: int = 1000
    kmc_sigma_grid: tuple[float, ...] = (10.0, 30.0, 100.0)
    kmc_lambda_grid: tuple[float, ...] = (1.0, 10.0, 100.0)
    kmc_cv_folds: int = 5
    adaptation: str = "vanishing"
    habc_step_size_range: tuple[float, float] = (0.01, 0.05)
    habc_num_sims: int = 10
    habc_num_perturbations: int = 1
    habc_perturbation: float = 0.1
    rw_target_acceptance: float = 0.234
    rw_initial_scale: float = 0.3
    max_lag: int = 100
    d: int = 10
    alpha_value: float = 10.0
    num_obs: int = 10
    epsilon: float = 0.55
    num_sims: int = 10
    prior_var: float = 25.0
    data_seed: int = 0


def shards(config: dict) -> list[Shard]:
    """Shards of ``config['kmc_abc']``: one per (KMC or RW, run); HABC's runs batched as chains in chunks
    of ``habc_chains_per_shard`` (default: all runs in one shard; a batched HABC step costs about as much
    as a single-chain one); and one ``reference`` shard.

    Raises:
        ValueError: unknown sampler or adaptation, num_iterations <= max_lag, an empty or non-positive
            grid, a chunk size < 1.
    """
    spec = config["kmc_abc"]
    for name in spec["samplers"]:
        if name not in SAMPLERS:
            raise ValueError(f"kmc_abc: unknown sampler {name!r}; available: {', '.join(SAMPLERS)}")
    if spec.get("adaptation", "vanishing") not in ADAPTATIONS:
        raise ValueError(f"kmc_abc.adaptation must be one of {ADAPTATIONS}, got {spec['adaptation']!r}")
    max_lag = int(spec.get("max_lag", 100))
    if int(spec["num_iterations"]) <= max_lag:
        raise ValueError(f"kmc_abc.num_iterations ({spec['num_iterations']}) must exceed max_lag ({max_lag})")
    floats = lambda key: tuple(float(v) for v in spec[key])  # noqa: E731
    for key in ("kmc_sigma_grid", "kmc_lambda_grid"):
        if not spec[key] or min(floats(key)) <= 0:
            raise ValueError(f"kmc_abc.{key} must be a non-empty list of numbers > 0, got {spec[key]!r}")
    runs = [int(r) for r in spec["runs"]]
    chunk = int(spec.get("habc_chains_per_shard", 0)) or len(runs)
    if chunk < 1:
        raise ValueError(f"kmc_abc.habc_chains_per_shard must be >= 1 (or 0 for all runs), got {chunk}")
    common = dict(num_burn_in=int(spec["num_burn_in"]), num_iterations=int(spec["num_iterations"]),
                  step_size_range=floats("step_size_range"), num_steps=int(spec["num_steps"]),
                  kmc_history_size=int(spec["kmc_history_size"]), kmc_sigma_grid=floats("kmc_sigma_grid"),
                  kmc_lambda_grid=floats("kmc_lambda_grid"), kmc_cv_folds=int(spec.get("kmc_cv_folds", 5)),
                  adaptation=spec.get("adaptation", "vanishing"),
                  habc_step_size_range=floats("habc_step_size_range"), habc_num_sims=int(spec["habc_num_sims"]),
                  habc_num_perturbations=int(spec.get("habc_num_perturbations", 1)),
                  habc_perturbation=float(spec.get("habc_perturbation", 0.1)),
                  rw_target_acceptance=float(spec.get("rw_target_acceptance", 0.234)),
                  rw_initial_scale=float(spec.get("rw_initial_scale", 0.3)), max_lag=max_lag,
                  **{k: spec[k] for k in _TARGET_KEYS if k in spec})
    out = []
    for name in spec["samplers"]:
        groups = [runs[i:i + chunk] for i in range(0, len(runs), chunk)] if name == "HABC" else [[r] for r in runs]
        out += [Shard(sampler=name, runs=tuple(g), **common) for g in groups]
    return out + [Shard(sampler="reference", runs=(0,), **common)]


def _target(shard: Shard) -> ABCSkewNormalPosterior:
    return ABCSkewNormalPosterior(shard.d, shard.alpha_value, num_obs=shard.num_obs, epsilon=shard.epsilon,
                                  num_sims=shard.num_sims, prior_var=shard.prior_var, seed=shard.data_seed)


# ------------------------------------------------------------------------------------ analysis helpers


def autocorrelation(chain, max_lag: int) -> np.ndarray:
    """Autocorrelation of a 1-D chain (T,) at lags 0..max_lag (ArviZ FFT estimator, biased normalisation).

    Returns NaN everywhere for a constant chain. Raises ValueError if the chain is not 1-D with
    T > max_lag >= 0, or holds NaN/inf.
    """
    arr = np.asarray(chain, dtype=np.float64)
    if arr.ndim != 1 or int(max_lag) != max_lag or not 0 <= max_lag < arr.shape[0]:
        raise ValueError(f"chain must be 1-D with more than max_lag = {max_lag} draws, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError("chain contains NaN or inf")
    if np.ptp(arr) == 0:
        return np.full(max_lag + 1, np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        import arviz
    return np.asarray(arviz.autocorr(arr))[: max_lag + 1]


def half_normal_mean_pmf(n: int, h: float = 5e-3) -> tuple[np.ndarray, np.ndarray]:
    """Grid law of A = mean of n i.i.d. |N(0, 1)|: support points a (K,) and masses p (K,), sum 1.

    Bins of width h carry the exact half-normal masses; their n-fold convolution (FFT) is the law of
    the sum of bin midpoints (error O(h^2) in moments). Raises ValueError for n < 1 or h not in (0, 0.1].
    """
    if int(n) != n or n < 1 or not 0 < h <= 0.1:
        raise ValueError(f"need an integer n >= 1 and 0 < h <= 0.1, got n = {n}, h = {h}")
    edges = np.arange(0.0, 9.0 + h, h)
    p1 = np.diff(2.0 * stats.norm.cdf(edges) - 1.0)
    pn = p1
    for _ in range(int(n) - 1):
        pn = np.clip(signal.fftconvolve(pn, p1), 0.0, None)
    a = (np.arange(pn.shape[0]) * h + n * h / 2.0) / n
    return a, pn / pn.sum()


def _mixture(target: ABCSkewNormalPosterior, h: float) -> dict:
    """Given A = a_k (grid): r_k = s_obs - a_k delta (K, d), log p_A(a_k) (K,), Sigma, P (d, d); posterior
    component means m_k = P Sigma^-1 r_k (K, d) and log weights log p_A(a_k) + log N(r_k; 0, v I + Sigma)."""
    d, n = target.dim, target.num_obs
    delta, s_obs = target.simulator.delta.numpy(), target.s_obs.numpy()
    a, pa = half_normal_mean_pmf(n, h)
    keep = pa > 1e-300
    r = s_obs[None, :] - a[keep, None] * delta[None, :]
    sigma = (np.eye(d) - np.outer(delta, delta)) / n + target.epsilon**2 * np.eye(d)
    sigma_inv = np.linalg.inv(sigma)
    P = np.linalg.inv(np.eye(d) / target.prior_var + sigma_inv)
    log_pa = np.log(pa[keep])
    log_w = log_pa + stats.multivariate_normal(np.zeros(d), target.prior_var * np.eye(d) + sigma).logpdf(r)
    return {"r": r, "log_pa": log_pa, "sigma": sigma, "P": P, "m": r @ sigma_inv @ P, "log_w": np.atleast_1d(log_w)}


def abc_log_likelihood(target: ABCSkewNormalPosterior, theta: torch.Tensor, h: float = 5e-3) -> torch.Tensor:
    """Exact log p_eps(s_obs | theta) = log sum_k p_A(a_k) N(r_k - theta; 0, Sigma) (module doc): (C, d) -> (C,).

    Shares r_k, p_A and Sigma with :func:`reference_marginal`; exact up to the grid of A (step h).
    Raises ValueError if theta is not a (C, d) tensor.
    """
    if not isinstance(theta, torch.Tensor) or theta.ndim != 2 or theta.shape[1] != target.dim:
        raise ValueError(f"theta must be a (C, {target.dim}) tensor, got {getattr(theta, 'shape', type(theta))}")
    mix = _mixture(target, h)
    dist = stats.multivariate_normal(np.zeros(target.dim), mix["sigma"])
    rows = theta.detach().cpu().double().numpy()
    return torch.tensor([float(np.logaddexp.reduce(dist.logpdf(mix["r"] - t) + mix["log_pa"])) for t in rows],
                        dtype=torch.float64)


def reference_marginal(target: ABCSkewNormalPosterior, coord: int = 0, grid: np.ndarray | None = None,
                       h: float = 5e-3) -> dict:
    """Exact ABC posterior marginal of theta_coord (module doc; KMC Fig. 4 right, reference line).

    Returns a dict with ``mean``, ``std`` (floats), ``grid`` (G,) and ``density`` (G,) on ``grid``
    (default: mean +- 6 sd, 401 points). Raises ValueError for a coordinate outside [0, d).
    """
    if int(coord) != coord or not 0 <= coord < target.dim:
        raise ValueError(f"coord must be an integer in [0, {target.dim}), got {coord}")
    mix = _mixture(target, h)
    P, w = mix["P"], np.exp(mix["log_w"] - mix["log_w"].max())
    w /= w.sum()
    mu = mix["m"][:, coord]
    mean = float(w @ mu)
    std = math.sqrt(P[coord, coord] + float(w @ (mu - mean) ** 2))
    grid = np.linspace(mean - 6 * std, mean + 6 * std, 401) if grid is None else np.asarray(grid, np.float64)
    dens = stats.norm.pdf(grid[:, None], mu[None, :], math.sqrt(P[coord, coord])) @ w
    return {"mean": mean, "std": std, "grid": grid, "density": dens}


# ------------------------------------------------------------------------------------------ samplers


def _fit(points: torch.Tensor, shard: Shard, gen: torch.Generator, params: tuple[float, float] | None):
    """Lite surrogate on <= kmc_history_size distinct points; CV of (sigma, lambda) when params is None."""
    pts = torch.unique(points, dim=0)
    if pts.shape[0] > shard.kmc_history_size:
        pts = pts[torch.randperm(pts.shape[0], generator=gen)[: shard.kmc_history_size]]
    if params is None:
        grid = len(shard.kmc_sigma_grid) * len(shard.kmc_lambda_grid)
        if grid > 1 and pts.shape[0] >= 2 * shard.kmc_cv_folds:
            cv = cross_validate_lite(pts, shard.kmc_sigma_grid, shard.kmc_lambda_grid, shard.kmc_cv_folds, gen)
            params = (cv.best_width, cv.best_lambda)
        else:
            params = (shard.kmc_sigma_grid[0], shard.kmc_lambda_grid[0])
    return fit_lite(pts, *params), params


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
            raise ValueError("KMC needs num_burn_in >= 1: its first surrogate is fitted on the burn-in states")
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
            if float(torch.rand((), generator=gen)) < 1.0 / math.sqrt(t + 1):
                surrogate, _ = _fit(torch.stack(history), shard, gen, params)
                kernel, refits = KMC(surrogate, shard.step_size_range, L, pseudo_marginal=True), refits + 1
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
    """Run one shard (protocol and rows: module doc). Raises ValueError on bad sampler/sizes/adaptation."""
    if shard.sampler not in (*SAMPLERS, "reference"):
        raise ValueError(f"kmc_abc: unknown sampler {shard.sampler!r}; available: {', '.join(SAMPLERS)}")
    if shard.adaptation not in ADAPTATIONS:
        raise ValueError(f"kmc_abc: adaptation must be one of {ADAPTATIONS}, got {shard.adaptation!r}")
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
    df = tidy_frame(rows, EXPERIMENT, TARGET)
    df["x"] = np.nan
    return df


def collect(results: list[pd.DataFrame]) -> pd.DataFrame:
    """Concatenate shard results, sorted (sampler, seed, metric, step) for a stable file."""
    df = pd.concat(results, ignore_index=True)
    return df.sort_values(["sampler", "seed", "metric", "step"], kind="stable").reset_index(drop=True)
