"""KMC with a real fitted surrogate (KMC finite on random Fourier features) samples the true target, and
its trajectories stay close to HMC's (the point of the surrogate: high acceptance without the gradient)."""

from __future__ import annotations

import torch

from gradmc.samplers.continuous import HMC, KMC
from gradmc.surrogates import fit_finite, gaussian_random_features
from gradmc.targets import Gaussian


def test_kmc_finite_surrogate_samples_the_target_with_high_acceptance():
    g = torch.Generator().manual_seed(0)
    cov = torch.tensor([[1.0, 0.6], [0.6, 0.8]], dtype=torch.float64)
    target = Gaussian(torch.tensor([0.5, -0.3], dtype=torch.float64), cov)
    history = target.sample(2000, g)  # stands in for the chain history KMC learns from
    surrogate = fit_finite(history, gaussian_random_features(2, 300, 2.0, generator=g), lam=1e-4)
    kmc = KMC(surrogate, step_size_range=(0.2, 0.3), num_steps_range=(5, 10))
    hmc = HMC(step_size_range=(0.2, 0.3), num_steps_range=(5, 10))
    chains, steps = 400, 60
    results = {}
    for name, sampler in (("kmc", kmc), ("hmc", hmc)):
        state = sampler.init(target.sample(chains, g), target)
        xs, acc = [], []
        for _ in range(steps):
            state, info = sampler.step(state, target, g)
            xs.append(state.x)
            acc.append(info.acceptance_prob.mean())
        results[name] = (torch.stack(xs, 1), float(torch.stack(acc).mean()))  # (C, T, d)
    x_kmc, acc_kmc = results["kmc"]
    _, acc_hmc = results["hmc"]
    # chains start at exact draws, so each chain's time average is an independent estimate of the mean:
    # the standard error of the grand mean is the spread of per-chain averages / sqrt(C)
    per_chain = x_kmc.mean(1)  # (C, d)
    se = per_chain.std(0) / chains**0.5
    assert ((per_chain.mean(0) - target.mean).abs() < 5 * se).all()
    centred = x_kmc - target.mean
    emp_cov = torch.einsum("cti,ctj->ij", centred, centred) / (chains * steps)
    assert (emp_cov - cov).abs().max() < 0.1
    assert acc_kmc > 0.8 and acc_kmc > acc_hmc - 0.1  # the surrogate's gradient is nearly the true one
