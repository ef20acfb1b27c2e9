"""GWG paper Fig. 2 (EXPERIMENTS.md A2, Appendix C.2): random RBMs of growing dimension, GWG versus the
relaxed samplers R-MALA, R-HMC and D-SVGD.

Targets: one random RBM per (D, seed) with D visible and ``num_hidden`` hidden units (paper 100),
W_ij i.i.d. N(0, weight_variance) (paper text lost the digits; the authors' code, following Han et al.
2020, uses variance 0.05, i.e. std sqrt(0.05) ~ 0.224), b ~ N(0, I_D), c ~ N(0, I_H); built on the CPU
from ``seed_from("rbm_relaxed", D, seed)`` so every shard of that (D, seed) sees the same RBM.

Ground truth: computed INSIDE each shard, deterministically from (D, seed)
(``seed_from("rbm_relaxed", "reference", D, seed)``): ``reference.num_samples`` independent block-Gibbs
chains (paper 500) from uniform Bernoulli, run ``reference.num_steps`` sweeps; the final states are the
ground truth. This is cheap (two (500 x D) x (D x 100) products per sweep) next to the sampler, so
duplicating it across the shards of one (D, seed) keeps shards independent and the DAG one wave.

Shards: one per (D, sampler, hyper-parameter setting, seed). Grids (Appendix C): R-MALA and R-HMC take
step_size x temperature, D-SVGD takes learning_rate x temperature; GWG has no hyper-parameters.
All samplers start from the same uniform-Bernoulli state for a (D, seed)
(``seed_from("rbm_relaxed", "init", D, seed)``), the relaxed ones at ``z_from_bits(x0, generator)``.

Metrics (tidy rows; extra columns ``num_visible`` (D) and ``setting`` (e.g.
"step_size=0.01,temperature=1", "-" for GWG)):
- ``log_mmd`` every ``record_every`` steps and at the last step (chain = -1): log10 of the biased MMD^2
  between the current ``num_chains`` samples and the ground truth, kernel exp(-mean Hamming).
- ``acceptance_rate`` (chain = -1, last step): mean acceptance probability over chains and steps
  (1 for D-SVGD, a deterministic particle update).
- ``log_mmd_target`` (sampler "Target", GWG shards only, chain = -1): log MMD between the ground truth
  and a second, independent block-Gibbs set of ``num_chains`` samples (the floor a perfect sampler hits).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd
import torch

from gradmc.errors import ConfigError
from gradmc.evaluation.mmd import ReferenceMMD
from gradmc.experiments.runner import StepClock, tidy_frame
from gradmc.samplers.discrete.registry import make_sampler
from gradmc.seeding import make_generator, seed_from
from gradmc.targets import RBM

__all__ = ["EXPERIMENT", "META", "RELAXED_GRIDS", "Shard", "build_rbm", "reference_samples", "shards", "run",
           "setting_label", "shard_samplers"]

EXPERIMENT = "rbm_relaxed"
META = {
    # what `gradmc plan` shortens and how it counts units (gradmc.registry)
    "plan": {"unit": "sampler step (num_chains chains; the reference sweeps scale with it)", "units": "num_steps",
             "lengths": {"rbm_relaxed.num_steps": [20, 40], "rbm_relaxed.reference.num_steps": [20, 40]},
             "schedule": {"rbm_relaxed.record_every": 10}, "classes": ["num_visible", "sampler"]},
    "title": "GWG Fig. 2: random RBMs of growing dimension, GWG vs R-MALA, R-HMC, D-SVGD",
    "message": "Random RBMs D={dims}: {samplers} x seeds {seeds} on Ray",
    "sort_by": ["num_visible", "sampler", "setting", "seed", "metric", "chain", "step"],
    "figure": "fig2_rbm_relaxed",
    "category": "GWG paper",
}
#: For each relaxed sampler, its rate hyper-parameter's config key (a list) and the make_sampler name.
RELAXED_GRIDS = {"R-MALA": ("step_sizes", "step_size"), "R-HMC": ("step_sizes", "step_size"),
                 "D-SVGD": ("learning_rates", "learning_rate")}


@dataclass(frozen=True)
class Shard:
    """One (D, sampler, setting, seed) run of ``num_chains`` chains (particles for D-SVGD)."""

    num_visible: int
    sampler: str
    hyper: tuple[tuple[str, float], ...]
    seed: int
    num_hidden: int
    weight_variance: float
    num_chains: int
    num_steps: int
    record_every: int
    reference_samples: int
    reference_steps: int
    num_leapfrog_steps: int
    device: str

    @property
    def setting(self) -> str:
        return setting_label(dict(self.hyper))


def setting_label(hyper: dict) -> str:
    """"step_size=0.01,temperature=1" (keys in the given order); "-" when there are none."""
    return ",".join(f"{k}={v:g}" for k, v in hyper.items()) or "-"


def _settings(name: str, spec: dict) -> list[tuple[tuple[str, float], ...]]:
    if name == "GWG":
        return [()]
    key, arg = RELAXED_GRIDS[name]
    return [((arg, float(rate)), ("temperature", float(temp))) for rate in spec[key] for temp in spec["temperatures"]]


def shards(config: dict, inputs: dict[str, str]) -> list[Shard]:
    """One shard per (D, sampler, setting, seed) of ``config['rbm_relaxed']``, in config order (no inputs).

    Raises:
        ValueError: two shards with the same (D, sampler, setting, seed).
    """
    spec = config["rbm_relaxed"]
    ref = spec["reference"]
    out = [
        Shard(num_visible=int(D), sampler=name, hyper=hyper, seed=int(seed), num_hidden=spec["num_hidden"],
              weight_variance=float(spec["weight_variance"]), num_chains=spec["num_chains"],
              num_steps=spec["num_steps"], record_every=spec["record_every"], reference_samples=ref["num_samples"],
              reference_steps=ref["num_steps"], num_leapfrog_steps=spec["num_leapfrog_steps"],
              device=config["device"])
        for D in spec["dims"] for name in spec["samplers"] for hyper in _settings(name, spec) for seed in spec["seeds"]
    ]
    keys = [(s.num_visible, s.sampler, s.hyper, s.seed) for s in out]
    if len(set(keys)) != len(keys):
        raise ConfigError("rbm_relaxed: duplicate shards (repeated dims, seeds or grid values in the config)")
    return out


def build_rbm(num_visible: int, num_hidden: int, weight_variance: float, seed: int, device: str = "cpu") -> RBM:
    """The random RBM of (D, seed): W ~ N(0, weight_variance), b, c ~ N(0, I); built on the CPU."""
    gen = make_generator(seed_from(EXPERIMENT, num_visible, seed))
    rbm = RBM(num_visible, num_hidden, weight_std=math.sqrt(weight_variance), generator=gen)
    with torch.no_grad():
        rbm.b.copy_(torch.randn(num_visible, generator=gen))
        rbm.c.copy_(torch.randn(num_hidden, generator=gen))
    rbm.requires_grad_(False)
    return rbm.to(device)


def reference_samples(rbm: RBM, num_samples: int, num_steps: int, generator: torch.Generator) -> torch.Tensor:
    """``num_samples`` block-Gibbs chains from uniform Bernoulli after ``num_steps`` sweeps: (N, D)."""
    device = rbm.W.device
    x = torch.bernoulli(torch.full((num_samples, rbm.num_visible), 0.5, device=device), generator=generator)
    gibbs = make_sampler("BlockGibbs")
    state = gibbs.init(x, rbm)
    for _ in range(num_steps):
        state, _ = gibbs.step(state, rbm, generator)
    return state.x


def shard_samplers(shard: Shard) -> tuple[str, ...]:
    """The samplers a shard builds: ``shard.sampler`` and the block Gibbs of its reference samples.

    The shard cache keys the shard by these samplers' code (:func:`gradmc.experiments.standard.shard_code_digest`).
    """
    return (shard.sampler, "BlockGibbs")


def run(shard: Shard) -> pd.DataFrame:
    """Run one shard: ``num_steps`` steps of the sampler on ``num_chains`` chains; tidy rows."""
    device, D, seed = shard.device, shard.num_visible, shard.seed
    rbm = build_rbm(D, shard.num_hidden, shard.weight_variance, seed, device)
    ref_gen = make_generator(seed_from(EXPERIMENT, "reference", D, seed), device)
    reference = reference_samples(rbm, shard.reference_samples, shard.reference_steps, ref_gen)
    init_gen = make_generator(seed_from(EXPERIMENT, "init", D, seed), device)
    x0 = torch.bernoulli(torch.full((shard.num_chains, D), 0.5, device=device), generator=init_gen)
    generator = make_generator(seed_from(EXPERIMENT, D, shard.sampler, shard.setting, seed), device)
    hyper = dict(shard.hyper)
    if shard.sampler == "R-HMC":
        hyper["num_leapfrog_steps"] = shard.num_leapfrog_steps
    sampler = make_sampler(shard.sampler, **hyper)
    state = sampler.init(x0, rbm, generator)  # relaxed samplers draw z = z_from_bits(x0, generator)
    rows: list[tuple] = []
    T = shard.num_steps
    clock = StepClock(device)
    accept_sum = torch.zeros(shard.num_chains, device=device)

    def record(metric: str, value: float) -> None:
        rows.append(clock.row(shard.sampler, seed, -1, metric, value))

    to_reference = ReferenceMMD(reference)  # its (R, R) kernel term once, not at every record
    record("log_mmd", to_reference.log_mmd(state.x))
    for t in range(1, T + 1):
        state, info = clock.step(sampler, state, rbm, generator)
        accept_sum += info.acceptance_prob.to(accept_sum.dtype)
        if t % shard.record_every == 0 or t == T:
            record("log_mmd", to_reference.log_mmd(state.x))
    record("acceptance_rate", float((accept_sum / max(T, 1)).mean()))
    if shard.sampler == "GWG":
        second = reference_samples(rbm, shard.num_chains, shard.reference_steps,
                                   make_generator(seed_from(EXPERIMENT, "reference-2", D, seed), device))
        rows.append(("Target", seed, -1, T, "log_mmd_target", float(to_reference.log_mmd(second)), 0, 0, 0.0))
    rows += clock.nonfinite_rows(shard.sampler, seed)
    df = tidy_frame(rows, EXPERIMENT, f"random_rbm_D{D}")
    df.insert(2, "num_visible", D)
    df.insert(4, "setting", [("-" if name == "Target" else shard.setting) for name in df["sampler"]])
    return df.astype({"num_visible": "int64"})

