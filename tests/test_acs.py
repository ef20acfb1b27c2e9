"""ACS, the automatic cyclical sampler (gradmc.samplers.discrete.acs), is a cycle of exact kernels.

On the D = 8 RBM and pairwise model of test_sampler_exactness (float64, 256 states):
(a) for several fixed schedule positions (alpha, beta) the exact one-step matrix of ``ACSKernel`` (from
    ``transition_probabilities``, which shares the proposal, reverse and acceptance helpers with ``step``)
    has rows summing to 1, pi P = pi and detailed balance to 1e-10, and moves; beta = 1/2 is DMALA;
(b) the whole post-burn-in cycle, the product of its per-position matrices, leaves pi invariant, and the
    sampler's post-burn-in steps ARE the cycle's fixed kernels in order (identical draws);
(c) the real step (of the kernel and of the sampler at a cycle position) from a fixed state reproduces the
    enumerated row (chi-square, fixed seed);
(d) teeth: the reverse term dropped, or the reverse move computed with another beta or another alpha
    than the forward move, break pi P = pi by far more than 1e-4;
(e) the schedule: alpha_k against the closed-form cosine formula, beta_k tied to alpha_k; the burn-in
    tuning moves the range during burn-in and never after; bad arguments raise ValueError naming them.
"""

from __future__ import annotations

import math

import pytest
import torch
from _exact_targets import PairwiseBinary, binary_exact_targets
from test_sampler_exactness import P_MIN, STAT_TOL, TEETH_TOL, _chisquare_pvalue

from gradmc.samplers.discrete import make_sampler
from gradmc.samplers.discrete.acs import (
    ACS,
    ACS_ALPHA_MAX,
    ACS_ALPHA_MIN,
    ACS_BETA_MAX,
    ACS_BURN_IN,
    ACS_CYCLE_LENGTH,
    ACS_TARGET_ACCEPTANCE,
    ACSKernel,
    balancing_constant,
    cyclical_step_size,
)
from gradmc.samplers.discrete.factorised import DMALA
from gradmc.samplers.enumerate import detailed_balance_error, state_index, stationarity_error, transition_matrix

torch.set_num_threads(1)

D = 8
N_ROW = 40_000
POSITIONS = [(0.1, 0.5), (0.3, 0.5), (1.0, 0.75), (5.0, 0.95), (50.0, 1.0)]
# a short cycle whose last positions are truncated at alpha_min
CYCLE = ACS(cycle_length=6, alpha_max=4.0, alpha_min=0.5, beta_max=0.95, burn_in=0)


@pytest.fixture(scope="module")
def exact():
    """name -> (target, states (256, D), pi (256,)): the targets of test_sampler_exactness."""
    return binary_exact_targets(D)


def _matrix(kernel, target, states):
    return transition_matrix(lambda x: kernel.transition_probabilities(x, target), states)


# ---------------------------------------------------------------------------------------------------
# (a) fixed schedule positions


@pytest.mark.parametrize("target_name", ["rbm", "pairwise"])
@pytest.mark.parametrize("alpha,beta", POSITIONS)
def test_fixed_position_kernel_is_stationary_and_reversible(exact, target_name, alpha, beta):
    target, states, pi = exact[target_name]
    P = _matrix(ACSKernel(step_size=alpha, balance=beta), target, states)
    assert (P >= -1e-12).all()
    assert torch.allclose(P.sum(1), torch.ones_like(pi), rtol=0, atol=1e-12)
    stat, balance = stationarity_error(P, pi), detailed_balance_error(P, pi)
    move = float(1 - P.diagonal() @ pi)
    print(f"{target_name}/ACS(alpha={alpha}, beta={beta}): max|pi P - pi|={stat:.1e} "
          f"max|detailed balance|={balance:.1e} move prob={move:.3f}")
    assert stat < STAT_TOL
    assert balance < STAT_TOL
    assert move > (0.02 if alpha < 0.2 else 0.05)  # not the identity kernel


@pytest.mark.parametrize("alpha", [0.2, 1.0])
def test_balance_one_half_is_dmala(exact, alpha):
    target, states, _ = exact["rbm"]
    diff = float((_matrix(ACSKernel(alpha, 0.5), target, states) - _matrix(DMALA(alpha), target, states)).abs().max())
    print(f"rbm: max|P(ACS(alpha={alpha}, 1/2)) - P(DMALA(alpha={alpha}))|={diff:.1e}")
    assert diff < 1e-14


# ---------------------------------------------------------------------------------------------------
# (b) the post-burn-in cycle


@pytest.mark.parametrize("target_name", ["rbm", "pairwise"])
def test_whole_cycle_leaves_pi_invariant(exact, target_name):
    target, states, pi = exact[target_name]
    kernels = CYCLE.cycle(CYCLE.alpha_max, CYCLE.alpha_min)
    assert len({(k.step_size, k.balance) for k in kernels}) >= 4  # the positions differ
    product = torch.eye(len(pi), dtype=torch.float64)
    for kernel in kernels:
        P = _matrix(kernel, target, states)
        assert stationarity_error(P, pi) < STAT_TOL
        product = product @ P
    stat = stationarity_error(product, pi)
    print(f"{target_name}: cycle of {len(kernels)} positions, max|pi P_cycle - pi|={stat:.1e}")
    assert stat < STAT_TOL
    assert torch.allclose(product.sum(1), torch.ones_like(pi), rtol=0, atol=1e-12)


def test_post_burn_in_steps_are_the_cycle_kernels_in_order(exact):
    """After burn-in, step t of the sampler IS kernel_at(t - burn_in) of the frozen range (same draws)."""
    target, states, pi = exact["rbm"]
    sampler = ACS(cycle_length=5, burn_in=8, alpha_max=3.0, alpha_min=0.1)
    x0 = states[torch.multinomial(pi, 64, replacement=True, generator=torch.Generator().manual_seed(1))]
    state, gen = sampler.init(x0, target), torch.Generator().manual_seed(2)
    for _ in range(sampler.burn_in):
        state, _ = sampler.step(state, target, gen)
    assert state.frozen
    kernels = sampler.cycle(state.alpha_max, state.alpha_min)
    ref = kernels[0].init(state.x.clone(), target)
    for t in range(12):
        seed = 100 + t
        state, _ = sampler.step(state, target, torch.Generator().manual_seed(seed))
        ref, _ = kernels[t % 5].step(ref, target, torch.Generator().manual_seed(seed))
        assert torch.equal(state.x, ref.x)


# ---------------------------------------------------------------------------------------------------
# (c) step reproduces the enumerated row


def _assert_step_matches(kernel, target, x0, row, seed, label, advance: int = 0):
    gen = torch.Generator().manual_seed(seed)
    state = kernel.init(x0.expand(N_ROW, D).clone(), target)
    if advance:  # move a burn_in = 0 sampler to cycle position ``advance`` without moving the chains
        state = state._replace(num_steps=advance)
    state, info = kernel.step(state, target, gen)
    counts = torch.bincount(state_index(state.x), minlength=row.shape[0]).double()
    support = row > 1e-15
    assert counts[~support].sum() == 0
    p_value = _chisquare_pvalue(counts[support], N_ROW * row[support] / row[support].sum())
    print(f"{label}: row chi2 p={p_value:.3g} support={int(support.sum())} "
          f"accept={float(info.accepted.double().mean()):.3f}")
    assert p_value > P_MIN


def _row(kernel, target, x0, num_states):
    next_states, probs = kernel.transition_probabilities(x0, target)
    return torch.zeros(num_states, dtype=torch.float64).scatter_add_(0, state_index(next_states[0]), probs[0])


@pytest.mark.parametrize("alpha,beta", [(1.0, 0.75), (5.0, 0.95)])
def test_kernel_step_matches_enumerated_row(exact, alpha, beta):
    target, states, pi = exact["pairwise"]
    kernel = ACSKernel(alpha, beta)
    x0 = states[torch.argsort(pi)[3 * states.shape[0] // 4]][None]  # a fairly likely, not modal, state
    _assert_step_matches(kernel, target, x0, _row(kernel, target, x0, len(pi)), 900 + int(10 * alpha),
                         f"pairwise/ACS(alpha={alpha}, beta={beta})")


def test_sampler_step_at_a_cycle_position_matches_that_kernels_row(exact):
    target, states, pi = exact["rbm"]
    position = 2
    kernel = CYCLE.kernel_at(position, CYCLE.alpha_max, CYCLE.alpha_min)
    x0 = states[torch.argsort(pi)[3 * states.shape[0] // 4]][None]
    _assert_step_matches(CYCLE, target, x0, _row(kernel, target, x0, len(pi)), 950,
                         f"rbm/ACS cycle position {position} (alpha={kernel.step_size:.3f}, "
                         f"beta={kernel.balance:.3f})", advance=position)


# ---------------------------------------------------------------------------------------------------
# (d) teeth


class NoReverseTerm(ACSKernel):
    """WRONG: log alpha = f(x') - f(x) - log q(x'|x), the reverse proposal term dropped."""

    def log_acceptance(self, f_x, f_new, log_fwd, log_rev):
        return f_new - f_x - log_fwd


class ReverseOtherBalance(ACSKernel):
    """WRONG: the reverse move computed with beta = 1/2 (DMALA's) instead of the forward beta."""

    def log_reverse(self, x, grad_x, x_new, grad_new, mask):
        return self.log_proposal(*ACSKernel(self.step_size, 0.5).log_flip_probabilities(x_new, grad_new), mask)


class ReverseOtherStepSize(ACSKernel):
    """WRONG: the reverse move computed with half the forward alpha (the wrong "temperature")."""

    def log_reverse(self, x, grad_x, x_new, grad_new, mask):
        other = ACSKernel(self.step_size / 2, self.balance)
        return self.log_proposal(*other.log_flip_probabilities(x_new, grad_new), mask)


@pytest.mark.parametrize("target_name", ["rbm", "pairwise"])
@pytest.mark.parametrize("mutant", [NoReverseTerm, ReverseOtherBalance, ReverseOtherStepSize])
def test_mutated_kernel_fails_exact_check(exact, target_name, mutant):
    target, states, pi = exact[target_name]
    P = _matrix(mutant(step_size=1.0, balance=0.9), target, states)
    stat = stationarity_error(P, pi)
    print(f"{target_name}/{mutant.__name__}: max|pi P - pi|={stat:.1e}")
    assert stat > TEETH_TOL


# ---------------------------------------------------------------------------------------------------
# (e) schedule, tuning, arguments


def test_step_size_follows_the_cosine_formula():
    s, hi, lo = 7, 3.0, 0.4
    for k in range(3 * s):
        closed = max(hi * (math.cos(math.pi * (k % s) / s) + 1) / 2, lo)
        assert cyclical_step_size(k, s, hi, lo) == pytest.approx(closed, rel=1e-15)
    alphas = [cyclical_step_size(k, s, hi, lo) for k in range(s)]
    assert alphas[0] == hi and alphas[-1] == lo  # cos(6 pi / 7) + 1 = 0.099 -> 0.15 < alpha_min
    assert all(a >= b for a, b in zip(alphas[:-1], alphas[1:], strict=True))
    sampler = ACS(cycle_length=s, alpha_max=hi, alpha_min=lo, beta_max=0.9, burn_in=0)
    for k, kernel in enumerate(sampler.cycle(hi, lo)):
        assert kernel.step_size == alphas[k]
        assert kernel.balance == pytest.approx(0.5 + 0.4 * (alphas[k] - lo) / (hi - lo), rel=1e-15)
    assert sampler.cycle(hi, lo)[0].balance == pytest.approx(0.9) and sampler.cycle(hi, lo)[-1].balance == 0.5
    assert balancing_constant(1.0, 1.0, 1.0, 0.95) == 0.5


@pytest.fixture(scope="module")
def coupled():
    """A D = 32 dense pairwise model coupled strongly enough that the big (alpha = 5, beta = 0.95) step is
    accepted less often than the 0.5 target (on the D = 32 RBMs tried, its acceptance stays above 0.8 once
    the chains have settled, so the one-sided alpha_max tuning keeps 5 there); 64 chains from uniform bits."""
    g = torch.Generator().manual_seed(3)
    A = torch.randn(32, 32, generator=g, dtype=torch.float64) * 0.6
    model = PairwiseBinary(J=(A + A.T) / 2, b=torch.randn(32, generator=g, dtype=torch.float64))
    x0 = torch.bernoulli(torch.full((64, 32), 0.5, dtype=torch.float64), generator=g)
    return model, x0


def test_tuning_changes_the_range_during_burn_in_and_never_after(coupled):
    model, x0 = coupled
    sampler = ACS(cycle_length=10, burn_in=80)
    state, gen = sampler.init(x0, model), torch.Generator().manual_seed(5)
    ranges = []
    for _ in range(sampler.burn_in + 300):
        state, info = sampler.step(state, model, gen)
        ranges.append((state.alpha_min, state.alpha_max, state.frozen))
    half, end = sampler.min_steps, sampler.burn_in
    print(f"tuned alpha_min={state.alpha_min:.3f} (from {ACS_ALPHA_MIN}), alpha_max={state.alpha_max:.3f} "
          f"(from {ACS_ALPHA_MAX})")
    assert len({r[0] for r in ranges[:half]}) > 10  # alpha_min moves in the first half ...
    assert len({r[1] for r in ranges[:half]}) == 1  # ... alpha_max waits
    assert len({r[1] for r in ranges[half:end]}) > 10  # alpha_max moves in the second half
    assert ACS_ALPHA_MIN < state.alpha_min <= state.alpha_max < ACS_ALPHA_MAX
    assert not any(r[2] for r in ranges[:end - 1]) and all(r[2] for r in ranges[end - 1:])
    assert len(set(ranges[end - 1:])) == 1  # frozen: identical over 300 steps past burn-in
    assert state.tuning is None and state.num_steps == end + 300


def test_burn_in_zero_runs_the_initial_schedule_and_a_step_costs_one_evaluation(exact):
    model, states, _ = exact["rbm"]
    x0 = states[::4]
    sampler = ACS(cycle_length=4, burn_in=0, alpha_max=2.0, alpha_min=0.2)
    state, gen = sampler.init(x0, model), torch.Generator().manual_seed(6)
    assert state.frozen and (state.alpha_min, state.alpha_max) == (0.2, 2.0)
    for t in range(6):
        state, info = sampler.step(state, model, gen)
        assert info.energy_evals == (2 if t == 0 else 1)  # the first step after init evaluates x too
    assert (state.alpha_min, state.alpha_max) == (0.2, 2.0)


@pytest.mark.parametrize("kwargs,argument", [
    ({"cycle_length": 0}, "cycle_length"), ({"cycle_length": 2.5}, "cycle_length"),
    ({"alpha_max": -1.0}, "alpha_max"), ({"alpha_min": 0.0}, "alpha_min"), ({"alpha_min": math.nan}, "alpha_min"),
    ({"alpha_min": 6.0}, "alpha_min"), ({"beta_max": 0.4}, "beta_max"), ({"beta_max": 1.5}, "beta_max"),
    ({"burn_in": -1}, "burn_in"), ({"burn_in": 10.0}, "burn_in"), ({"target_acceptance": 1.0}, "target_acceptance"),
    ({"rate": 0.0}, "rate"), ({"decay": 2.0}, "decay"),
])
def test_bad_arguments_raise_naming_the_argument(kwargs, argument):
    with pytest.raises(ValueError, match=f"ACS {argument}"):
        ACS(**kwargs)
    with pytest.raises(ValueError, match=f"ACS {argument}"):
        make_sampler("ACS", **kwargs)


def test_bad_kernel_and_schedule_arguments():
    with pytest.raises(ValueError, match="step_size"):
        ACSKernel(step_size=0.0)
    with pytest.raises(ValueError, match="balance"):
        ACSKernel(step_size=1.0, balance=math.inf)
    with pytest.raises(ValueError, match="cycle_length"):
        cyclical_step_size(0, 0, 1.0, 0.1)
    with pytest.raises(ValueError, match="alpha_min"):
        cyclical_step_size(0, 5, 1.0, 2.0)
    with pytest.raises(ValueError, match="beta_max"):
        balancing_constant(0.5, 1.0, 0.1, 0.3)
    with pytest.raises(ValueError, match="alpha must be in"):
        balancing_constant(2.0, 1.0, 0.1, 0.9)


def test_registry_defaults_and_hyperparameters():
    sampler = make_sampler("ACS")
    assert sampler.name == "ACS" and isinstance(sampler, ACS)
    assert (sampler.cycle_length, sampler.alpha_max, sampler.alpha_min, sampler.beta_max, sampler.burn_in,
            sampler.target_acceptance) == (ACS_CYCLE_LENGTH, ACS_ALPHA_MAX, ACS_ALPHA_MIN, ACS_BETA_MAX,
                                           ACS_BURN_IN, ACS_TARGET_ACCEPTANCE) == (20, 5.0, 0.05, 0.95, 200, 0.5)
    assert make_sampler("ACS", cycle_length=10, burn_in=0).cycle_length == 10
    with pytest.raises(ValueError, match="ACS takes only"):
        make_sampler("ACS", step_size=0.1)
