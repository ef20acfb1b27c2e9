"""ESS per second of the Hamming statistic on a trained MNIST RBM (``make bench`` suite ``rbm_trained_784x500_ess``).

A 784 x 500 RBM is trained in this process on the static_mnist training split (GWG Sec. 5.1, App. E: CD-10,
batch 100, Adam lr 1e-3, one epoch, W initialised N(0, 0.01^2); about 20-30 s on 2 threads; skipped when the
data is not in ``$GRADMC_DATA_DIR``). Every sampler runs 100 chains from the same Bernoulli(data mean)
states: ``burn_in`` untimed steps, then ``steps`` steps timed in ``repeats`` segments, recording after each
step (outside the clock) h(x) = Hamming distance to one fixed r ~ Bernoulli(0.5)^784 (Zanella 2020), whose
ESS is :data:`ESS_DEFINITION`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import numpy as np
import torch

from gradmc.bench.catalog import RBM_ESS_SUITE, RBM_SAMPLERS
from gradmc.evaluation.ess import ess, ess_per_chain, hamming_to_reference
from gradmc.evaluation.timing import spread
from gradmc.experiments.rbm_model import data_mean_init
from gradmc.samplers.discrete.registry import make_sampler
from gradmc.seeding import make_generator, seed_from
from gradmc.targets.rbm import RBM
from gradmc.training.cd import train_rbm_cd

__all__ = ["ESS_DEFINITION", "ess_run", "rbm_ess_suite"]

#: what the numbers of the suite mean (stored with them in samplers.json)
ESS_DEFINITION = ("per-chain ArviZ rank-normalised bulk ESS of h(x) = Hamming distance to one fixed "
                  "Bernoulli(0.5) configuration, over the kept steps after burn-in; ess = mean over chains "
                  "(constant chains excluded, counted in nan_chains), ess_min/ess_median over chains, "
                  "ess_all_chains pooled; ess_per_s = ess / seconds, seconds = sampler-only wall time of the "
                  "kept steps of the whole batch of chains")


def _finite(value: float) -> float | None:
    """``value`` as a float, or None when NaN/inf (JSON has no NaN)."""
    value = float(value)
    return value if math.isfinite(value) else None


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def ess_run(sampler, target, x0: torch.Tensor, reference: torch.Tensor, generator: torch.Generator, *,
            steps: int, burn_in: int, repeats: int) -> dict:
    """Run ``sampler`` from ``x0`` (C, D): ``burn_in`` untimed steps, then ``steps`` steps timed in ``repeats``
    segments, recording the Hamming distance to ``reference`` (D,) after each; ESS and timings.

    Returns:
        {"ess_per_s", "ess", "ess_min", "ess_median", "ess_min_per_s", "ess_all_chains", "ess_all_chains_per_s",
         "nan_chains", "num_chains", "steps", "burn_in", "seconds" (sampler-only, kept steps), the keys of
         :func:`gradmc.evaluation.timing.spread` for "steps_per_s" over the segments, "ms_per_step",
         "energy_evals_per_step", "grad_evals_per_step", "acceptance_rate" (mean over steps and chains)}.
         ESS values are in draws (of ``steps``), ESS/s in draws per second; None where undefined.

    Raises:
        ValueError: for steps < max(4, repeats), repeats < 1 or burn_in < 0.
    """
    if repeats < 1 or steps < max(4, repeats) or burn_in < 0:
        raise ValueError(f"need repeats >= 1, steps >= max(4, repeats) and burn_in >= 0; got {repeats}, {steps}, "
                         f"{burn_in}")
    sync = torch.cuda.synchronize if x0.is_cuda else (lambda: None)
    state = sampler.init(x0, target)
    for _ in range(burn_in):
        state, _ = sampler.step(state, target, generator)
    num_chains = x0.shape[0]
    stat = torch.empty(steps, num_chains, dtype=torch.float64)  # (T, C) h(x) after each kept step
    accept = torch.zeros(num_chains, dtype=torch.float64)
    sizes = [steps // repeats + (i < steps % repeats) for i in range(repeats)]
    seconds, t = [0.0] * repeats, 0
    for i, size in enumerate(sizes):
        for _ in range(size):
            sync()
            tic = time.perf_counter()
            state, info = sampler.step(state, target, generator)
            sync()
            seconds[i] += time.perf_counter() - tic
            stat[t] = hamming_to_reference(state.x.unsqueeze(0), reference)[:, 0].to("cpu", torch.float64)
            accept += info.acceptance_prob.detach().to("cpu", torch.float64)
            t += 1
    total = sum(seconds)
    kept = stat.T.numpy()  # (C, T)
    per_chain = ess_per_chain(kept)  # (C,), NaN for a constant chain
    ok = np.isfinite(per_chain)
    finite = per_chain[ok] if ok.any() else np.full(1, np.nan)
    mean_ess, min_ess, pooled = finite.mean(), finite.min(), ess(kept)
    return {"ess_per_s": _finite(mean_ess / total), "ess": _finite(mean_ess), "ess_min": _finite(min_ess),
            "ess_median": _finite(np.median(finite)), "ess_min_per_s": _finite(min_ess / total),
            "ess_all_chains": _finite(pooled), "ess_all_chains_per_s": _finite(pooled / total),
            "nan_chains": int((~ok).sum()), "num_chains": int(num_chains), "steps": steps,
            "burn_in": burn_in, "seconds": total,
            **spread([size / s for size, s in zip(sizes, seconds, strict=True)], "steps_per_s"),
            "ms_per_step": 1000.0 * total / steps, "energy_evals_per_step": info.energy_evals,
            "grad_evals_per_step": info.grad_evals, "acceptance_rate": float(accept.mean()) / steps}


def rbm_ess_suite(*, steps: int = 2000, burn_in: int = 500, repeats: int = 5, num_chains: int = 100,
                  num_hidden: int = 500, num_train: int | None = None, epochs: int = 1, cd_steps: int = 10,
                  data_dir=None, progress: Callable[[str], None] | None = None) -> tuple[dict | str, dict]:
    """Train the RBM, then run every sampler of the RBM suite (:func:`ess_run`); see the module docstring.

    Args:
        steps, burn_in, repeats: as in :func:`ess_run`.
        num_chains: C. num_hidden: H of the RBM. num_train: first rows of the training split (default all).
        epochs, cd_steps: CD training length and k (batch 100, Adam lr 1e-3).
        data_dir: data folder (default ``$GRADMC_DATA_DIR``).
        progress: called with one line per sampler (None: silent).

    Returns:
        (results, settings): results is {sampler: row of :func:`ess_run`}, or the string
        "skipped: <reason>" when the data is not in the data folder; settings is {"params": the sizes above,
        "ess_definition", "training": {"num_train", "num_hidden", "epochs", "batch_size", "lr", "cd_steps",
        "iterations", "seconds" (wall), "reconstruction_error" (last logged batch, summed squared error per
        image)} (absent when skipped)}.

    Raises:
        ValueError: num_train < 1, or a corrupt data file.
    """
    from gradmc.data.mnist import load_static_binarized

    params = {"samplers": list(RBM_SAMPLERS), "steps": steps, "burn_in": burn_in, "repeats": repeats,
              "num_chains": num_chains, "num_hidden": num_hidden, "num_train": num_train, "epochs": epochs,
              "cd_steps": cd_steps, "data": "static_mnist train split"}
    settings: dict = {"params": params, "ess_definition": ESS_DEFINITION}
    if num_train is not None and num_train < 1:
        raise ValueError(f"num_train must be >= 1, got {num_train}")
    try:
        data = torch.from_numpy(load_static_binarized(data_dir, "train")[:num_train].astype(np.float32))
    except FileNotFoundError as err:
        return f"skipped: static_mnist (binarized MNIST) missing: {err}", settings
    gen = make_generator(seed_from("bench", RBM_ESS_SUITE, "train"))
    rbm = RBM(data.shape[1], num_hidden, weight_std=0.01)
    with torch.no_grad():
        rbm.W.normal_(0.0, 0.01, generator=gen)
    start = time.perf_counter()
    history = train_rbm_cd(rbm, data, epochs=epochs, batch_size=100, lr=1e-3, cd_steps=cd_steps, generator=gen,
                           progress=None)
    t = settings["training"] = {
        "num_train": int(data.shape[0]), "num_hidden": num_hidden, "epochs": epochs, "batch_size": 100, "lr": 1e-3,
        "cd_steps": cd_steps, "iterations": history[-1]["iteration"] if history else 0,
        "seconds": time.perf_counter() - start,
        "reconstruction_error": history[-1]["reconstruction_error"] if history else None}
    rbm.requires_grad_(False)
    say = progress or (lambda line: None)
    say(f"[bench] {RBM_ESS_SUITE}: trained RBM {data.shape[1]}x{num_hidden} on {t['num_train']} images, "
        f"CD-{cd_steps}, {t['iterations']} updates in {t['seconds']:.1f} s")
    x0 = data_mean_init(data, num_chains, make_generator(seed_from("bench", RBM_ESS_SUITE, "init")))
    reference = torch.bernoulli(torch.full((data.shape[1],), 0.5),
                                generator=make_generator(seed_from("bench", RBM_ESS_SUITE, "hamming-reference")))
    out = {}
    for name in RBM_SAMPLERS:
        gen = make_generator(seed_from("bench", RBM_ESS_SUITE, name))
        row = out[name] = ess_run(make_sampler(name), rbm, x0, reference, gen, steps=steps, burn_in=burn_in,
                                  repeats=repeats)
        say(f"[bench] {RBM_ESS_SUITE} {name}: ESS/s {_fmt(row['ess_per_s'])} (mean ESS {_fmt(row['ess'])}, "
            f"min {_fmt(row['ess_min'])} over {num_chains} chains; {steps} steps in {row['seconds']:.2f} s, "
            f"{row['steps_per_s']:.0f} steps/s)")
    return out, settings
