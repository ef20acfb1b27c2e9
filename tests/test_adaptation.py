"""Burn-in adaptation toward a target acceptance rate (gradmc.samplers.adaptation.Adapted).

- the adapted value moves from a poor start toward the value whose acceptance is ~0.574: PAS's integer
  path length on a D = 32 RBM, a Gaussian random walk's log scale on a 5-d Gaussian;
- after burn-in the value never changes again, and each step IS the fixed kernel's step (same draws);
- bad arguments raise ValueError naming the argument.
"""

from __future__ import annotations

import math

import pytest
import torch

from gradmc.samplers.adaptation import Adapted
from gradmc.samplers.continuous import GaussianRandomWalkMetropolis
from gradmc.samplers.discrete import PAS
from gradmc.targets import RBM

torch.set_num_threads(1)

TARGET = 0.574


@pytest.fixture(scope="module")
def rbm_problem():
    g = torch.Generator().manual_seed(3)
    model = RBM(32, 16, weight_std=3.0, generator=g).double()
    x0 = torch.bernoulli(torch.full((64, 32), 0.5, dtype=torch.float64), generator=g)
    return model, x0


def _gaussian(x):
    return -0.5 * (x * x).sum(-1)


def _mean_acceptance(kernel, state, target, steps: int, seed: int) -> float:
    gen, total = torch.Generator().manual_seed(seed), 0.0
    for _ in range(steps):
        state, info = kernel.step(state, target, gen)
        total += float(info.acceptance_prob.mean())
    return total / steps


def _run(adapted, x0, target, steps: int, seed: int):
    state, gen, values = adapted.init(x0, target), torch.Generator().manual_seed(seed), []
    for _ in range(steps):
        state, _ = adapted.step(state, target, gen)
        values.append(state.value)
    return state, values


def test_pas_path_length_moves_toward_target_acceptance(rbm_problem):
    model, x0 = rbm_problem
    adapted = Adapted(lambda r: PAS(path_length=r), initial=1, burn_in=300, kind="int", rate=6.0)
    state, values = _run(adapted, x0, model, 300, seed=2)
    r = state.value
    acc_start = _mean_acceptance(PAS(1), PAS(1).init(x0, model), model, 60, seed=7)
    acc_end = _mean_acceptance(PAS(r), state.inner, model, 60, seed=7)
    print(f"PAS path length: 1 -> {r} (theta {state.theta:.2f}); acceptance {acc_start:.3f} -> {acc_end:.3f}")
    assert state.frozen and isinstance(r, int)
    assert acc_start > TARGET + 0.1  # the start is too timid
    assert r >= 4
    assert abs(acc_end - TARGET) < 0.1
    assert abs(acc_end - TARGET) < abs(acc_start - TARGET) / 2


def test_log_scale_reaches_target_acceptance():
    x0 = torch.randn(200, 5, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    adapted = Adapted(lambda s: GaussianRandomWalkMetropolis(scale=s), initial=0.05, burn_in=400, kind="log",
                      rate=2.0)
    state, values = _run(adapted, x0, _gaussian, 400, seed=1)
    acc = _mean_acceptance(GaussianRandomWalkMetropolis(scale=state.value), state.inner, _gaussian, 100, seed=2)
    print(f"RWM scale: 0.05 -> {state.value:.3f}; acceptance after burn-in {acc:.3f}")
    assert state.value > 0.5  # moved up by more than a factor 10
    assert abs(acc - TARGET) < 0.05


def test_value_is_frozen_after_burn_in_and_steps_are_the_fixed_kernels(rbm_problem):
    model, x0 = rbm_problem
    adapted = Adapted(lambda r: PAS(path_length=r), initial=2, burn_in=30, kind="int", rate=3.0)
    state, values = _run(adapted, x0, model, 30, seed=5)
    assert state.frozen and state.num_steps == 30
    frozen_value, frozen_theta = state.value, state.theta
    fixed = PAS(path_length=frozen_value)
    gen_a, gen_b = torch.Generator().manual_seed(9), torch.Generator().manual_seed(9)
    inner = state.inner
    for _ in range(200):
        state, info = adapted.step(state, model, gen_a)
        inner, info_fixed = fixed.step(inner, model, gen_b)
        assert state.value == frozen_value and state.theta == frozen_theta and state.frozen
        assert torch.equal(state.inner.x, inner.x)
        assert torch.equal(info.accepted, info_fixed.accepted)
    assert state.num_steps == 230


def test_zero_burn_in_is_the_fixed_kernel():
    x0 = torch.randn(50, 3, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    adapted = Adapted(lambda s: GaussianRandomWalkMetropolis(scale=s), initial=0.7, burn_in=0)
    fixed = GaussianRandomWalkMetropolis(scale=0.7)
    a, b = adapted.init(x0, _gaussian), fixed.init(x0, _gaussian)
    gen_a, gen_b = torch.Generator().manual_seed(1), torch.Generator().manual_seed(1)
    for _ in range(20):
        a, _ = adapted.step(a, _gaussian, gen_a)
        b, _ = fixed.step(b, _gaussian, gen_b)
    assert torch.equal(a.inner.x, b.x) and a.value == 0.7
    assert adapted.name == "Adapted(RWM)"


def test_bounds_are_respected(rbm_problem):
    model, x0 = rbm_problem
    adapted = Adapted(lambda r: PAS(path_length=r), initial=1, burn_in=40, kind="int", rate=20.0, upper=3)
    _, values = _run(adapted, x0, model, 40, seed=3)
    assert min(values) >= 1 and max(values) <= 3


@pytest.mark.parametrize("kwargs,argument", [
    ({"burn_in": -1}, "burn_in"),
    ({"burn_in": 2.5}, "burn_in"),
    ({"target_acceptance": 0.0}, "target_acceptance"),
    ({"target_acceptance": 1.0}, "target_acceptance"),
    ({"target_acceptance": 1.5}, "target_acceptance"),
    ({"initial": 0.0}, "initial"),
    ({"initial": -1.0}, "initial"),
    ({"initial": math.nan}, "initial"),
    ({"initial": 2.5, "kind": "int"}, "initial"),
    ({"kind": "linear"}, "kind"),
    ({"rate": 0.0}, "rate"),
    ({"decay": 1.5}, "decay"),
    ({"initial": 5.0, "upper": 2.0}, "lower/upper"),
])
def test_bad_arguments_raise_naming_the_argument(kwargs, argument):
    args = {"factory": lambda s: GaussianRandomWalkMetropolis(scale=s), "initial": 1.0, "burn_in": 10, **kwargs}
    with pytest.raises(ValueError, match=argument):
        Adapted(**args)


def test_an_unbounded_log_parameter_never_overflows():
    """A huge gain drives log(value) far past exp's float64 range: the iterate stops at +-700, no OverflowError."""
    from gradmc.samplers.discrete import make_sampler

    def target(x):
        return x.sum(-1) * 0.0

    kernel = Adapted(lambda a: make_sampler("DMALA", step_size=a), initial=0.2, burn_in=5, rate=1e6, decay=0.0)
    state = kernel.init(torch.zeros(4, 6), target)
    gen = torch.Generator().manual_seed(0)
    for _ in range(5):
        state, _ = kernel.step(state, target, gen)
    assert abs(state.theta) == 700.0 and math.isfinite(state.value) and state.frozen
