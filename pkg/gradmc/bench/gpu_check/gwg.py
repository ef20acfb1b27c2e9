"""GWG steps/s on the RBM of ``make bench`` (784 x 500), on the CPU or CUDA."""

from __future__ import annotations

__all__ = ["bench_gwg_rbm"]


def bench_gwg_rbm(device: str, chains: int, *, steps: int = 100, repeats: int = 5, warmup: int = 20,
                  threads: int | None = None) -> dict:
    """GWG steps/s (one step = one transition of all chains) on the ``make bench`` RBM, 784 x 500,
    W ~ N(0, 0.1^2), zero biases, ``chains`` chains from uniform Bernoulli states, on ``device``, timed by
    :func:`gradmc.evaluation.timing.time_sampler`. ``threads`` sets torch's CPU threads (CPU runs). Returns
    time_sampler's dict plus device, chains, threads and chain_steps_per_s."""
    import torch

    from gradmc.evaluation.timing import time_sampler
    from gradmc.samplers.discrete.registry import make_sampler
    from gradmc.seeding import make_generator, seed_from
    from gradmc.targets.rbm import RBM

    if threads is not None:
        torch.set_num_threads(threads)
    weights = make_generator(seed_from("gpu-check", "rbm"))
    rbm = RBM(784, 500, weight_std=0.1, generator=weights).requires_grad_(False).to(device)
    x0 = torch.bernoulli(torch.full((chains, 784), 0.5), generator=weights).to(device)
    generator = make_generator(seed_from("gpu-check", "gwg", device, chains), device)
    row = time_sampler(make_sampler("GWG"), rbm, x0, generator, steps=steps, repeats=repeats, warmup=warmup)
    return {"device": device, "chains": chains, "threads": torch.get_num_threads() if device == "cpu" else None,
            **row, "chain_steps_per_s": row["steps_per_s"] * chains}
