"""Contrastive divergence (CD-k) for binary RBMs with exact block-Gibbs negatives (Hinton 2002).

The GWG paper trains its MNIST RBM with CD-10, batch 100, Adam lr 1e-3, for one epoch (Sec. 5.1,
Appendix E). The gradient of the mean log-likelihood is the data expectation minus the model
expectation of grad_theta f(x) (GWG paper Eq. 12); CD-k approximates the model expectation with k
block-Gibbs sweeps started at the data batch.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import torch

from gradmc.samplers.discrete.block_gibbs import RBMBlockGibbs
from gradmc.targets.rbm import RBM

__all__ = ["train_rbm_cd"]


def train_rbm_cd(
    rbm: RBM,
    data: torch.Tensor,
    *,
    epochs: int,
    batch_size: int,
    lr: float,
    cd_steps: int,
    generator: torch.Generator,
    progress: Callable[[str], None] | None = print,
    log_every: int = 50,
) -> list[dict]:
    """Train ``rbm`` in place with CD-``cd_steps`` and Adam; returns one dict per logged iteration.

    Args:
        rbm: the model; its visible bias is initialised to the data log-odds (standard practice).
        data: (N, D) float tensor in {0, 1} on the model's device.
        epochs: passes over the data (shuffled each epoch with ``generator``).
        batch_size: examples per update.
        lr: Adam learning rate.
        cd_steps: block-Gibbs sweeps per negative sample (k of CD-k).
        generator: torch.Generator for shuffling and sampling.
        progress: callable receiving one status line every ``log_every`` iterations (None: silent).

    Returns:
        list of {"iteration", "epoch", "loss_proxy", "reconstruction_error", "wall_time_s"}; the loss
        proxy is mean f(data) - mean f(negatives), the surrogate whose gradient CD follows.

    Raises:
        ValueError: for non-positive sizes or data of the wrong shape.
    """
    if min(epochs, batch_size, cd_steps) < 1 or not lr > 0:
        raise ValueError(f"epochs, batch_size, cd_steps must be >= 1 and lr > 0; got "
                         f"{epochs}, {batch_size}, {cd_steps}, {lr}")
    if data.dim() != 2 or data.shape[1] != rbm.num_visible:
        raise ValueError(f"data must be (N, {rbm.num_visible}), got {tuple(data.shape)}")
    with torch.no_grad():
        mean = data.mean(0).clamp(1e-3, 1 - 1e-3)
        rbm.b.copy_(torch.log(mean) - torch.log1p(-mean))
    sampler = RBMBlockGibbs()
    opt = torch.optim.Adam(rbm.parameters(), lr=lr)
    n = data.shape[0]
    history: list[dict] = []
    start = time.perf_counter()
    iteration = 0
    total = epochs * ((n + batch_size - 1) // batch_size)
    for epoch in range(epochs):
        perm = torch.randperm(n, generator=generator, device=data.device)
        for lo in range(0, n, batch_size):
            batch = data[perm[lo:lo + batch_size]]  # (B, D)
            state = sampler.init(batch, rbm)
            for _ in range(cd_steps):
                state, _ = sampler.step(state, rbm, generator)
            negatives = state.x.detach()
            loss = -(rbm(batch).mean() - rbm(negatives).mean())
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            iteration += 1
            if iteration % log_every == 0 or iteration == total:
                with torch.no_grad():
                    recon = rbm.visible_probs(rbm.hidden_probs(batch))
                    err = float(((recon - batch) ** 2).sum(1).mean())
                row = {"iteration": iteration, "epoch": epoch, "loss_proxy": float(-loss.detach()),
                       "reconstruction_error": err, "wall_time_s": time.perf_counter() - start}
                history.append(row)
                if progress is not None:
                    progress(f"[train_rbm] iteration {iteration}/{total} epoch {epoch + 1}/{epochs} "
                             f"recon_error {err:.2f} elapsed {row['wall_time_s']:.1f}s")
    return history
