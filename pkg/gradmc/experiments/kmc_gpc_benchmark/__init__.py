"""Benchmark samples for Kernel HMC Fig. 4 left (EXPERIMENTS.md B3): GP classification on UCI Glass.

Target: :class:`gradmc.targets.GPClassificationPosterior` on the Glass "window vs rest" task (data from
``$GRADMC_DATA_DIR/glass/glass.data``, :func:`gradmc.data.glass.load_glass`): theta (9,) = log squared
ARD length-scales, prior N(0, prior_var I), log p(y | theta) estimated unbiasedly by importance sampling
with ``num_importance_samples`` draws from the Laplace approximation.

Benchmark chains (one Ray shard per chain): pseudo-marginal random-walk Metropolis
(:class:`PseudoMarginalMH` with an isotropic Gaussian proposal; the estimate of the current state is
recycled, so the chain targets the exact posterior), started at ``start`` ("zero": theta = 0, unit
length-scales on standardised inputs; "prior": a draw of the prior). The proposal scale is adapted
towards ``target_acceptance`` by Robbins-Monro (:func:`adapt_log_scale`) during the first
``num_burn_in`` iterations only, then frozen; afterwards every ``thin``-th state is kept. The paper's
benchmark: 500,000 iterations, 100,000 burn-in, thinning 1,000 (400 samples per chain).

Output (tidy rows, sampler "RW", seed 0, chain = chain id):
- ``theta_0`` ... ``theta_8``: coordinate d of kept sample k (step = k = 0 .. K-1), with the
  cumulative likelihood estimates (``energy_evals``, the initial one included) and sampler time so far.
- per chain, at step = num_iterations: ``acceptance_rate`` (after burn-in), ``burn_in_acceptance``,
  ``rw_scale`` (the frozen proposal scale), ``likelihood_estimates``.
- pooled over chains (chain = -1, step = K, added by :func:`finalize`): ``min_ess``, the minimum over the
  9 coordinates of ArviZ's rank-normalised bulk ESS of the kept samples of all chains (a quality check
  of the benchmark itself), and ``num_samples`` = chains * K.

:func:`load_benchmark` reads the file back as an (M, 9) tensor for the sampling stage
(:mod:`gradmc.experiments.kmc_gpc`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from gradmc.data.glass import load_glass
from gradmc.data.registry import data_dir as default_data_dir
from gradmc.errors import ConfigError, InputError, MissingInputError
from gradmc.evaluation.ess import ess
from gradmc.experiments.runner import StepClock, tidy_frame
from gradmc.results import read_parquet
from gradmc.samplers.continuous import GaussianRandomWalkProposal, PseudoMarginalMH, adapt_log_scale
from gradmc.seeding import make_generator, seed_from
from gradmc.targets import GPClassificationPosterior

__all__ = ["EXPERIMENT", "META", "TARGET", "DIM", "STARTS", "Shard", "shards", "run", "finalize", "make_target",
           "start_point", "coordinate_metrics", "load_benchmark"]

EXPERIMENT = "kmc_gpc_benchmark"
META = {
    # what `gradmc plan` shortens and how it counts units (gradmc.registry)
    "plan": {"unit": "pseudo-marginal MH iteration (one chain)", "units": "num_iterations",
             "lengths": {"kmc_gpc.benchmark.num_iterations": [20, 40]},
             "schedule": {"kmc_gpc.benchmark.num_burn_in": 0, "kmc_gpc.benchmark.thin": 1}},
    "cpu_only": True,  # one-row chains: launch-bound on a GPU (gradmc.registry)
    "title": "KMC Fig. 4 left, stage 1: benchmark chains for GP classification on Glass",
    "message": "GPC benchmark: {num_chains} pseudo-marginal RW chains of {num_iterations} iterations "
               "({num_burn_in} burn-in, thin {thin}) on Ray",
    "sort_by": ["chain", "metric", "step"],
    "output": "kmc_gpc/benchmark.parquet",
    "config_keys": ["kmc_gpc.benchmark"],
}
TARGET = "gpc_glass"
DIM = 9
STARTS = ("zero", "prior")


def coordinate_metrics(dim: int = DIM) -> list[str]:
    """Metric names of the sample coordinates: ["theta_0", ..., "theta_{dim-1}"]."""
    return [f"theta_{d}" for d in range(dim)]


@dataclass(frozen=True)
class Shard:
    """One benchmark chain. ``data_dir`` is the resolved data folder (absolute path) of the driver."""

    chain: int
    num_iterations: int
    num_burn_in: int
    thin: int
    data_dir: str
    start: str
    initial_scale: float
    target_acceptance: float
    num_importance_samples: int
    prior_var: float


def make_target(data_dir: str | Path | None, num_importance_samples: int,
                prior_var: float) -> GPClassificationPosterior:
    """The B3 target on Glass (CPU, float64) from the data folder (None: ``$GRADMC_DATA_DIR`` or ``data``).

    Raises:
        FileNotFoundError / ValueError: from :func:`gradmc.data.glass.load_glass` (names the file).
    """
    X, y = load_glass(data_dir)
    return GPClassificationPosterior(X, y, num_importance_samples=num_importance_samples, prior_var=prior_var)


def start_point(start: str, prior_var: float, generator: torch.Generator) -> torch.Tensor:
    """Initial state (1, 9): zeros ("zero") or a N(0, prior_var I) draw ("prior").

    Raises:
        ValueError: unknown ``start``.
    """
    if start == "zero":
        return torch.zeros((1, DIM), dtype=torch.float64)
    if start == "prior":
        return math.sqrt(prior_var) * torch.randn((1, DIM), generator=generator, dtype=torch.float64)
    raise ValueError(f"start must be one of {STARTS}, got {start!r}")


def shards(config: dict, inputs: dict[str, str]) -> list[Shard]:
    """One shard per chain of ``config['kmc_gpc']['benchmark']`` (only that sub-dict is read; no inputs).

    Raises:
        ValueError: fewer than 4 kept samples per chain, thin < 1, burn-in >= iterations.
        FileNotFoundError: the Glass file is missing from the data folder (checked here, before Ray).
    """
    spec = config["kmc_gpc"]["benchmark"]
    n, burn, thin = int(spec["num_iterations"]), int(spec["num_burn_in"]), int(spec["thin"])
    if thin < 1 or burn < 0 or (n - burn) // thin < 4:
        raise ConfigError(f"kmc_gpc.benchmark needs thin >= 1, num_burn_in >= 0 and at least 4 kept samples per "
                         f"chain, got num_iterations={n}, num_burn_in={burn}, thin={thin}")
    folder = str(default_data_dir().resolve())
    load_glass(folder)  # fail before any shard starts
    common = dict(num_iterations=n, num_burn_in=burn, thin=thin, data_dir=folder, start=spec["start"],
                  initial_scale=float(spec["initial_scale"]), target_acceptance=float(spec["target_acceptance"]),
                  num_importance_samples=int(spec["num_importance_samples"]), prior_var=float(spec["prior_var"]))
    return [Shard(chain=c, **common) for c in range(int(spec["num_chains"]))]


def run(shard: Shard) -> pd.DataFrame:
    """Run one benchmark chain; tidy rows (module docstring). CPU only."""
    target = make_target(shard.data_dir, shard.num_importance_samples, shard.prior_var)
    generator = make_generator(seed_from(EXPERIMENT, shard.chain))
    x0 = start_point(shard.start, shard.prior_var, generator)
    log_scale = torch.full((1,), math.log(shard.initial_scale), dtype=torch.float64)
    kernel = PseudoMarginalMH(GaussianRandomWalkProposal(shard.initial_scale))
    state = kernel.init(x0, target.log_prob, generator)
    clock = StepClock("cpu")
    names = coordinate_metrics()
    rows, burn_acc, acc, kept = [], 0.0, 0.0, 0
    for t in range(shard.num_iterations):
        state, info = clock.step(kernel, state, target.log_prob, generator)
        if t < shard.num_burn_in:
            burn_acc += float(info.acceptance_prob[0])
            log_scale = adapt_log_scale(log_scale, info.acceptance_prob, t, shard.target_acceptance)
            kernel = PseudoMarginalMH(GaussianRandomWalkProposal(float(log_scale.exp()[0])))
            continue
        acc += float(info.acceptance_prob[0])
        if (t - shard.num_burn_in + 1) % shard.thin == 0:
            for name, value in zip(names, state.x[0].tolist(), strict=True):
                rows.append(("RW", 0, shard.chain, kept, name, value, clock.energy_evals + 1, 0, clock.seconds))
            kept += 1
    n_kept_steps = shard.num_iterations - shard.num_burn_in
    for metric, value in (("acceptance_rate", acc / max(n_kept_steps, 1)),
                          ("burn_in_acceptance", burn_acc / shard.num_burn_in if shard.num_burn_in else math.nan),
                          ("rw_scale", float(log_scale.exp()[0])),
                          ("likelihood_estimates", clock.energy_evals + 1)):
        rows.append(("RW", 0, shard.chain, shard.num_iterations, metric, value, clock.energy_evals + 1, 0,
                     clock.seconds))
    rows += clock.nonfinite_rows("RW", 0, chain_offset=shard.chain)
    return tidy_frame(rows, EXPERIMENT, TARGET)


def _samples_by_chain(df: pd.DataFrame, where: str) -> np.ndarray:
    """(chains, K, 9) kept samples from tidy benchmark rows; ValueError (naming ``where``) if ill-shaped."""
    names = coordinate_metrics()
    d = df[df["metric"].isin(names) & (df["chain"] >= 0)]
    if d.empty:
        raise InputError(f"{where}: no benchmark samples (metrics {names[0]} .. {names[-1]}) found")
    wide = d.pivot_table(index=["chain", "step"], columns="metric", values="value", aggfunc="first")
    missing = [m for m in names if m not in wide.columns]
    if missing or wide.isna().any().any() or len(wide) * len(names) != len(d):
        raise InputError(f"{where}: benchmark samples are ill-shaped: every (chain, step) needs exactly one value "
                         f"of each of {names[0]} .. {names[-1]} (missing metrics {missing}, {len(d)} rows for "
                         f"{len(wide)} samples)")
    values = wide[names].to_numpy(np.float64)
    if not np.isfinite(values).all():
        raise InputError(f"{where}: benchmark samples contain NaN or infinite values")
    counts = wide.groupby(level="chain").size()
    if counts.nunique() != 1:
        raise InputError(f"{where}: benchmark chains have different numbers of samples {counts.to_dict()}")
    return values.reshape(len(counts), int(counts.iloc[0]), len(names))


def finalize(df: pd.DataFrame, inputs: dict[str, str]) -> pd.DataFrame:
    """The concatenated chains ``df`` plus the pooled ``min_ess`` and ``num_samples`` rows (chain = -1)
    (called by :func:`gradmc.experiments.standard.collect` before its sort; no inputs).

    Raises:
        ValueError: ill-shaped benchmark samples (see :func:`load_benchmark`).
    """
    samples = _samples_by_chain(df, "kmc_gpc_benchmark results")  # (chains, K, 9)
    ess_d = [ess(samples[:, :, d]) for d in range(samples.shape[2])]
    totals = df[df["metric"] == "likelihood_estimates"]
    pooled = [("RW", 0, -1, samples.shape[1], metric, value, int(totals["energy_evals"].sum()), 0,
               float(totals["wall_time_s"].sum()))
              for metric, value in (("min_ess", float(np.min(ess_d))),
                                    ("num_samples", float(samples.shape[0] * samples.shape[1])))]
    return pd.concat([df, tidy_frame(pooled, EXPERIMENT, TARGET)], ignore_index=True)


def load_benchmark(path: str | Path) -> torch.Tensor:
    """Benchmark samples (M, 9) float64 from a file written by ``gradmc run kmc_gpc_benchmark``.

    Raises:
        FileNotFoundError: the file does not exist (the message names it).
        ValueError: naming the file, if it is not a results Parquet, not a kmc_gpc_benchmark file, or its
            samples are ill-shaped (a missing coordinate, unequal chains, NaN).
    """
    path = Path(path)
    if not path.is_file():
        raise MissingInputError(f"benchmark file {path} not found (run `gradmc run kmc_gpc_benchmark` first)")
    df, _ = read_parquet(path)
    experiments = set(df["experiment"].unique()) if "experiment" in df.columns else set()
    if experiments != {EXPERIMENT}:
        raise InputError(f"{path}: not a {EXPERIMENT} results file (experiments {sorted(experiments)})")
    samples = _samples_by_chain(df, str(path))
    return torch.from_numpy(samples.reshape(-1, samples.shape[2]).copy())
