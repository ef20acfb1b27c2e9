"""Same seed and device -> identical trajectories; Info has the documented shapes, dtypes and costs."""

from __future__ import annotations

import pytest
import torch

from gradmc.samplers.base import Info
from gradmc.samplers.discrete import make_sampler
from gradmc.seeding import make_generator, seed_from
from gradmc.targets import RBM

NUM_CHAINS, DIM, NUM_STEPS = 16, 12, 20
SAMPLERS = ["Gibbs-1", "Gibbs-2", "GWG", "BlockGibbs"]
# (energy_evals, grad_evals) per step, counted per chain-batch call (see Info)
EXPECTED_COST = {"Gibbs-1": (2, 0), "Gibbs-2": (4, 0), "GWG": (2, 2), "BlockGibbs": (2, 0)}


@pytest.fixture(scope="module")
def rbm():
    g = torch.Generator().manual_seed(5)
    model = RBM(DIM, 6, weight_std=1.0, generator=g)
    with torch.no_grad():
        model.b.copy_(torch.randn(DIM, generator=g))
        model.c.copy_(torch.randn(6, generator=g))
    return model


def _run(name: str, target, seed: int) -> tuple[torch.Tensor, list[Info]]:
    """(NUM_STEPS + 1, C, D) trajectory from a uniform Bernoulli start, and the per-step Info."""
    generator = make_generator(seed_from("test_determinism", name, seed))
    x0 = torch.bernoulli(torch.full((NUM_CHAINS, DIM), 0.5), generator=generator)
    sampler = make_sampler(name)
    state = sampler.init(x0, target)
    xs, infos = [state.x], []
    for _ in range(NUM_STEPS):
        state, info = sampler.step(state, target, generator)
        xs.append(state.x)
        infos.append(info)
    return torch.stack(xs), infos


@pytest.mark.parametrize("name", SAMPLERS)
def test_same_seed_same_trajectory(rbm, name):
    traj_a, infos_a = _run(name, rbm, seed=0)
    traj_b, infos_b = _run(name, rbm, seed=0)
    assert torch.equal(traj_a, traj_b)
    for a, b in zip(infos_a, infos_b, strict=True):
        assert torch.equal(a.accepted, b.accepted)
        assert torch.equal(a.acceptance_prob, b.acceptance_prob)


@pytest.mark.parametrize("name", SAMPLERS)
def test_different_seed_different_trajectory(rbm, name):
    traj_a, _ = _run(name, rbm, seed=0)
    traj_c, _ = _run(name, rbm, seed=1)
    assert not torch.equal(traj_a[1:], traj_c[1:])
    assert (traj_a[-1] != traj_c[-1]).any(dim=1).sum() >= NUM_CHAINS // 2  # most chains differ


@pytest.mark.parametrize("name", SAMPLERS)
def test_info_fields(rbm, name):
    traj, infos = _run(name, rbm, seed=2)
    energy_evals, grad_evals = EXPECTED_COST[name]
    moved = 0
    for t, info in enumerate(infos):
        assert isinstance(info, Info)
        assert info.acceptance_prob.shape == (NUM_CHAINS,) and info.acceptance_prob.dtype == traj.dtype
        assert bool(((info.acceptance_prob >= 0) & (info.acceptance_prob <= 1)).all())
        assert info.accepted.shape == (NUM_CHAINS,) and info.accepted.dtype == torch.bool
        assert info.sites_changed.shape == (NUM_CHAINS,) and info.sites_changed.dtype == torch.int64
        assert torch.equal(info.sites_changed, (traj[t + 1] != traj[t]).sum(1))
        assert type(info.energy_evals) is int and info.energy_evals == energy_evals
        assert type(info.grad_evals) is int and info.grad_evals == grad_evals
        if name == "GWG":
            # one flip when accepted, none when rejected
            assert torch.equal(info.sites_changed, info.accepted.long())
        else:
            # Gibbs-type kernels always accept
            assert bool(info.accepted.all()) and bool((info.acceptance_prob == 1).all())
            max_changes = DIM if name == "BlockGibbs" else int(name.split("-")[1])
            assert int(info.sites_changed.max()) <= max_changes
        moved += int(info.sites_changed.sum())
    assert moved > 0
