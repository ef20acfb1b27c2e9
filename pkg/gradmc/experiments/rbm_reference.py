"""Stage: block-Gibbs ground truth for the RBM sampling experiment (GWG Fig. 3, EXPERIMENTS.md A1).

Two independent sets of ``num_samples`` samples after ``num_steps`` exact block-Gibbs sweeps: the first
is the reference every sampler is compared with, the second gives the "Target" line (the log MMD
two exact sample sets reach). Kept apart from the sampler code so a sampler edit never reruns it.
"""

from __future__ import annotations

import time

import numpy as np
import torch

from gradmc.atomic import atomic_path
from gradmc.evaluation.mmd import log_mmd
from gradmc.experiments.rbm_model import data_mean_init, load_binary_data, load_rbm
from gradmc.samplers.discrete.block_gibbs import RBMBlockGibbs
from gradmc.seeding import make_generator, seed_from

__all__ = ["META", "reference_stage", "load_reference"]

META = {"stages": {"rbm_reference": ["rbm_sampling.reference"]}}


def reference_stage(config: dict, model_path, data_path, out_path, progress=print) -> dict:
    """Draw 2 x num_samples block-Gibbs samples after num_steps sweeps; save them atomically (.npz).

    Returns {"target_log_mmd": float, "wall_time_s": float}. Both sets start from the data-mean
    Bernoulli and run as one batch of chains (independent chains, one generator).
    """
    spec = config["rbm_sampling"]["reference"]
    device = config["device"]
    rbm = load_rbm(model_path, device)
    data = load_binary_data(data_path, "train", device)
    generator = make_generator(seed_from("rbm_sampling", "reference"), device)
    n, steps = spec["num_samples"], spec["num_steps"]
    sampler = RBMBlockGibbs()
    state = sampler.init(data_mean_init(data, 2 * n, generator), rbm)
    start = time.perf_counter()
    report = max(1, steps // 10)
    for t in range(1, steps + 1):
        state, _ = sampler.step(state, rbm, generator)
        if progress is not None and (t % report == 0 or t == steps):
            progress(f"[reference] block Gibbs sweep {t}/{steps} ({time.perf_counter() - start:.1f}s)")
    samples = state.x.to(torch.uint8).cpu()
    target = float(log_mmd(samples[:n].float(), samples[n:].float()))
    with atomic_path(out_path) as tmp:
        with open(tmp, "wb") as fh:
            np.savez_compressed(fh, samples=samples[:n].numpy(), samples_b=samples[n:].numpy(),
                                target_log_mmd=np.float64(target))
    return {"target_log_mmd": target, "wall_time_s": time.perf_counter() - start}


def load_reference(path, device: str = "cpu") -> tuple[torch.Tensor, float]:
    """Read a reference file: ((R, D) float32 samples on ``device``, target log MMD)."""
    with np.load(path, allow_pickle=False) as npz:
        return torch.from_numpy(npz["samples"]).float().to(device), float(npz["target_log_mmd"])
