"""KMC paper Fig. 2 (EXPERIMENTS.md B1): stability of kernel-induced Hamiltonian trajectories as d grows.

No MCMC: per trial a new B1 target (zero-mean Gaussian, Gamma(1, 1) covariance eigenvalues, Haar rotation,
:func:`gradmc.targets.random_gamma_gaussian`) is drawn, a KMC finite surrogate (eq. 8) is fitted on n
i.i.d. target samples with m = n rational-quadratic random features, and one start (q0 ~ target,
p0 ~ N(0, I), L ~ U{L_min..L_max}, eps fixed) is integrated by leapfrog twice: with the true gradient (HMC)
and with the surrogate gradient (KMC). The statistic of a trajectory is the mean over its L points after
the start (t = 1..L; t = 0 would add a constant 1) of min(1, exp(H(q0, p0) - H(q_t, p_t))) with the TRUE
H(q, p) = -log pi(q) + ||p||^2 / 2; a diverged point (non-finite H) counts 0.

Kernel choices (stated, not cross-validated): rational-quadratic kernel
k = (1 + ||x - y||^2 / (2 a s^2))^(-a) with shape a (``shape``, default 1); the lengthscale s is either a
fixed number or ``"median"``: the median pairwise distance of (up to 1000 of) the n fitting samples; ridge
``lam`` (default 1e-3) added to the mean C of eq. 8.

Randomness: the target, the start (q0, p0, L) and therefore the HMC trajectory of trial t in dimension d
come from ``seed_from(EXPERIMENT, "target", d, t)`` and do not depend on n (paired comparisons along n);
the fitting samples and the random features come from ``seed_from(EXPERIMENT, "fit", d, n, t)``.

One shard = (d, n, chunk of trials). Metrics (tidy rows, chain = -1, seed = chunk index, step = 0):
``acceptance_kmc`` (sampler "KMC") and ``acceptance_hmc`` (sampler "HMC"): the mean over the chunk's
trials, with extra columns ``d``, ``n`` and ``trials`` (trials in the chunk, the weight when chunks are
pooled). ``grad_evals`` = leapfrog gradient evaluations of the chunk (sum of L); ``wall_time_s`` = time
of that method's integrations (the KMC row includes fitting the surrogate).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd
import torch

from gradmc.errors import ConfigError
from gradmc.experiments.runner import tidy_frame
from gradmc.samplers.base import acceptance_probability
from gradmc.samplers.continuous.common import leapfrog
from gradmc.seeding import make_generator, seed_from
from gradmc.surrogates import FiniteSurrogate, median_heuristic, rational_quadratic_random_features
from gradmc.targets import Gaussian, random_gamma_gaussian

__all__ = ["EXPERIMENT", "META", "TARGET", "Shard", "shards", "leapfrog_trajectory", "trajectory_acceptance",
           "trial", "run"]

EXPERIMENT = "kmc_trajectories"
META = {
    # what `gradmc plan` shortens and how it counts units (gradmc.registry)
    "plan": {"unit": "trial (a surrogate fit on n points and two trajectories)", "units": "num_trials",
             "lengths": {"kmc_trajectories.trials_per_shard": [1, 2]}, "classes": ["d", "n"]},
    "cpu_only": True,  # one-row chains: launch-bound on a GPU (gradmc.registry)
    "title": "KMC Fig. 2: trajectory acceptance of KMC finite vs HMC over (d, n = m)",
    "message": "KMC Fig. 2 trajectories: d in {dims} x n = m in {num_samples}, {num_trials} trials on Ray",
    "sort_by": ["metric", "d", "n", "seed"],
    "figure": "kmc_fig2_trajectories",
    "category": "Kernel HMC paper",
}
TARGET = "gamma_gaussian"
MEDIAN_SUBSAMPLE = 1000


@dataclass(frozen=True)
class Shard:
    """Trials ``first_trial .. first_trial + num_trials - 1`` at dimension d with n = m samples/features."""

    d: int
    n: int
    chunk: int
    first_trial: int
    num_trials: int
    eps: float
    L_min: int
    L_max: int
    lengthscale: float | str
    shape: float
    lam: float
    device: str


def shards(config: dict, inputs: dict[str, str]) -> list[Shard]:
    """One shard per (d, n, chunk of ``trials_per_shard`` trials) of ``config['kmc_trajectories']`` (no inputs).

    Raises:
        ValueError: L_min > L_max.
    """
    spec = config["kmc_trajectories"]
    if spec["L_min"] > spec["L_max"]:
        raise ConfigError("kmc_trajectories.L_min must be <= L_max")
    total, per = spec["num_trials"], spec["trials_per_shard"]
    chunks = [(c, start, min(per, total - start)) for c, start in enumerate(range(0, total, per))]
    return [
        Shard(d=d, n=n, chunk=c, first_trial=start, num_trials=count, eps=spec["eps"], L_min=spec["L_min"],
              L_max=spec["L_max"], lengthscale=spec["lengthscale"], shape=spec["shape"], lam=spec["lam"],
              device=config["device"])
        for d in spec["dims"] for n in spec["num_samples"] for c, start, count in chunks
    ]


def leapfrog_trajectory(q0: torch.Tensor, p0: torch.Tensor, grad_log_prob: Callable[[torch.Tensor], torch.Tensor],
                        eps: float, num_steps: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The leapfrog path for H = -log pi(q) + ||p||^2 / 2 from (q0, p0), both (d,), by the package's
    :func:`gradmc.samplers.continuous.common.leapfrog` (one chain, ``path=True``).

    Returns (q, p), each (num_steps + 1, d): row 0 is the start, row t the state after t full steps.
    ``grad_log_prob`` maps (N, d) -> (N, d).
    """
    x = q0[None]
    eps_c = torch.full((1, 1), float(eps), dtype=q0.dtype)
    num = torch.full((1, 1), int(num_steps), dtype=torch.int64)
    *_, qs, ps = leapfrog(x, p0[None], eps_c, num, int(num_steps), lambda z: (None, grad_log_prob(z)), 1.0,
                          grad_log_prob(x), path=True)
    return qs[:, 0], ps[:, 0]


def trajectory_acceptance(log_prob: Callable[[torch.Tensor], torch.Tensor], q: torch.Tensor, p: torch.Tensor) -> float:
    """Mean over t = 1..L of min(1, exp(H_0 - H_t)) (:func:`gradmc.samplers.base.acceptance_probability`) with
    H = -log_prob(q) + ||p||^2 / 2; a NaN ratio counts 0."""
    h = -log_prob(q) + 0.5 * (p * p).sum(-1)  # (L + 1,)
    return float(acceptance_probability(h[0] - h[1:]).mean())


def trial(shard: Shard, t: int, surrogate_grad: Callable | None = None) -> dict:
    """Trial t of the shard's (d, n): acceptances, trajectory length and times.

    ``surrogate_grad`` (tests only) replaces the fitted KMC gradient, e.g. by the exact score.
    """
    d, n = shard.d, shard.n
    gen = make_generator(seed_from(EXPERIMENT, "target", d, t))
    target: Gaussian = random_gamma_gaussian(d, gen)
    q0 = target.sample(1, gen)[0]
    p0 = torch.randn(d, generator=gen, dtype=q0.dtype)
    L = int(torch.randint(shard.L_min, shard.L_max + 1, (1,), generator=gen))

    tic = time.perf_counter()
    q, p = leapfrog_trajectory(q0, p0, target.grad, shard.eps, L)
    acc_hmc = trajectory_acceptance(target, q, p)
    time_hmc = time.perf_counter() - tic

    tic = time.perf_counter()
    if surrogate_grad is None:
        fit_gen = make_generator(seed_from(EXPERIMENT, "fit", d, n, t))
        x = target.sample(n, fit_gen)
        s = (median_heuristic(x, max_points=MEDIAN_SUBSAMPLE, pairwise="cdist") if shard.lengthscale == "median"
             else float(shard.lengthscale))
        features = rational_quadratic_random_features(d, n, s, shard.shape, generator=fit_gen, dtype=x.dtype)
        surrogate_grad = FiniteSurrogate(features, shard.lam).update(x).grad
    q, p = leapfrog_trajectory(q0, p0, surrogate_grad, shard.eps, L)
    acc_kmc = trajectory_acceptance(target, q, p)
    time_kmc = time.perf_counter() - tic
    return {"acc_hmc": acc_hmc, "acc_kmc": acc_kmc, "L": L, "time_hmc": time_hmc, "time_kmc": time_kmc}


def run(shard: Shard, surrogate_grad: Callable | None = None) -> pd.DataFrame:
    """Run the shard's trials on the CPU (float64, small per-trial work); tidy rows (see module doc)."""
    with torch.no_grad():
        out = [trial(shard, t, surrogate_grad)
               for t in range(shard.first_trial, shard.first_trial + shard.num_trials)]
    frame = pd.DataFrame(out)
    steps = int(frame["L"].sum())
    rows = [
        ("KMC", shard.chunk, -1, 0, "acceptance_kmc", frame["acc_kmc"].mean(), 0, steps, frame["time_kmc"].sum()),
        ("HMC", shard.chunk, -1, 0, "acceptance_hmc", frame["acc_hmc"].mean(), steps, steps, frame["time_hmc"].sum()),
    ]
    df = tidy_frame(rows, EXPERIMENT, TARGET)
    df["d"] = shard.d
    df["n"] = shard.n
    df["trials"] = shard.num_trials
    return df.astype({"d": "int64", "n": "int64", "trials": "int64"})

