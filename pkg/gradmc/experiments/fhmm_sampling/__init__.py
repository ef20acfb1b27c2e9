"""GWG paper Fig. 5 (EXPERIMENTS.md A4, Appendix G): sampling the posterior of a factorial HMM.

Per seed, a random FHMM (W, b ~ N(0, 1), sigma, alpha, beta from the config; the authors' code uses
0.5, 0.1, 0.95) is drawn together with x_true ~ p(x) and y ~ p(y | x_true), all from one generator
seeded by ``seed_from("fhmm_sampling", "model", seed)``: every sampler of a seed sees the same
model and the same y. :func:`shards` lists one shard per (sampler, seed); all ``num_chains`` chains
of a shard run together. Chains start from a uniform random bit string (``init: uniform``, the
authors' code) or from a prior draw x ~ p(x) (``init: prior``).

Metrics (tidy rows, ``metric`` column, all over chains: chain = -1), every ``record_every`` steps
and at step 0 and the last step:
- ``log_joint``: mean over chains of log p(x, y) (normalised).
- ``recon_error``: mean over chains of sum_t (W^T x_t + b - y_t)^2.
- ``bit_error``: mean over chains of the fraction of the L * K bits that differ from x_true.
- ``log_joint_true`` / ``recon_error_true`` (step 0 only): the same for x_true, a reference level.
- ``acceptance_rate`` (last step): mean Metropolis-Hastings acceptance probability over steps and chains.
- ``adapted_value``, ``acceptance_rate_after_burn_in`` (last step; a sampler with ``adapt=N`` only): the step
  size (or path length) tuned during the first N steps, and the mean acceptance probability after them (when
  ``num_steps`` > N).
``energy_evals``/``grad_evals`` are cumulative evaluations per chain; ``wall_time_s`` is cumulative
sampler time only (the metric evaluations are not timed).
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import torch

from gradmc.experiments.runner import StepClock, tidy_frame
from gradmc.samplers.adaptation import Adapted
from gradmc.samplers.discrete.registry import make_sampler
from gradmc.seeding import make_generator, seed_from
from gradmc.targets import FactorialHMM

__all__ = ["EXPERIMENT", "META", "TARGET", "Shard", "shards", "make_problem", "run", "shard_samplers"]

EXPERIMENT = "fhmm_sampling"
META = {
    # what `gradmc plan` shortens and how it counts units (gradmc.registry)
    "plan": {"unit": "sampler step (num_chains chains)", "units": "num_steps",
             "lengths": {"fhmm_sampling.num_steps": [20, 40]}, "schedule": {"fhmm_sampling.record_every": 10},
             "classes": ["sampler"]},
    "title": "GWG Fig. 5: factorial HMM posterior sampling",
    "message": "Sampling the FHMM posterior (L={L}, K={K}): {samplers} x seeds {seeds}, {num_steps} steps on Ray",
    "sort_by": ["sampler", "seed", "metric", "chain", "step"],
    "figure": "fig5_fhmm_sampling",
    "category": "GWG paper",
}
TARGET = "fhmm_posterior"


@dataclass(frozen=True)
class Shard:
    """One (sampler, seed) run of ``num_chains`` chains on the FHMM posterior of that seed."""

    sampler: str
    seed: int
    L: int
    K: int
    num_chains: int
    num_steps: int
    record_every: int
    init: str
    sigma: float
    alpha: float
    beta: float
    device: str


def shards(config: dict, inputs: dict[str, str]) -> list[Shard]:
    """One shard per (sampler, seed) of ``config['fhmm_sampling']``, in config order (no inputs)."""
    spec = config["fhmm_sampling"]
    return [
        Shard(sampler=name, seed=seed, L=spec["L"], K=spec["K"], num_chains=spec["num_chains"],
              num_steps=spec["num_steps"], record_every=spec["record_every"], init=spec["init"],
              sigma=spec["sigma"], alpha=spec["alpha"], beta=spec["beta"],
              device=config["device"])
        for name in spec["samplers"] for seed in spec["seeds"]
    ]


def make_problem(shard: Shard) -> tuple[FactorialHMM, torch.Tensor, torch.Tensor]:
    """The seed's model, x_true (1, D) and y (L,), drawn on the CPU (identical on every device)."""
    gen = make_generator(seed_from(EXPERIMENT, "model", shard.seed))
    model = FactorialHMM.random(shard.L, shard.K, generator=gen, sigma=shard.sigma, alpha=shard.alpha,
                                beta=shard.beta)
    x_true = model.sample_prior(1, generator=gen)
    y = model.sample_observations(x_true, generator=gen)[0]
    return model.to(shard.device), x_true.to(shard.device), y.to(shard.device)


def shard_samplers(shard: Shard) -> tuple[str, ...]:
    """The sampler a shard builds: ``shard.sampler``.

    The shard cache keys the shard by these samplers' code (:func:`gradmc.experiments.standard.shard_code_digest`).
    """
    return (shard.sampler,)


def run(shard: Shard) -> pd.DataFrame:
    """Run one shard: ``num_steps`` steps of ``shard.sampler`` on ``num_chains`` chains; tidy rows."""
    device = shard.device
    model, x_true, y = make_problem(shard)
    posterior = model.posterior(y)
    generator = make_generator(seed_from(EXPERIMENT, shard.sampler, shard.seed), device)
    C, T = shard.num_chains, shard.num_steps
    if shard.init == "prior":
        x0 = model.sample_prior(C, generator=generator)
    else:
        x0 = torch.bernoulli(torch.full((C, model.num_dims), 0.5, device=device), generator=generator)
    sampler = make_sampler(shard.sampler, target=posterior)
    state = sampler.init(x0, posterior)
    rows, clock = [], StepClock(device)
    accept_sum = torch.zeros(C, device=device)

    def add(metric: str, value: float) -> None:
        rows.append(clock.row(shard.sampler, shard.seed, -1, metric, value))

    def record() -> None:
        with torch.no_grad():
            x = state.x
            add("log_joint", posterior(x).mean())
            add("recon_error", posterior.reconstruction_error(x).mean())
            add("bit_error", (x != x_true).float().mean())

    with torch.no_grad():
        add("log_joint_true", posterior(x_true)[0])
        add("recon_error_true", posterior.reconstruction_error(x_true)[0])
    record()
    adapted = isinstance(sampler, Adapted)
    burn_in = sampler.burn_in if adapted else 0
    after_sum = torch.zeros(C, device=device)
    for t in range(1, T + 1):
        state, info = clock.step(sampler, state, posterior, generator)
        accept_sum += info.acceptance_prob
        if t > burn_in:
            after_sum += info.acceptance_prob
        if t % shard.record_every == 0 or t == T:
            record()
    add("acceptance_rate", (accept_sum / max(T, 1)).mean())
    if adapted:  # the tuned value and the acceptance of the frozen kernel (when the run outlasts burn-in)
        add("adapted_value", float(state.value))
        if T > burn_in:
            add("acceptance_rate_after_burn_in", (after_sum / (T - burn_in)).mean())
    rows += clock.nonfinite_rows(shard.sampler, shard.seed)
    return tidy_frame(rows, EXPERIMENT, TARGET)

