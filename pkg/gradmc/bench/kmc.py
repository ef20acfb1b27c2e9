"""Kernel HMC benchmarks: one KMC-finite iteration and one GPC marginal-likelihood estimate.

Settings (fixed so numbers compare across commits and with the authors' NumPy code, which takes
11-16 ms per KMC-finite iteration on the reference machine):
- KMC finite on the 8-D banana (V = 100, b = 0.03), m = n = 1,000 Gaussian random Fourier features
  (length scale 5, lambda 1e-3) fitted on 1,000 target draws, L ~ U{10..100}, eps ~ U[0.6, 1.3]; one
  chain (the authors' setting) and 32 chains batched. Our batched leapfrog always runs L_hi = 100
  surrogate-gradient steps (chains past their own L_c are frozen), so the time per iteration is that of
  L = 100, the worst case of the authors' range.
- One importance-sampled GP-classification log marginal-likelihood estimate on UCI Glass (214 points,
  100 samples from the Laplace approximation), for 1 and 8 chains at once. Needs ``glass/glass.data``
  in the data folder (``GRADMC_DATA_DIR``); skipped with a message when it is missing.
"""

from __future__ import annotations

import statistics
import time

import torch

from gradmc.evaluation.timing import time_sampler
from gradmc.samplers.continuous import KMC
from gradmc.seeding import make_generator, seed_from
from gradmc.surrogates import fit_finite, gaussian_random_features
from gradmc.targets import Banana

__all__ = ["kmc_finite_suite", "gpc_estimate_suite"]


def kmc_finite_suite(*, steps: int, repeats: int, chains: tuple[int, ...] = (1, 32)) -> dict:
    """Iterations per second of KMC finite on the 8-D banana for each batch size in ``chains``."""
    gen = make_generator(seed_from("bench", "kmc_finite"))
    target = Banana(8, 100.0, 0.03)
    features = gaussian_random_features(8, 1000, 5.0, gen, torch.float64)
    surrogate = fit_finite(target.sample(1000, gen), features, 1e-3)
    kernel = KMC(surrogate, step_size_range=(0.6, 1.3), num_steps_range=(10, 100))
    out = {}
    for c in chains:
        row = time_sampler(kernel, target, target.sample(c, gen), gen, steps=steps, repeats=repeats, warmup=5)
        row["iterations_per_s"] = row.pop("steps_per_s") * c  # chain-iterations per second
        row["ms_per_iteration"] = row.pop("ms_per_step")
        out[f"{c}_chains"] = row
    return out


def gpc_estimate_suite(*, repeats: int, chains: tuple[int, ...] = (1, 8), data_dir=None) -> dict | None:
    """Median seconds of one GPC log marginal-likelihood estimate (100 samples) per batch size; None without data."""
    from gradmc.data.glass import load_glass
    from gradmc.targets import GPClassificationPosterior

    try:
        X, y = load_glass(data_dir)
    except FileNotFoundError:
        return None
    target = GPClassificationPosterior(torch.from_numpy(X), torch.from_numpy(y), num_importance_samples=100)
    gen = make_generator(seed_from("bench", "gpc"))
    out = {}
    for c in chains:
        theta = torch.randn(c, X.shape[1], generator=gen, dtype=torch.float64)
        target.log_prob(theta, gen)  # warm-up
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            target.log_prob(theta, gen)
            times.append(time.perf_counter() - start)
        med = statistics.median(times)
        out[f"{c}_chains"] = {"ms_per_estimate": 1000.0 * med, "ms_per_chain_estimate": 1000.0 * med / c,
                              "ms_runs": [1000.0 * t for t in times]}
    return out
