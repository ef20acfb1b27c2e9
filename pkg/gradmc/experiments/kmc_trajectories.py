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

from gradmc.experiments.runner import tidy_frame
from gradmc.seeding import make_generator, seed_from
from gradmc.surrogates import FiniteSurrogate, rational_quadratic_random_features
from gradmc.targets import Gaussian, random_gamma_gaussian

__all__ = ["EXPERIMENT", "TARGET", "Shard", "shards", "leapfrog_trajectory", "trajectory_acceptance",
           "median_lengthscale", "trial", "run", "collect"]

EXPERIMENT = "kmc_trajectories"
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
    eps: float = 0.1
    L_min: int = 10
    L_max: int = 100
    lengthscale: float | str = "median"
    shape: float = 1.0
    lam: float = 1e-3
    device: str = "cpu"


def shards(config: dict) -> list[Shard]:
    """One shard per (d, n, chunk of ``trials_per_shard`` trials) of ``config['kmc_trajectories']``."""
    spec = config["kmc_trajectories"]
    ls = spec.get("lengthscale", "median")
    if isinstance(ls, str) and ls != "median":
        raise ValueError(f"kmc_trajectories.lengthscale must be a number or 'median', got {ls!r}")
    if spec.get("L_min", 10) > spec.get("L_max", 100):
        raise ValueError("kmc_trajectories.L_min must be <= L_max")
    total, per = spec["num_trials"], spec["trials_per_shard"]
    chunks = [(c, start, min(per, total - start)) for c, start in enumerate(range(0, total, per))]
    return [
        Shard(d=d, n=n, chunk=c, first_trial=start, num_trials=count, eps=spec.get("eps", 0.1),
              L_min=spec.get("L_min", 10), L_max=spec.get("L_max", 100), lengthscale=ls,
              shape=spec.get("shape", 1.0), lam=spec.get("lam", 1e-3), device=config["device"])
        for d in spec["dims"] for n in spec["num_samples"] for c, start, count in chunks
    ]


def leapfrog_trajectory(q0: torch.Tensor, p0: torch.Tensor, grad_log_prob: Callable[[torch.Tensor], torch.Tensor],
                        eps: float, num_steps: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Leapfrog for H = -log pi(q) + ||p||^2 / 2 from (q0, p0), both (d,).

    Returns (q, p), each (num_steps + 1, d): row 0 is the start, row t the state after t full steps.
    ``grad_log_prob`` maps (N, d) -> (N, d).
    """
    qs, ps = [q0], [p0]
    q, p = q0, p0
    g = grad_log_prob(q[None])[0]
    for _ in range(num_steps):
        p_half = p + 0.5 * eps * g
        q = q + eps * p_half
        g = grad_log_prob(q[None])[0]
        p = p_half + 0.5 * eps * g
        qs.append(q)
        ps.append(p)
    return torch.stack(qs), torch.stack(ps)


def trajectory_acceptance(log_prob: Callable[[torch.Tensor], torch.Tensor], q: torch.Tensor, p: torch.Tensor) -> float:
    """Mean over t = 1..L of min(1, exp(H_0 - H_t)) with H = -log_prob(q) + ||p||^2 / 2; non-finite -> 0."""
    h = -log_prob(q) + 0.5 * (p * p).sum(-1)  # (L + 1,)
    acc = torch.exp(torch.clamp(h[0] - h[1:], max=0.0))
    acc = torch.where(torch.isfinite(acc), acc, torch.zeros_like(acc))
    return float(acc.mean())


def median_lengthscale(x: torch.Tensor) -> float:
    """Median pairwise Euclidean distance over the first min(N, 1000) rows of x (N, d)."""
    z = x[:MEDIAN_SUBSAMPLE]
    dist = torch.cdist(z, z)
    iu = torch.triu_indices(z.shape[0], z.shape[0], offset=1)
    return float(dist[iu[0], iu[1]].median())


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
        s = median_lengthscale(x) if shard.lengthscale == "median" else float(shard.lengthscale)
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


def collect(results: list[pd.DataFrame]) -> pd.DataFrame:
    """Concatenate shard results, sorted for a stable file."""
    df = pd.concat(results, ignore_index=True)
    return df.sort_values(["metric", "d", "n", "seed"], kind="stable").reset_index(drop=True)
