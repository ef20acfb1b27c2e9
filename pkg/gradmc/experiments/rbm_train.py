"""Stage: train the MNIST RBM of GWG Fig. 3 with CD-k (EXPERIMENTS.md A1)."""

from __future__ import annotations

from pathlib import Path

import torch

from gradmc.experiments.rbm_model import load_binary_data, save_rbm
from gradmc.seeding import make_generator, seed_from
from gradmc.targets.rbm import RBM
from gradmc.training.cd import train_rbm_cd

__all__ = ["META", "train_stage"]

META = {"stages": {"train_rbm": ["rbm_sampling.num_hidden", "rbm_sampling.train"]}}


def train_stage(config: dict, data_path: str | Path, out_path: str | Path, progress=print) -> dict:
    """Train an RBM (784 visible, ``rbm_sampling.num_hidden`` hidden) on the prepared training split.

    Writes the checkpoint atomically to ``out_path``; returns its metadata (sizes, settings, final
    reconstruction error, wall time). Runs in this process on ``config['device']`` (training is one
    small sequential job, not worth a Ray round trip).
    """
    spec = config["rbm_sampling"]
    train = spec["train"]
    device = config["device"]
    data = load_binary_data(data_path, "train", device)  # (N, 784)
    generator = make_generator(seed_from("rbm_sampling", "train"), device)
    rbm = RBM(data.shape[1], spec["num_hidden"], weight_std=0.01).to(device)
    with torch.no_grad():
        rbm.W.normal_(0.0, 0.01, generator=generator)
    history = train_rbm_cd(rbm, data, epochs=train["epochs"], batch_size=train["batch_size"],
                           lr=train["lr"], cd_steps=train["cd_steps"], generator=generator, progress=progress)
    meta = {"num_train": int(data.shape[0]), **train, "history": history,
            "torch_threads": torch.get_num_threads()}
    save_rbm(rbm, out_path, meta)
    return meta
