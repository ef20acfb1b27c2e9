"""Same seed and device -> identical trajectories; Info has the documented shapes, dtypes and costs."""

from __future__ import annotations

import pytest
import torch

from gradmc.samplers.base import Info
from gradmc.samplers.discrete import make_sampler
from gradmc.samplers.discrete.gwg_multi import GWGMulti
from gradmc.samplers.discrete.hamming_ball import BlockHammingBall
from gradmc.seeding import make_generator, seed_from
from gradmc.targets import RBM

NUM_CHAINS, DIM, NUM_STEPS = 16, 12, 20
# Kernels without a registry name of their own (the RBM has no blocks() for the registry's Block-HB).
LOCAL = {
    "GWG-3-set": lambda: GWGMulti(num_draws=3, density="set"),
    "Block-HB": lambda: BlockHammingBall.contiguous(DIM, 4, radius=1),
}
SAMPLERS = ["Gibbs-1", "Gibbs-2", "GWG", "BlockGibbs", "Gibbs-1-systematic", "GWG-3", "GWG-5", "HB-10-1",
            "HB-4-2", "RWM", *LOCAL]
# (energy_evals, grad_evals) per step on the RBM, counted per chain-batch call (see Info). The kernels in
# CACHED keep the evaluation at x (gradmc.core.incremental): their first step also counts the one init
# made (+1 evaluation, +1 gradient for the gradient kernels); Gibbs-1 reads f(x) from that cache.
EXPECTED_COST = {"Gibbs-1": (1, 0), "Gibbs-2": (4, 0), "GWG": (1, 1), "BlockGibbs": (2, 0),
                 "Gibbs-1-systematic": (1, 0), "GWG-3": (1, 1), "GWG-5": (1, 1), "GWG-3-set": (1, 1),
                 "HB-10-1": (11, 0), "HB-4-2": (11, 0), "Block-HB": (5, 0), "RWM": (2, 0)}
CACHED = {"Gibbs-1", "Gibbs-2", "GWG", "Gibbs-1-systematic", "GWG-3", "GWG-5", "GWG-3-set", "HB-10-1", "HB-4-2",
          "Block-HB"}
# Metropolis-Hastings kernels: most coordinates one accepted step can change (rejected: none)
MH_MAX_CHANGES = {"GWG": 1, "GWG-3": 3, "GWG-5": 5, "GWG-3-set": 3, "RWM": 1}
# always-accepting (Gibbs-type) kernels: most coordinates one step can change
GIBBS_MAX_CHANGES = {"Gibbs-1": 1, "Gibbs-2": 2, "BlockGibbs": DIM, "Gibbs-1-systematic": 1,
                     "HB-10-1": 2, "HB-4-2": 4, "Block-HB": 2}


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
    sampler = LOCAL[name]() if name in LOCAL else make_sampler(name)
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
        first = int(t == 0 and name in CACHED)
        assert type(info.energy_evals) is int and info.energy_evals == energy_evals + first
        assert type(info.grad_evals) is int and info.grad_evals == grad_evals + (first if grad_evals else 0)
        if name in MH_MAX_CHANGES:
            # 1..N distinct flips when accepted, none when rejected
            assert bool((info.sites_changed[~info.accepted] == 0).all())
            assert bool((info.sites_changed[info.accepted] >= 1).all())
            assert int(info.sites_changed.max()) <= MH_MAX_CHANGES[name]
            if MH_MAX_CHANGES[name] == 1:
                assert torch.equal(info.sites_changed, info.accepted.long())
        else:
            # Gibbs-type kernels always accept
            assert bool(info.accepted.all()) and bool((info.acceptance_prob == 1).all())
            assert int(info.sites_changed.max()) <= GIBBS_MAX_CHANGES[name]
        moved += int(info.sites_changed.sum())
    assert moved > 0


def test_registry_names_and_errors():
    from gradmc.samplers.discrete import CategoricalGibbs, GWGCategorical, HammingBall
    from gradmc.samplers.relaxed import RMALA

    assert make_sampler("HB-10-1") == HammingBall(block_size=10, radius=1)
    assert make_sampler("GWG", state="categorical") == GWGCategorical(temperature=2.0)
    assert make_sampler("Gibbs-2", state="categorical") == CategoricalGibbs(block_size=2)
    assert make_sampler("R-MALA", step_size=0.1, temperature=2.0) == RMALA(step_size=0.1, temperature=2.0)
    with pytest.raises(ValueError, match="unknown sampler 'HMC'"):
        make_sampler("HMC")
    with pytest.raises(ValueError, match="needs hyper-parameters"):
        make_sampler("R-HMC")
    with pytest.raises(ValueError, match="blocks"):
        make_sampler("Block-HB", target=object())
    with pytest.raises(ValueError, match="state must be"):
        make_sampler("GWG", state="continuous")
