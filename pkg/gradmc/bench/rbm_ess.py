"""ESS per second of the Hamming statistic on a trained MNIST RBM (``make bench`` suite ``rbm_trained_784x500_ess``).

Setting (fixed, so numbers compare across commits):
- Data: the training split of statically binarized MNIST (``static_mnist``: 50,000 x 784, read from the data
  folder ``$GRADMC_DATA_DIR``; the suite is skipped with a message when it is missing, as the GPC suite is).
- Model: a 784 x 500 RBM trained in this process with the GWG paper's recipe (Sec. 5.1, Appendix E): CD-10,
  batch 100, Adam lr 1e-3, one epoch (500 updates), W initialised N(0, 0.01^2), fixed seed. About 20-30 s on
  2 threads.
- Chains: 100, started from Bernoulli(data mean) (as :mod:`gradmc.experiments.rbm_sampling`); every
  sampler starts from the same states. ``burn_in`` untimed steps, then ``steps`` timed steps.
- Statistic: h(x) = Hamming distance of a chain's state to ONE fixed random configuration r ~ Bernoulli(0.5)^784
  (GWG Sec. 5.1 after Zanella 2020; :func:`gradmc.evaluation.ess.hamming_to_reference`), the same r for every
  sampler and chain, recorded after every kept step (outside the clock).
- ESS: per chain, ArviZ rank-normalised bulk ESS (:func:`gradmc.evaluation.ess.ess_per_chain`) over the kept
  steps. ``ess`` is the MEAN over chains (``ess_min`` / ``ess_median`` also reported; a chain whose statistic
  never changed has no ESS and is counted in ``nan_chains``); ``ess_all_chains`` is the ESS pooled over the
  chains (:func:`gradmc.evaluation.ess.ess`).
- ESS/s: ``ess_per_s = ess / seconds`` with ``seconds`` the sampler-only wall time of the kept steps of the
  whole batch (each chain's ESS per second of running all chains, as ``ess_per_second`` of the RBM-sampling
  experiment). The kept steps are timed in ``repeats`` consecutive segments; ``steps_per_s`` is the median of
  the segments' rates, with their spread.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable

import numpy as np
import torch

from gradmc.bench.catalog import LATER_BINARY, RBM_ESS_SUITE
from gradmc.evaluation.ess import ess, ess_per_chain, hamming_to_reference
from gradmc.evaluation.timing import spread
from gradmc.experiments.rbm_model import data_mean_init
from gradmc.samplers.discrete.registry import make_sampler
from gradmc.seeding import make_generator, seed_from
from gradmc.targets.rbm import RBM
from gradmc.training.cd import train_rbm_cd

__all__ = ["RBM_ESS_SAMPLERS", "ESS_DEFINITION", "load_training_data", "train_bench_rbm", "ess_run",
           "rbm_ess_suite"]

#: the samplers of the RBM steps/s suite
RBM_ESS_SAMPLERS = ("GWG", "Gibbs-1", "Gibbs-2", "HB-10-1", "GWG-3", "BlockGibbs", *LATER_BINARY)

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


def load_training_data(data_dir=None, num_train: int | None = None) -> torch.Tensor:
    """The static binarized MNIST training split as float32 (N, 784) in {0, 1}.

    Args:
        data_dir: the data folder (default ``$GRADMC_DATA_DIR`` or the user cache).
        num_train: keep only the first ``num_train`` rows (default: all 50,000).

    Raises:
        FileNotFoundError: (gradmc's MissingDataError) the data is not in the data folder; nothing is downloaded.
        ValueError: num_train < 1, or a corrupt file.
    """
    from gradmc.data.mnist import load_static_binarized

    if num_train is not None and num_train < 1:
        raise ValueError(f"num_train must be >= 1, got {num_train}")
    x = load_static_binarized(data_dir, "train")
    return torch.from_numpy(x[:num_train].astype(np.float32))


def train_bench_rbm(data: torch.Tensor, generator: torch.Generator, *, num_hidden: int = 500, epochs: int = 1,
                    batch_size: int = 100, lr: float = 1e-3, cd_steps: int = 10) -> tuple[RBM, dict]:
    """Train an RBM on ``data`` (N, D) with CD-``cd_steps`` and Adam (GWG paper Appendix E defaults).

    Returns:
        (rbm with gradients off, {"num_train", "num_hidden", "epochs", "batch_size", "lr", "cd_steps",
         "iterations", "seconds" (wall), "reconstruction_error" (of the last logged batch, summed squared
         error per image)}).
    """
    rbm = RBM(data.shape[1], num_hidden, weight_std=0.01)
    with torch.no_grad():
        rbm.W.normal_(0.0, 0.01, generator=generator)
    start = time.perf_counter()
    history = train_rbm_cd(rbm, data, epochs=epochs, batch_size=batch_size, lr=lr, cd_steps=cd_steps,
                           generator=generator, progress=None)
    seconds = time.perf_counter() - start
    meta = {"num_train": int(data.shape[0]), "num_hidden": num_hidden, "epochs": epochs, "batch_size": batch_size,
            "lr": lr, "cd_steps": cd_steps, "iterations": history[-1]["iteration"] if history else 0,
            "seconds": seconds,
            "reconstruction_error": history[-1]["reconstruction_error"] if history else None}
    return rbm.requires_grad_(False), meta


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
    seconds, rates, t, info = [], [], 0, None
    for size in sizes:
        elapsed = 0.0
        for _ in range(size):
            sync()
            tic = time.perf_counter()
            state, info = sampler.step(state, target, generator)
            sync()
            elapsed += time.perf_counter() - tic
            stat[t] = hamming_to_reference(state.x.unsqueeze(0), reference)[:, 0].to("cpu", torch.float64)
            accept += info.acceptance_prob.detach().to("cpu", torch.float64)
            t += 1
        seconds.append(elapsed)
        rates.append(size / elapsed)
    total = sum(seconds)
    kept = stat.T.numpy()  # (C, T)
    per_chain = ess_per_chain(kept)  # (C,), NaN for a constant chain
    finite = per_chain[np.isfinite(per_chain)]
    mean_ess = float(finite.mean()) if finite.size else float("nan")
    min_ess = float(finite.min()) if finite.size else float("nan")
    pooled = ess(kept)
    row = {"ess_per_s": _finite(mean_ess / total), "ess": _finite(mean_ess), "ess_min": _finite(min_ess),
           "ess_median": _finite(statistics.median(finite.tolist())) if finite.size else None,
           "ess_min_per_s": _finite(min_ess / total), "ess_all_chains": _finite(pooled),
           "ess_all_chains_per_s": _finite(pooled / total), "nan_chains": int(num_chains - finite.size),
           "num_chains": int(num_chains), "steps": steps, "burn_in": burn_in, "seconds": total}
    row.update(spread(rates, "steps_per_s"))
    row.update({"ms_per_step": 1000.0 * total / steps, "energy_evals_per_step": info.energy_evals,
                "grad_evals_per_step": info.grad_evals, "acceptance_rate": float(accept.mean()) / steps})
    return row


def rbm_ess_suite(*, samplers: tuple[str, ...] = RBM_ESS_SAMPLERS, steps: int = 2000, burn_in: int = 500,
                  repeats: int = 5, num_chains: int = 100, num_hidden: int = 500, num_train: int | None = None,
                  epochs: int = 1, cd_steps: int = 10, data_dir=None,
                  progress: Callable[[str], None] | None = None) -> tuple[dict | str, dict]:
    """Train the RBM, then run every sampler of ``samplers`` (:func:`ess_run`); see the module docstring.

    Args:
        samplers: binary sampler names of :func:`gradmc.samplers.discrete.registry.make_sampler`.
        steps, burn_in, repeats: as in :func:`ess_run`.
        num_chains: C. num_hidden: H of the RBM. num_train: first rows of the training split (default all).
        epochs, cd_steps: CD training length and k (batch 100, Adam lr 1e-3).
        data_dir: data folder (default ``$GRADMC_DATA_DIR``).
        progress: called with one line per sampler (None: silent).

    Returns:
        (results, settings): results is {sampler: row of :func:`ess_run`}, or the string
        "skipped: <reason>" when the data is not in the data folder; settings is
        {"params": the sizes above, "ess_definition", "training": :func:`train_bench_rbm`'s meta (absent when
        skipped)}.
    """
    params = {"samplers": list(samplers), "steps": steps, "burn_in": burn_in, "repeats": repeats,
              "num_chains": num_chains, "num_hidden": num_hidden, "num_train": num_train, "epochs": epochs,
              "cd_steps": cd_steps, "data": "static_mnist train split"}
    settings: dict = {"params": params, "ess_definition": ESS_DEFINITION}
    try:
        data = load_training_data(data_dir, num_train)
    except FileNotFoundError as err:
        return f"skipped: static_mnist (binarized MNIST) missing: {err}", settings
    gen = make_generator(seed_from("bench", RBM_ESS_SUITE, "train"))
    rbm, settings["training"] = train_bench_rbm(data, gen, num_hidden=num_hidden, epochs=epochs, cd_steps=cd_steps)
    if progress is not None:
        t = settings["training"]
        progress(f"[bench] {RBM_ESS_SUITE}: trained RBM {data.shape[1]}x{num_hidden} on {t['num_train']} images, "
                 f"CD-{cd_steps}, {t['iterations']} updates in {t['seconds']:.1f} s")
    x0 = data_mean_init(data, num_chains, make_generator(seed_from("bench", RBM_ESS_SUITE, "init")))
    reference = torch.bernoulli(torch.full((data.shape[1],), 0.5),
                                generator=make_generator(seed_from("bench", RBM_ESS_SUITE, "hamming-reference")))
    out = {}
    for name in samplers:
        gen = make_generator(seed_from("bench", RBM_ESS_SUITE, name))
        row = ess_run(make_sampler(name), rbm, x0, reference, gen, steps=steps, burn_in=burn_in, repeats=repeats)
        out[name] = row
        if progress is not None:
            progress(f"[bench] {RBM_ESS_SUITE} {name}: ESS/s {_fmt(row['ess_per_s'])} (mean ESS {_fmt(row['ess'])}, "
                     f"min {_fmt(row['ess_min'])} over {num_chains} chains; {steps} steps in {row['seconds']:.2f} s, "
                     f"{row['steps_per_s']:.0f} steps/s)")
    return out, settings
