"""Kernel HMC paper Fig. 3 (EXPERIMENTS.md B2): mixing on the 8-D banana as KMC sees more data.

Target: :class:`gradmc.targets.Banana` (Haario et al. 1999), d = 8, V = 100, b = 0.03, E[y] = 0.

Samplers (one chain per shard; a shard is one (sampler, n, run)):
- ``HMC``: true gradient, L ~ U{L_lo..L_hi}, eps ~ U[eps_lo, eps_hi] drawn per step (the authors' code:
  L ~ U{10..100}, eps ~ U[0.6, 1.3], which the paper calls "tuned to about 80% acceptance"; the ranges
  are fixed, not adapted: the measured acceptance is reported).
- ``KMC``: KMC finite (eq. 8) with m = n Gaussian random Fourier features (length scale s of
  k = exp(-||x - y||^2 / (2 s^2)), ridge lambda), same L and eps ranges as HMC, MH with the true target.
  (s, lambda) are chosen ONCE per (n, run), on the n history points the first surrogate is fitted on and
  before the kept iterations, by ``cv_folds``-fold cross-validation of the held-out score-matching
  objective (paper Sec. 3, "use the score matching objective function in (5) to choose sigma, lambda pairs
  via cross-validation"; the excerpt of the paper we have does not say when it cross-validates on the
  banana (its Appendix D.2 is not in it): choosing once on the history, as in its other experiments, is
  our reading) over ``kmc_lengthscales`` x ``kmc_lambdas``, with the run's own m = n features
  (:func:`cross_validate_finite_stats`; the features of the chosen s are those of the fitted surrogate).
  The CV runs on the DISTINCT history rows (a burn-in history repeats states at rejections: a repeat would
  sit in a training and a held-out fold at once); with fewer than 2 ``cv_folds`` distinct rows it falls
  back to the first grid point. A number in ``lengthscale`` or ``lam`` fixes that parameter (its grid is
  then that one value); both fixed: no CV (the pre-CV behaviour). The vanishing adaptation below keeps
  the chosen (s, lambda). The surrogate is first fitted on n points obtained by ``history``:
    * ``target``: n exact i.i.d. draws from the banana (``Banana.sample``), an idealised "chain
      history after a sufficient burn-in" (the paper: "we here only quantify mixing after a sufficient
      burn-in"); the KMC chain itself then runs num_burn_in + num_iterations steps like the others.
    * ``burn_in``: the chain's own burn-in, gradient-free: num_burn_in steps of adaptive random-walk
      Metropolis (as ``RW`` below); the surrogate is fitted on n evenly spaced burn-in states (with
      repeats if n > num_burn_in), then num_iterations KMC steps are kept (the paper: "an increasing
      number of burn-in samples and basis functions m = n").
- ``KAMH`` (Sejdinovic et al. 2014, with its Hastings correction): proposal covariance
  gamma^2 I + nu^2 M H M^T from n history points Z (``history`` as for KMC), Gaussian kernel width by the
  median heuristic on Z, gamma = ``kamh_gamma``, and log nu adapted towards ``rw_target_acceptance`` (23%)
  by :func:`adapt_log_scale` during burn-in, then frozen. With ``history: burn_in`` the first half of the
  burn-in is adaptive RW (it provides Z) and nu is tuned over the second half.
- ``RW``: isotropic random-walk Metropolis, log scale adapted towards ``rw_target_acceptance`` (23.4%)
  by :func:`adapt_log_scale` during burn-in, then frozen.

Vanishing adaptation (``adaptation: vanishing``, Alg. 1 line 1): during the kept iterations, at step t
KMC and KAMH adapt with probability a_t = 1 / sqrt(t + 1) (:func:`should_adapt`): KMC finite adds every
state visited since its last update to its statistics (the online update over the full history, as the
paper proposes for KMC finite); KAMH redraws Z as n evenly spaced states of the whole history. Between
adaptations the kernel is fixed and exact. ``adaptation: none`` keeps the first fit.

Protocol: start from x0 ~ N(0, I_d) (a random start), run num_burn_in steps (discarded) and then
num_iterations kept steps. The paper's text says "2000+200 iterations ... discarded the burn-in"; we read
2,000 as the burn-in and 200 as the kept iterations (as "200 + 5,000" in B4) and follow the text, not the
authors' committed script (which silently used 100 iterations).

Metrics (tidy rows, chain = 0, step = total steps, extra int64 column ``n``: the KMC history size and
number of features, 0 for the other samplers; ``seed`` = the run index):
- ``acceptance_rate``: mean MH acceptance probability over the kept iterations.
- ``mean_norm``: ||E_hat[x]||_2 of the kept samples (true value 0).
- ``min_ess``: minimum over the d dimensions of ArviZ's rank-normalised bulk ESS of the kept samples of
  that coordinate (this single chain, as the paper computes per run).
- ``min_ess_per_second``: min_ess / sampler time of the whole run (burn-in included).
- ``burn_in_acceptance``: mean acceptance probability during burn-in.
- ``adaptations``: number of vanishing-adaptation updates during the kept iterations (0 without).
- KMC only, when (s, lambda) were cross-validated (a grid of more than one point): ``surrogate_lengthscale``
  (the chosen s, units of x), ``surrogate_sigma`` (= 2 s^2, the paper's/KMC lite's width of
  exp(-||x - y||^2 / sigma), as kmc_abc's ``surrogate_sigma``), ``surrogate_lambda``, ``surrogate_cv_points``
  (distinct history rows the CV ran on; 0: fell back to the first grid point) and ``surrogate_cv_seconds``
  (wall time of the CV, not in ``wall_time_s``).
``energy_evals``/``grad_evals`` are cumulative per chain; ``wall_time_s`` is sampler time only (the
surrogate fit and its cross-validation are not included).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
import torch

from gradmc.errors import ConfigError
from gradmc.evaluation.ess import ess
from gradmc.experiments.runner import StepClock, tidy_frame
from gradmc.samplers.continuous import HMC, KAMH, KMC, GaussianRandomWalkMetropolis, adapt_log_scale, should_adapt
from gradmc.seeding import make_generator, seed_from
from gradmc.surrogates import (
    cross_validate_finite_stats,
    finite_statistics,
    fit_finite_from_statistics,
    gaussian_random_features,
    median_heuristic,
)
from gradmc.targets import Banana

__all__ = ["EXPERIMENT", "META", "TARGET", "Shard", "shards", "choose_parameters", "run"]

EXPERIMENT = "kmc_banana"
META = {
    # what `gradmc plan` shortens and how it counts units (gradmc.registry)
    "plan": {"unit": "MCMC iteration (burn-in or kept)", "units": ["num_burn_in", "num_iterations"],
             "lengths": {"kmc_banana.num_burn_in": [20, 40], "kmc_banana.num_iterations": [10, 20]},
             "classes": ["sampler", "n"],
             "note": "KMC's history is the burn-in: the slice's 20-40 burn-in states give the cross-validation "
                     "and fit fewer distinct points than the paper's n, so the fixed cost per KMC shard is "
                     "under-estimated"},
    "cpu_only": True,  # one-row chains: launch-bound on a GPU (gradmc.registry)
    "title": "KMC Fig. 3: 8-D banana, KMC vs HMC and random walk over n = m",
    "message": "Sampling the 8-D banana: {samplers}, KMC n = {n}, runs {runs}, {num_burn_in} + {num_iterations} "
               "iterations on Ray",
    "sort_by": ["sampler", "n", "seed", "metric"],
    "figure": "kmc_fig3_banana",
    "category": "Kernel HMC paper",
}
TARGET = "banana"
#: Samplers that get one shard per history size n (the others run once, n = 0).
HISTORY_SAMPLERS = ("KMC", "KAMH")


@dataclass(frozen=True)
class Shard:
    """One run (seed) of one sampler; ``n`` is the KMC/KAMH history size (= KMC's features; 0 otherwise)."""

    sampler: str
    n: int
    run: int
    d: int
    V: float
    b: float
    num_burn_in: int
    num_iterations: int
    step_size_range: tuple[float, float]
    num_steps_range: tuple[int, int]
    lengthscale: float | None
    lam: float | None
    history: str
    adaptation: str
    kamh_gamma: float
    rw_target_acceptance: float
    rw_initial_scale: float
    device: str
    kmc_lengthscales: tuple[float, ...] = (5.0,)
    kmc_lambdas: tuple[float, ...] = (1e-3,)
    cv_folds: int = 5

    @property
    def cv_grid(self) -> tuple[tuple[float, ...], tuple[float, ...]]:
        """(length scales, lambdas) searched: a fixed ``lengthscale`` / ``lam`` is a one-point grid."""
        widths = (self.lengthscale,) if self.lengthscale is not None else self.kmc_lengthscales
        lams = (self.lam,) if self.lam is not None else self.kmc_lambdas
        return widths, lams


def _optional_float(value) -> float | None:
    return None if value is None else float(value)


def shards(config: dict, inputs: dict[str, str]) -> list[Shard]:
    """One shard per (sampler, n, run) of ``config['kmc_banana']``: KMC and KAMH for every n, the others n = 0
    (no inputs; samplers, history and adaptation are checked by the schema)."""
    spec = config["kmc_banana"]
    common = dict(d=spec["d"], V=float(spec["V"]), b=float(spec["b"]),
                  num_burn_in=spec["num_burn_in"], num_iterations=spec["num_iterations"],
                  step_size_range=tuple(float(e) for e in spec["step_size_range"]),
                  num_steps_range=tuple(int(s) for s in spec["num_steps_range"]),
                  lengthscale=_optional_float(spec["lengthscale"]), lam=_optional_float(spec["lam"]),
                  kmc_lengthscales=tuple(float(s) for s in spec["kmc_lengthscales"]),
                  kmc_lambdas=tuple(float(v) for v in spec["kmc_lambdas"]), cv_folds=int(spec["cv_folds"]),
                  history=spec["history"],
                  adaptation=spec["adaptation"], kamh_gamma=float(spec["kamh_gamma"]),
                  rw_target_acceptance=float(spec["rw_target_acceptance"]),
                  rw_initial_scale=float(spec["rw_initial_scale"]), device=config["device"])
    out = []
    for name in spec["samplers"]:
        sizes = spec["n"] if name in HISTORY_SAMPLERS else [0]
        out += [Shard(sampler=name, n=int(n), run=int(r), **common) for n in sizes for r in spec["runs"]]
    return out


def choose_parameters(shard: Shard, points: torch.Tensor) -> tuple[float, float, dict[str, float]]:
    """(s, lambda) for KMC on the history ``points`` (n, d) by k-fold score-matching CV (module doc).

    The features are the run's own m = n features (seed ``("features", n, run)``), the folds come from the
    seed ``("cv", n, run)``: the choice is a deterministic function of (shard, points).

    Returns:
        (s, lambda, rows): ``rows`` maps the metric names ``surrogate_*`` to values, empty when the grid has
        one point (nothing chosen).

    Raises:
        ValueError: from :func:`cross_validate_finite_stats` (bad points or grid).
    """
    widths, lams = shard.cv_grid
    if len(widths) * len(lams) == 1:
        return widths[0], lams[0], {}
    start = time.perf_counter()
    pts = torch.unique(points.cpu(), dim=0)
    if pts.shape[0] >= 2 * shard.cv_folds:
        cv = cross_validate_finite_stats(pts, widths, lams, shard.n, shard.cv_folds,
                                         make_generator(seed_from(EXPERIMENT, "cv", shard.n, shard.run)),
                                         feature_seed=seed_from(EXPERIMENT, "features", shard.n, shard.run))
        s, lam, used = cv.best_width, cv.best_lambda, pts.shape[0]
    else:
        s, lam, used = widths[0], lams[0], 0
    rows = {"surrogate_lengthscale": s, "surrogate_sigma": 2.0 * s * s, "surrogate_lambda": lam,
            "surrogate_cv_points": float(used), "surrogate_cv_seconds": time.perf_counter() - start}
    return s, lam, rows


def _fit_surrogate(shard: Shard, points: torch.Tensor):
    """KMC finite on ``points`` (n, d) with m = n features; (s, lambda) by :func:`choose_parameters`.

    Returns (surrogate, the ``surrogate_*`` metric rows).
    """
    points = points.cpu()
    s, lam, rows = choose_parameters(shard, points)
    gen = make_generator(seed_from(EXPERIMENT, "features", shard.n, shard.run))
    features = gaussian_random_features(shard.d, shard.n, s, gen, points.dtype)
    return fit_finite_from_statistics(features, lam, points.shape[0], *finite_statistics(points, features)), rows


def _min_ess(samples: torch.Tensor) -> float:
    """Minimum over dimensions of the bulk ESS of one chain's (T, d) samples; NaN if a coordinate is constant."""
    arr = samples.cpu().numpy().astype(np.float64)
    values = [ess(arr[None, :, j]) for j in range(arr.shape[1])]
    return float(np.min(values)) if not np.isnan(values).any() else float("nan")


def _kamh(shard: Shard, z: torch.Tensor, log_nu: torch.Tensor) -> KAMH:
    """KAMH on history z, kernel width the median pairwise distance of z (1.0 if all rows coincide)."""
    return KAMH(z=z, sigma=median_heuristic(z, fallback=1.0), gamma=shard.kamh_gamma, nu=float(log_nu.exp()[0]))


def _evenly_spaced(states: list[torch.Tensor], n: int) -> torch.Tensor:
    """n evenly spaced rows of the stacked history (repeats if n > len(states))."""
    idx = torch.linspace(0, len(states) - 1, n).round().long()
    return torch.stack(states)[idx]


def run(shard: Shard) -> pd.DataFrame:
    """Run one shard: burn-in (discarded) then kept iterations on the banana; tidy rows (see module doc).

    Raises:
        ValueError: KMC or KAMH with n < 1, or history "burn_in" with num_burn_in < 2.
    """
    if shard.sampler in HISTORY_SAMPLERS and shard.n < 1:
        raise ConfigError(f"{shard.sampler} needs n >= 1 history points, got {shard.n}")
    if shard.sampler in HISTORY_SAMPLERS and shard.history == "burn_in" and shard.num_burn_in < 2:
        raise ConfigError("history 'burn_in' needs num_burn_in >= 2")
    device = shard.device
    target = Banana(shard.d, shard.V, shard.b, device=device)
    generator = make_generator(seed_from(EXPERIMENT, shard.sampler, shard.n, shard.run), device)
    adapt_gen = make_generator(seed_from(EXPERIMENT, "adapt", shard.sampler, shard.n, shard.run))
    x0 = torch.randn((1, shard.d), generator=generator, dtype=torch.float64, device=device)
    hmc_args = dict(step_size_range=shard.step_size_range, num_steps_range=shard.num_steps_range)
    B, T = shard.num_burn_in, shard.num_iterations
    clock = StepClock(device)
    log_scale = torch.full((1,), float(np.log(shard.rw_initial_scale)), dtype=torch.float64, device=device)

    def target_history() -> torch.Tensor:
        gen = make_generator(seed_from(EXPERIMENT, "history", shard.n, shard.run))
        return Banana(shard.d, shard.V, shard.b).sample(shard.n, gen).to(device)

    # Burn-in plan: (kernel kind, number of steps) phases; "rw" and "kamh" adapt their log scale.
    surrogate, cv_rows = None, {}
    if shard.sampler == "HMC":
        kernel, phases = HMC(**hmc_args), [("fixed", B)]
    elif shard.sampler == "RW":
        kernel, phases = GaussianRandomWalkMetropolis(log_scale.exp()), [("rw", B)]
    elif shard.history == "burn_in":
        kernel = GaussianRandomWalkMetropolis(log_scale.exp())
        phases = [("rw", B)] if shard.sampler == "KMC" else [("rw", B - B // 2), ("kamh", B // 2)]
    elif shard.sampler == "KMC":
        surrogate, cv_rows = _fit_surrogate(shard, target_history())
        kernel, phases = KMC(surrogate, **hmc_args), [("fixed", B)]
    else:  # KAMH on target draws: tune nu over the whole burn-in
        kernel, phases = _kamh(shard, target_history(), log_scale), [("kamh", B)]

    state = kernel.init(x0, target)
    burn_acc, history = 0.0, []
    for kind, steps in phases:
        if kind == "kamh" and not isinstance(kernel, KAMH):  # second half of a KAMH burn-in: Z from the RW half
            log_scale = torch.zeros_like(log_scale)
            kernel = _kamh(shard, _evenly_spaced(history, shard.n), log_scale)
        for t in range(steps):
            state, info = clock.step(kernel, state, target, generator)
            burn_acc += float(info.acceptance_prob.mean())
            history.append(state.x[0])
            if kind == "rw":
                log_scale = adapt_log_scale(log_scale, info.acceptance_prob, t, shard.rw_target_acceptance)
                kernel = GaussianRandomWalkMetropolis(log_scale.exp())
            elif kind == "kamh":
                log_scale = adapt_log_scale(log_scale, info.acceptance_prob, t, shard.rw_target_acceptance)
                kernel = replace(kernel, nu=float(log_scale.exp()[0]))
    if shard.sampler == "KMC" and shard.history == "burn_in":
        surrogate, cv_rows = _fit_surrogate(shard, _evenly_spaced(history, shard.n))
        kernel = KMC(surrogate, **hmc_args)
        state = kernel.init(state.x, target)

    kept, acc, adaptations, fresh = [], 0.0, 0, []
    vanishing = shard.adaptation == "vanishing" and shard.sampler in HISTORY_SAMPLERS
    for t in range(T):
        if vanishing and should_adapt(t, adapt_gen) and (fresh or shard.sampler == "KAMH"):
            adaptations += 1
            if shard.sampler == "KMC":  # online update with every state since the last one: a new surrogate
                surrogate = surrogate.update(torch.stack(fresh).cpu())
                kernel, fresh = replace(kernel, surrogate=surrogate), []
            else:
                z = _evenly_spaced(history, shard.n)
                kernel = replace(kernel, z=z, sigma=median_heuristic(z, fallback=1.0))
        state, info = clock.step(kernel, state, target, generator)
        acc += float(info.acceptance_prob.mean())
        kept.append(state.x[0])
        history.append(state.x[0])
        fresh.append(state.x[0])
    samples = torch.stack(kept)  # (T, d)
    min_ess = _min_ess(samples)
    rows = []
    for metric, value in (("acceptance_rate", acc / max(T, 1)),
                          ("mean_norm", float(samples.mean(0).norm())),
                          ("min_ess", min_ess),
                          ("min_ess_per_second", min_ess / clock.seconds if clock.seconds > 0 else float("nan")),
                          ("burn_in_acceptance", burn_acc / B if B else float("nan")),
                          ("adaptations", float(adaptations)), *cv_rows.items()):
        rows.append(clock.row(shard.sampler, shard.run, 0, metric, value))
    rows += clock.nonfinite_rows(shard.sampler, shard.run)
    df = tidy_frame(rows, EXPERIMENT, TARGET)
    df.insert(df.columns.get_loc("sampler") + 1, "n", np.int64(shard.n))
    return df.astype({"n": "int64"})

