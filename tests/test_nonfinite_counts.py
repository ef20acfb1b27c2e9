"""Rejected non-finite proposals are counted, per chain, in ``Info.nonfinite_proposals`` (gradmc.samplers.base), the
experiments record and warn about them (gradmc.experiments.runner), and a target edited through ``.data`` is caught.

The targets trap some chains in a non-finite region: "trapped" chains start at the all-zero state, every state
at Hamming distance 1 to D / 2 from it has log_prob NaN, the rest are finite; so every move of a trapped chain
but a jump of more than D / 2 sites is a NaN proposal. "Free" chains start at the all-ones state, which no kernel
here leaves by D / 2 sites in one step, and a field on their side keeps them near it, so no free chain ever proposes
a NaN state.
"""

from __future__ import annotations

import math
import warnings

import pytest
import torch
from _nan_rbm import NaNRowsBlockGibbs
from test_nonfinite import BINARY_NAMES, CATEGORICAL_NAMES, HYPER, init

from gradmc.core.incremental import PROBE_EVERY, StaleTargetError
from gradmc.experiments.runner import (
    NONFINITE_CHAIN,
    NONFINITE_STEPS,
    NonFiniteProposalWarning,
    StepClock,
    ess_rows,
    tidy_frame,
    warn_nonfinite,
)
from gradmc.samplers import NonFiniteError
from gradmc.samplers.base import count_nonfinite
from gradmc.samplers.discrete import make_sampler
from gradmc.targets import RBM

DIM, HIDDEN, SITES, VALUES = 16, 3, 8, 3
CHAINS = 8
TRAPPED = torch.arange(CHAINS) % 2 == 0  # chains 0, 2, 4, 6 start at the trap
STEPS = 60
#: the field towards the free chains' start (all ones, all value 1), per site, on the free side only
FIELD = 3.0


def _hold(n: torch.Tensor, size: int) -> torch.Tensor:
    """FIELD * max(0, n - size / 2): holds the free chains near their start, flat (no pull) at the trap."""
    return FIELD * torch.relu(n - size // 2)
#: kernels that meet the non-finite values where they cannot reject them and raise by design: the Gibbs-type
#: kernels score every candidate of a block exactly (a NaN candidate is a broken conditional), D-SVGD moves every
#: particle deterministically, BlockGibbs samples the RBM's own conditionals (NaN there on the trap's neighbours)
RAISES = ("Gibbs", "HB-", "Block-HB", "BlockGibbs", "D-SVGD")


def _raises_by_design(name: str) -> bool:
    return name.startswith(RAISES)


def _skip_if_raises_by_design(name, kernel, state, target) -> None:
    """For a kernel that raises on non-finite candidates by design: check that it raises, then skip."""
    if not _raises_by_design(name):
        return
    with pytest.raises(NonFiniteError):
        gen = torch.Generator().manual_seed(11)
        for _ in range(STEPS):
            state, _ = kernel.step(state, target, gen)
    pytest.skip(f"{name} raises NonFiniteError on non-finite candidates by design (checked)")


def _moved_rule(moved: torch.Tensor, size: int, free: torch.Tensor) -> torch.Tensor:
    """log_prob ``free``, NaN where ``moved`` (the distance from the trap) is in [1, size / 2]."""
    return torch.where((moved >= 1) & (moved <= size // 2), torch.full((), math.nan, dtype=free.dtype), free)


class TrapRBM(NaNRowsBlockGibbs):
    """A small RBM with the trap of the module docstring on exactly binary rows (relaxed inputs in (0, 1), which the
    relaxed kernels' surrogates evaluate, stay finite); ``hidden_probs`` is NaN in the NaN region."""

    def __init__(self):
        self.rbm = RBM(DIM, HIDDEN, weight_std=0.5, generator=torch.Generator().manual_seed(0))

    def _binary(self, x):
        return ((x == 0) | (x == 1)).all(-1)

    def __call__(self, x):
        free = self.rbm(x) + _hold(x.sum(-1), DIM)
        moved = x.detach().sum(-1)
        return torch.where(self._binary(x.detach()), _moved_rule(moved, DIM, free), free)

    def nan_rows(self, x):
        return (x.sum(-1) >= 1) & (x.sum(-1) <= DIM // 2)


class TrapPotts:
    """A random pairwise model on one-hot (C, SITES, VALUES) with the trap in the number of sites not at value 0."""

    def __init__(self):
        g = torch.Generator().manual_seed(1)
        M = SITES * VALUES
        self.h = torch.randn(M, generator=g, dtype=torch.float64)
        J = 0.3 * torch.randn(M, M, generator=g, dtype=torch.float64)
        self.J = (J + J.T) / 2

    def __call__(self, x):
        xf = x.flatten(1)
        free = xf @ self.h + ((xf @ self.J) * xf).sum(1) + _hold(x[:, :, 1].sum(-1), SITES)
        moved = SITES - x.detach()[:, :, 0].sum(-1)
        return _moved_rule(moved, SITES, free)


def binary_start():
    return (~TRAPPED).double()[:, None].expand(CHAINS, DIM).float().contiguous()


def categorical_start():
    idx = torch.where(TRAPPED[:, None], 0, 1).expand(CHAINS, SITES)
    return torch.nn.functional.one_hot(idx, VALUES).double()


def _run_and_check(kernel, state, target, name, start_x, trap_of):
    gen = torch.Generator().manual_seed(11)
    total = torch.zeros(CHAINS, dtype=torch.long)
    for _ in range(STEPS):
        before = state.x.clone()
        state, info = kernel.step(state, target, gen)
        n = info.nonfinite_proposals
        assert isinstance(n, torch.Tensor) and n.dtype == torch.int64 and n.shape == (CHAINS,), name
        assert bool(((n == 0) | (n == 1)).all())
        # a counted proposal was rejected: the chain did not move
        assert not bool((info.accepted & (n > 0)).any()), name
        assert torch.equal(state.x[n > 0], before[n > 0]), name
        # never at a NaN state, and the trap's neighbours are never entered
        log_prob = state.log_prob if hasattr(state, "log_prob") else state.inner.log_prob  # ACS
        assert bool(torch.isfinite(log_prob).all()), name
        moved = trap_of(state.x)
        assert not bool(((moved >= 1) & (moved <= moved.new_tensor(start_x.shape[1] // 2))).any()), name
        total += n
    assert bool((total[TRAPPED] > 0).all()), (name, total)  # every trapped chain proposed its NaN neighbours
    assert bool((total[~TRAPPED] == 0).all()), (name, total)  # and no free chain ever did


def _binary_moved(x):
    return x.sum(-1)


def _categorical_moved(x):
    return SITES - x[:, :, 0].sum(-1)


@pytest.mark.parametrize("name", BINARY_NAMES)
def test_every_registry_kernel_counts_its_nonfinite_proposals(name):
    target = TrapRBM()
    kernel = make_sampler(name, target=target, **HYPER.get(name, {}))
    state = init(kernel, name, binary_start(), target)
    _skip_if_raises_by_design(name, kernel, state, target)
    _run_and_check(kernel, state, target, name, binary_start(), _binary_moved)


@pytest.mark.parametrize("name", CATEGORICAL_NAMES)
def test_every_categorical_registry_kernel_counts_its_nonfinite_proposals(name):
    target = TrapPotts()
    kernel = make_sampler(name, state="categorical")
    state = kernel.init(categorical_start(), target)
    _skip_if_raises_by_design(name, kernel, state, target)
    _run_and_check(kernel, state, target, name, categorical_start(), _categorical_moved)


def test_count_nonfinite_rules():
    f = torch.tensor([0.0, math.nan, math.inf, -math.inf, 0.0, 0.0, -math.inf])
    a = torch.tensor([-1.0, -1.0, -1.0, -math.inf, math.nan, math.inf, math.nan])
    assert count_nonfinite(f).tolist() == [0, 1, 1, 0, 0, 0, 0]
    assert count_nonfinite(f, a).tolist() == [0, 1, 1, 0, 1, 1, 1]
    assert count_nonfinite(f).dtype == torch.int64


def test_kernels_that_raise_by_design_report_zero():
    target = TrapRBM()
    kernel = make_sampler("Gibbs-1")
    state = kernel.init(torch.ones(4, DIM), target)
    _, info = kernel.step(state, target, torch.Generator().manual_seed(0))
    assert info.nonfinite_proposals == 0


# ---------------------------------------------------------------------------------------------------
# experiments: the column, the rows and one warning per sampler


def _shard_frame(sampler: str, seed: int):
    target = TrapRBM()
    kernel = make_sampler(sampler)
    clock = StepClock()
    state = kernel.init(binary_start(), target)
    gen = torch.Generator().manual_seed(seed)
    stat = torch.zeros(STEPS + 1, CHAINS)
    accept = torch.zeros(CHAINS)
    for t in range(STEPS):
        state, info = clock.step(kernel, state, target, gen)
        accept += info.acceptance_prob
        stat[t + 1] = state.x.sum(-1)
    rows = ess_rows(clock, stat, accept, sampler=sampler, seed=seed, burn_in_fraction=0.2)
    rows.append(("Target", -1, -1, 0, "reference", 1.0, 0, 0, 0.0))  # a row without the column: 0
    return tidy_frame(rows, "test", "trap"), clock


def test_shard_rows_record_nonfinite_proposals_and_warn_once_per_sampler():
    frames = {}
    for sampler in ("GWG", "RWM"):
        for seed in (0, 1):
            frames[sampler, seed], clock = _shard_frame(sampler, seed)
            df = frames[sampler, seed]
            assert df["nonfinite_proposals"].dtype == "int64"
            shard = df[df["sampler"] == sampler]
            assert int(shard["nonfinite_proposals"].max()) == clock.nonfinite_proposals > 0
            chains = shard.loc[shard["metric"] == NONFINITE_CHAIN, "chain"].tolist()
            assert chains == TRAPPED.nonzero().flatten().tolist()  # single-flip kernels: every step, trapped only
            assert shard.loc[shard["metric"] == NONFINITE_STEPS, "value"].tolist() == [STEPS]
            assert int(df.loc[df["sampler"] == "Target", "nonfinite_proposals"].iloc[0]) == 0
    import pandas as pd

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warn_nonfinite(pd.concat(list(frames.values()), ignore_index=True))
    messages = [str(w.message) for w in caught if issubclass(w.category, NonFiniteProposalWarning)]
    assert len(messages) == 2, messages
    gwg = next(m for m in messages if m.startswith("GWG:"))
    assert f"in {2 * STEPS} steps, 8 chains (seed:chain) [0:0, 0:2, 0:4, 0:6, 1:0, 1:2, 1:4, 1:6]" in gwg, gwg


def test_clean_run_has_zero_column_and_no_warning():
    target = RBM(DIM, HIDDEN, weight_std=0.5, generator=torch.Generator().manual_seed(0))
    kernel, clock = make_sampler("DMALA"), StepClock()
    state = kernel.init(binary_start(), target)
    gen = torch.Generator().manual_seed(0)
    for _ in range(5):
        state, _ = clock.step(kernel, state, target, gen)
    df = tidy_frame([clock.row("DMALA", 0, -1, "x", 1.0)], "test", "rbm")
    assert clock.nonfinite_rows("DMALA", 0) == [] and df["nonfinite_proposals"].tolist() == [0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warn_nonfinite(df)


# ---------------------------------------------------------------------------------------------------
# a target edited through ``.data`` (no version counter bump) is caught at the next step


@pytest.mark.parametrize("edit", ["copy", "mul", "assign_same_storage"])
@pytest.mark.parametrize("name", ["GWG", "DMALA", "PAS-3", "Gibbs-1"])
def test_data_edit_of_a_cached_target_is_caught_within_a_few_steps(name, edit):
    rbm = RBM(20, 6, weight_std=0.5, generator=torch.Generator().manual_seed(2)).requires_grad_(False)
    kernel = make_sampler(name)
    gen = torch.Generator().manual_seed(3)
    state = kernel.init(torch.bernoulli(torch.full((4, 20), 0.5), generator=gen), rbm)
    for _ in range(3):
        state, _ = kernel.step(state, rbm, gen)
    new = torch.randn(6, 20, generator=gen)
    if edit == "copy":
        rbm.W.data.copy_(new)
    elif edit == "mul":
        rbm.W.data.mul_(1.5)
    else:  # a tensor viewing the same storage, assigned through .data
        rbm.W.data = rbm.W.data.view(6, 20).copy_(new)
    with pytest.raises(StaleTargetError, match=r"under torch.no_grad\(\) \(param.copy_\(\.\.\.\)\)") as info:
        for _ in range(2 * PROBE_EVERY):  # the probes are read every PROBE_EVERY steps
            state, _ = kernel.step(state, rbm, gen)
    assert "W" in str(info.value) and "RBM" in str(info.value)


@pytest.mark.parametrize("name", ["GWG", "DMALA"])
def test_recommended_edit_is_seen_and_sampling_continues(name):
    rbm = RBM(20, 6, weight_std=0.5, generator=torch.Generator().manual_seed(2)).requires_grad_(False)
    kernel = make_sampler(name)
    gen = torch.Generator().manual_seed(3)
    state = kernel.init(torch.bernoulli(torch.full((4, 20), 0.5), generator=gen), rbm)
    state, _ = kernel.step(state, rbm, gen)
    with torch.no_grad():
        rbm.W.copy_(torch.randn(6, 20, generator=gen))
    for _ in range(3):
        state, _ = kernel.step(state, rbm, gen)
    torch.testing.assert_close(state.cache.log_prob, rbm(state.x))
