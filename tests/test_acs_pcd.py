"""ACS as a PCD training sampler (gradmc.samplers.discrete.acs_pcd.ACSOverIterations): the cycle over training
iterations against the closed-form schedule, re-tuning from the initial range, and the trainer's checkpoint,
resume and failure handling of the tuned range (gradmc.training.ebm)."""

from __future__ import annotations

import math

import pytest
import torch

from gradmc.evaluation.ais import BernoulliBase
from gradmc.models import ResNetEBM
from gradmc.samplers.discrete.acs import ACS, balancing_constant
from gradmc.samplers.discrete.acs_pcd import ACSOverIterations
from gradmc.training.ebm import EBMTrainer, NonFiniteTrainingError

B = torch.linspace(-2.0, 2.0, 12, dtype=torch.float64)


def _log_prob(x):
    return x @ B


def _x(seed=0, chains=16):
    g = torch.Generator().manual_seed(seed)
    return torch.bernoulli(torch.full((chains, B.numel()), 0.5, dtype=torch.float64), generator=g)


def test_each_iteration_runs_the_cycles_kernel_and_retunes_every_few_cycles():
    """cycle_length 4, re-tune every 2 cycles: tunings at iterations 0 and 8; iteration t's kernel has
    alpha = max(alpha_max (cos(pi (t mod 4) / 4) + 1) / 2, alpha_min) and beta tied to it; tuning moves the
    chains, the other iterations start from the given rows unchanged."""
    acs = ACS(cycle_length=4, burn_in=20, alpha_max=3.0, alpha_min=0.1)
    schedule = ACSOverIterations(acs, retune_every=2)
    g = torch.Generator().manual_seed(1)
    for t in range(12):
        x = _x(t)
        kernel, x0 = schedule.prepare(t, x, _log_prob, g)
        assert schedule.retunes_at(t) == (t in (0, 8))
        assert schedule.tunings == (1 if t < 8 else 2)
        assert (x0 is x) == (t not in (0, 8))
        hi, lo = schedule.alpha_max, schedule.alpha_min
        assert 0.1 <= lo <= hi <= 3.0
        alpha = max(hi * (math.cos(math.pi * (t % 4) / 4) + 1) / 2, lo)
        assert kernel.step_size == pytest.approx(alpha)
        assert kernel.balance == pytest.approx(balancing_constant(alpha, hi, lo, acs.beta_max))
    assert schedule.kernel(0).step_size == pytest.approx(schedule.alpha_max)


def test_retuning_starts_from_the_initial_range_not_the_last_one():
    """The range tuned at a later cycle equals what a fresh schedule tunes from the same rows and generator
    state: nothing carries over from the previous tuning (no one-way ratchet of alpha_min / alpha_max)."""
    acs = ACS(cycle_length=2, burn_in=40)
    used = ACSOverIterations(acs)
    g = torch.Generator().manual_seed(3)
    used.prepare(0, _x(1), _log_prob, g)
    first = (used.alpha_max, used.alpha_min)
    state = g.get_state()
    used.prepare(2, _x(2), lambda x: 3.0 * _log_prob(x), g)
    fresh = ACSOverIterations(acs)
    fresh.prepare(0, _x(2), lambda x: 3.0 * _log_prob(x), torch.Generator().set_state(state))
    assert (used.alpha_max, used.alpha_min) == (fresh.alpha_max, fresh.alpha_min) != first


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"acs": ACS(burn_in=1)}, "burn_in >= 2"),
    ({"acs": "ACS"}, "must be an ACS sampler"),
    ({"retune_every": 0}, "retune_every must be an int >= 1"),
    ({"retune_every": 1.5}, "retune_every must be an int >= 1"),
])
def test_bad_settings_are_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ACSOverIterations(**kwargs)


def test_no_kernel_before_the_first_tuning_and_bad_states_are_refused():
    schedule = ACSOverIterations()
    with pytest.raises(RuntimeError, match="no tuned step-size range"):
        schedule.kernel(3)
    with pytest.raises(ValueError, match="bad range"):
        schedule.load_state_dict({"alpha_max": 0.1, "alpha_min": 1.0, "tunings": 1})
    with pytest.raises(ValueError, match="must have alpha_max"):
        schedule.load_state_dict({"alpha_max": 1.0})
    schedule.load_state_dict({"alpha_max": 2.0, "alpha_min": 0.5, "tunings": 3})
    assert schedule.kernel(0).step_size == 2.0 and schedule.state_dict()["tunings"] == 3


def _trainer(seed=0, data_transform=None):
    g = torch.Generator().manual_seed(2)
    data = torch.bernoulli(torch.full((50, 64), 0.3), generator=g)
    torch.manual_seed(0)
    model = ResNetEBM((8, 8), channels=4, num_blocks=2)
    schedule = ACSOverIterations(ACS(cycle_length=2, burn_in=4))
    return EBMTrainer(model, schedule, data, BernoulliBase(torch.zeros(64)), num_steps=2, batch_size=8,
                      buffer_size=16, lr=1e-3, warmup=2, ema_decay=0.9, data_transform=data_transform,
                      generator=torch.Generator().manual_seed(seed))


def test_the_tuned_range_is_checkpointed_and_a_resumed_run_is_identical(tmp_path):
    straight = _trainer()
    straight.train(6)
    first = _trainer()
    first.train(3)
    first.save(tmp_path / "ckpt.pt")
    resumed = _trainer(seed=99)  # another seed: the checkpoint's state wins
    resumed.load(tmp_path / "ckpt.pt")
    assert resumed.sampler.state_dict() == first.sampler.state_dict()
    resumed.train(6)
    assert straight.sampler.state_dict() == resumed.sampler.state_dict()
    assert straight.sampler.tunings == 3  # iterations 0, 2, 4
    for a, b in zip(straight.model.state_dict().values(), resumed.model.state_dict().values(), strict=True):
        assert torch.equal(a, b)
    assert torch.equal(straight.buffer, resumed.buffer)
    state = torch.load(tmp_path / "ckpt.pt", weights_only=True)
    state["sampler_state"] = None
    with pytest.raises(ValueError, match="no state for the sampler"):
        _trainer().load_state_dict(state)


def test_a_failed_iteration_leaves_the_tuned_range_as_it_was():
    """Iteration 2 re-tunes (cycle_length 2), then f(data batch) is NaN: the iteration fails and the schedule
    keeps the range of the last good iteration (the trainer's promise that a failed step changes nothing)."""
    poison = {"on": False}

    def transform(batch, _generator):
        return batch * float("nan") if poison["on"] else batch

    trainer = _trainer(data_transform=transform)
    trainer.train(2)
    before = trainer.sampler.state_dict()
    poison["on"] = True
    with pytest.raises(NonFiniteTrainingError, match="f\\(data batch\\)"):
        trainer.step()
    assert trainer.sampler.state_dict() == before and trainer.iteration == 2
