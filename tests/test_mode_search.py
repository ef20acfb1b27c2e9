"""The mode search that tightens the hard log Z bound (gradmc.evaluation.mode_search), against exact enumeration."""

from __future__ import annotations

import itertools
import math

import pytest
import torch

from gradmc.evaluation.ais import log_z_lower_bound
from gradmc.evaluation.mode_search import search_modes
from gradmc.samplers.discrete.registry import make_sampler

D = 10


def _quadratic(seed: int = 0):
    """f(x) = b.x + x^T W x / 2 on {0,1}^10 with sharp couplings: a handful of states carry most of the mass."""
    gen = torch.Generator().manual_seed(seed)
    w = torch.randn(D, D, generator=gen, dtype=torch.float64) * 1.5
    w = (w + w.t()) / 2
    w.fill_diagonal_(0.0)
    b = torch.randn(D, generator=gen, dtype=torch.float64)

    def f(x: torch.Tensor) -> torch.Tensor:
        x = x.double()
        return x @ b + 0.5 * ((x @ w) * x).sum(-1)
    return f


def _all_states() -> torch.Tensor:
    return torch.tensor(list(itertools.product([0.0, 1.0], repeat=D)))


def test_a_cold_search_from_a_poor_start_finds_the_exact_mode_and_tightens_the_bound():
    f = _quadratic()
    states = _all_states()
    values = f(states)
    exact_log_z, best = float(torch.logsumexp(values, 0)), int(values.argmax())
    worst = states[values.argsort()[:8]]  # start at the 8 lowest-f states: far from the mass
    found = search_modes(f, worst, make_sampler("GWG"), steps=200, temperature=0.2,
                         generator=torch.Generator().manual_seed(1))
    assert found.shape == (201 * 8, D) and found.dtype == torch.bool
    assert bool((found == states[best].bool()).all(-1).any())  # the exact mode was visited
    before = log_z_lower_bound(f, worst)
    after = log_z_lower_bound(f, torch.cat([worst, found.float()]))
    assert after <= exact_log_z + 1e-9  # a bound over any states never exceeds the exact log Z
    assert after >= float(values.max()) and after > before + 5.0
    assert exact_log_z - after < 1.0  # the mode and its neighbours hold nearly all the mass here


def test_zero_steps_returns_the_start_and_bad_arguments_are_refused():
    f = _quadratic()
    start = _all_states()[:3]
    same = search_modes(f, start, make_sampler("GWG"), steps=0, temperature=1.0)
    assert torch.equal(same, start.bool())
    for bad in (dict(steps=-1, temperature=1.0), dict(steps=1.5, temperature=1.0),
                dict(steps=3, temperature=0.0), dict(steps=3, temperature=math.inf)):
        with pytest.raises(ValueError, match="steps|temperature"):
            search_modes(f, start, make_sampler("GWG"), **bad)
    with pytest.raises(ValueError, match="at least one start state"):
        search_modes(f, start[:0], make_sampler("GWG"), steps=1, temperature=1.0)


def test_a_model_returning_nan_is_refused():
    def broken(x: torch.Tensor) -> torch.Tensor:
        return x.sum(-1) * float("nan")
    with pytest.raises(ValueError):
        search_modes(broken, _all_states()[:4], make_sampler("GWG"), steps=2, temperature=1.0)
