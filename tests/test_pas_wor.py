"""PAS without replacement (gradmc.samplers.discrete.pas_wor) leaves its target invariant.

On the D = 8 RBM and pairwise model of test_sampler_exactness (float64, 256 states):
(a) for L = 1, 2, 3 the exact one-step matrix from ``transition_probabilities`` (every ordered sequence of L
    distinct sites, sharing the sequence density and the acceptance with ``step``) has rows summing to 1,
    pi P = pi and detailed balance to 1e-10, moves, and reaches states exactly L flips away (no nearer ones);
    L = 1 is GWG at temperature 2 (identical matrices), and its ``step`` makes exactly GWG's draws;
(b) the real ``step`` from a fixed state reproduces the enumerated row (chi-square, fixed seed);
(c) teeth: the reverse term dropped, scored with the gradient at the start, or the sequence scored as if drawn
    WITH replacement (no renormalisation after each draw) breaks pi P = pi by far more than 1e-4;
(d) a cached step costs one function+gradient evaluation, and three cached steps on the RBM (each drawing from
    the proposal the step before kept) reproduce a row of P^3; bad arguments raise; adapt keeps L <= D;
(e) the fast computations of ``step`` equal the reference ones by definition: sequence log-probabilities,
    the draw from the same uniforms, and the draw's distribution (chi-square against the enumerated sequence
    probabilities), on random and extreme logits.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import pytest
import torch
from _exact_targets import binary_exact_targets
from test_pas import N_ROW, D, _matrix
from test_sampler_exactness import P_MIN, STAT_TOL, TEETH_TOL, _chisquare_pvalue

from gradmc.core.gradients import log_prob_and_grad
from gradmc.samplers.discrete import GWG, PASWithoutReplacement, make_sampler
from gradmc.samplers.discrete.pas_wor import (
    _fast_draw_wor,
    _fast_log_wor,
    reference_draw_wor,
    reference_log_wor_probability,
)
from gradmc.samplers.enumerate import detailed_balance_error, state_index, stationarity_error

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def exact():
    """name -> (target, states (256, D), pi (256,)): the targets of test_sampler_exactness."""
    return binary_exact_targets(D)

# ---------------------------------------------------------------------------------------------------
# (a) exact matrices


@pytest.mark.parametrize("target_name", ["rbm", "pairwise"])
@pytest.mark.parametrize("length", [1, 2, 3])
def test_exact_kernel_is_stationary_and_reversible(exact, target_name, length):
    target, states, pi = exact[target_name]
    P = _matrix(PASWithoutReplacement(length), target, states)
    assert (P >= -1e-12).all()
    assert torch.allclose(P.sum(1), torch.ones(len(pi), dtype=torch.float64), rtol=0, atol=1e-12)
    stat, balance = stationarity_error(P, pi), detailed_balance_error(P, pi)
    move = float(1 - P.diagonal() @ pi)
    print(f"{target_name}/PAS-{length}-wor: max|pi P - pi|={stat:.1e} max|detailed balance|={balance:.1e} "
          f"move prob={move:.3f}")
    assert stat < STAT_TOL
    assert balance < STAT_TOL
    assert move > 0.05
    distance = (states[:, None, :] != states[None, :, :]).sum(-1)
    assert float(P[distance == length].max()) > 1e-3
    assert float(P[(distance != length) & (distance != 0)].abs().max()) == 0.0  # exactly L distinct flips


@pytest.mark.parametrize("target_name", ["rbm", "pairwise"])
def test_length_one_is_gwg(exact, target_name):
    target, states, pi = exact[target_name]
    P = _matrix(PASWithoutReplacement(1), target, states)
    diff = float((P - _matrix(GWG(temperature=2.0), target, states)).abs().max())
    print(f"{target_name}: max|P(PAS-1-wor) - P(GWG)|={diff:.1e}")
    assert diff < 1e-14


def test_length_one_step_makes_gwg_draws(exact):
    target, states, pi = exact["rbm"]
    x0 = states[torch.multinomial(pi, 2000, replacement=True, generator=torch.Generator().manual_seed(1))]
    out = []
    for kernel in (PASWithoutReplacement(1), GWG()):
        state, gen = kernel.init(x0, target), torch.Generator().manual_seed(2)
        for _ in range(5):
            state, info = kernel.step(state, target, gen)
        out.append((state.x, info.acceptance_prob))
    assert torch.equal(out[0][0], out[1][0])
    assert torch.allclose(out[0][1], out[1][1], rtol=0, atol=1e-12)


# ---------------------------------------------------------------------------------------------------
# (b) the real step reproduces the enumerated row


@pytest.mark.parametrize("length", [2, 3])
def test_step_matches_enumerated_row(exact, length):
    target, states, pi = exact["pairwise"]
    x0 = states[torch.argsort(pi)[3 * len(pi) // 4]][None]  # a fairly likely, not modal, state
    kernel = PASWithoutReplacement(length)
    next_states, probs = kernel.transition_probabilities(x0, target)
    row = torch.zeros(len(pi), dtype=torch.float64).scatter_add_(0, state_index(next_states[0]), probs[0])
    gen = torch.Generator().manual_seed(610 + length)
    state = kernel.init(x0.expand(N_ROW, D).clone(), target)
    state, info = kernel.step(state, target, gen)
    counts = torch.bincount(state_index(state.x), minlength=len(pi)).double()
    support = row > 1e-15
    assert counts[~support].sum() == 0
    p_value = _chisquare_pvalue(counts[support], N_ROW * row[support])
    print(f"pairwise/PAS-{length}-wor: row chi2 p={p_value:.3g} support={int(support.sum())} "
          f"stay prob={float(row[state_index(x0)[0]]):.3f}")
    assert p_value > P_MIN
    assert torch.equal(info.sites_changed, (state.x != x0).sum(1))
    assert set(info.sites_changed.tolist()) == {0, length}


# ---------------------------------------------------------------------------------------------------
# (c) teeth: the mutation sits in log_acceptance, shared by step and transition_probabilities

MUTATIONS = ("no_reverse", "reverse_at_start", "with_replacement_density")


def _with_replacement_log_prob(logits, sites):
    """The sequence scored as L independent draws from the full softmax (what an approximation would do)."""
    return (logits.gather(1, sites) - torch.logsumexp(logits, -1, keepdim=True)).sum(1)


@dataclass(frozen=True)
class MutatedPASWithoutReplacement(PASWithoutReplacement):
    """Deliberately WRONG acceptance ratios: no_reverse drops log q_{x'}(reversed sequence); reverse_at_start
    scores it with grad f(x) instead of grad f(x'); with_replacement_density scores both sequences without the
    renormalisation after each draw."""

    mutation: str = "no_reverse"

    def log_acceptance(self, x, sites, f_x, grad_x, f_new, grad_new):
        x_new = x.scatter(1, sites, 1.0 - x.gather(1, sites))
        fwd_logits, rev_logits = self.proposal_logits(x, grad_x), self.proposal_logits(x_new, grad_new)
        if self.mutation == "no_reverse":
            return f_new - f_x - self.log_path_probability(fwd_logits, sites)
        if self.mutation == "reverse_at_start":
            rev_logits = self.proposal_logits(x_new, grad_x)
        if self.mutation == "with_replacement_density":
            score = _with_replacement_log_prob
        else:
            score = self.log_path_probability
        return f_new - f_x + score(rev_logits, sites.flip(1)) - score(fwd_logits, sites)


@pytest.mark.parametrize("target_name", ["rbm", "pairwise"])
@pytest.mark.parametrize("mutation", MUTATIONS)
def test_mutated_kernels_are_not_invariant(exact, target_name, mutation):
    target, states, pi = exact[target_name]
    errs = {}
    for length in (2, 3):
        P = _matrix(MutatedPASWithoutReplacement(length, mutation=mutation), target, states)
        assert torch.allclose(P.sum(1), torch.ones(len(pi), dtype=torch.float64), rtol=0, atol=1e-12)
        errs[length] = stationarity_error(P, pi)
    print(f"{target_name}/{mutation}: max|pi P - pi| = "
          + ", ".join(f"PAS-{r}-wor: {e:.2e}" for r, e in errs.items()))
    assert min(errs.values()) > 10 * TEETH_TOL


def test_mutation_reaches_step(exact):
    """The mutated acceptance is what ``step`` uses: its acceptance probabilities differ from the kernel's."""
    target, states, pi = exact["pairwise"]
    x0 = states[torch.multinomial(pi, 500, replacement=True, generator=torch.Generator().manual_seed(3))]
    accs = []
    for kernel in (PASWithoutReplacement(3), MutatedPASWithoutReplacement(3, mutation="reverse_at_start")):
        _, info = kernel.step(kernel.init(x0, target), target, torch.Generator().manual_seed(4))
        accs.append(info.acceptance_prob)
    assert float((accs[0] - accs[1]).abs().max()) > 1e-3


# ---------------------------------------------------------------------------------------------------
# (d) cost, registry, arguments


def test_cached_step_costs_one_evaluation(exact):
    target, states, pi = exact["rbm"]
    kernel = PASWithoutReplacement(3)
    state, gen = kernel.init(states[:64].clone(), target), torch.Generator().manual_seed(5)
    state, info = kernel.step(state, target, gen)
    assert info.energy_evals == info.grad_evals == 2  # the first step counts init's evaluation
    for _ in range(3):
        state, info = kernel.step(state, target, gen)
        assert info.energy_evals == info.grad_evals == 1
        assert torch.allclose(state.log_prob, target(state.x).detach(), rtol=0, atol=1e-10)


def test_registry_and_arguments(exact):
    assert make_sampler("PAS-3-wor") == PASWithoutReplacement(path_length=3)
    assert make_sampler("PAS-2-wor").name == "PAS-2-wor"
    assert make_sampler("PAS-3") != make_sampler("PAS-3-wor")
    for bad in (0, -1, 2.0, True):
        with pytest.raises(ValueError, match="path_length"):
            PASWithoutReplacement(path_length=bad)
    with pytest.raises(ValueError, match="temperature"):
        PASWithoutReplacement(temperature=0.0)
    target, states, pi = exact["rbm"]
    kernel = PASWithoutReplacement(9)
    with pytest.raises(ValueError, match=r"PAS-9-wor flips 9 distinct bits, but the states have only 8"):
        kernel.step(kernel.init(states[:4].clone(), target), target, torch.Generator().manual_seed(0))


# ---------------------------------------------------------------------------------------------------
# (e) the fast computations equal the reference ones


def _random_logits(C, D, scale, dtype, gen):
    """(C, D) logits: Gaussian of std ``scale``, with planted extremes +-80 and one dominant entry in some rows
    (a drawn site then held nearly all the mass: the fast path's fallback rows)."""
    logits = torch.randn(C, D, generator=gen, dtype=torch.float64) * scale
    logits[::7, 3] = 80.0
    logits[::11, 2] = -80.0
    logits[1::5, 0] = 40.0
    return logits.to(dtype)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("length", [1, 2, 3, 4])
def test_fast_probabilities_and_draws_match_reference(dtype, length):
    gen = torch.Generator().manual_seed(720 + length)
    C, D = 3000, 8
    for scale in (0.5, 5.0, 80.0):
        logits = _random_logits(C, D, scale, dtype, gen)
        sites = torch.rand(C, D, generator=gen).argsort(1)[:, :length]  # distinct sites in random order
        u = torch.rand(C, length, generator=gen, dtype=torch.float64)
        drawn, log_drawn = _fast_draw_wor(logits, u)
        assert drawn.shape == (C, length) and log_drawn.shape == (C,)
        assert ((drawn[:, :, None] == drawn[:, None, :]).sum((1, 2)) == length).all()  # distinct in every row
        for path, fast in ((sites, _fast_log_wor(logits, sites)), (drawn, log_drawn)):
            want = reference_log_wor_probability(logits.double(), path)
            err = float(((fast.double() - want).abs() / want.abs().clamp(min=1.0)).max())
            if dtype == torch.float64:
                assert err < 1e-9, (scale, err)
            else:  # no further from the float64 value than the float32 reference computation
                ref32 = reference_log_wor_probability(logits, path).double()
                err32 = float(((ref32 - want).abs() / want.abs().clamp(min=1.0)).max())
                assert err < 3 * err32 + 1e-6, (scale, err, err32)
        same = (drawn == reference_draw_wor(logits, u)).all(1)
        # the reference normalises each draw's weights by the remaining maximum, so it rounds differently at
        # the boundaries of the CDF's intervals
        assert float(same.double().mean()) > 0.999, (scale, float(same.double().mean()))


def test_draw_sites_uses_the_generator_like_the_reference(exact):
    """draw_sites takes one (C, L) float64 uniform draw from the generator and inverts like the reference."""
    target, states, pi = exact["rbm"]
    kernel = PASWithoutReplacement(3)
    x = states[torch.randint(0, len(states), (500,), generator=torch.Generator().manual_seed(6))]
    _, grad = log_prob_and_grad(target, x)
    gen, twin = torch.Generator().manual_seed(7), torch.Generator().manual_seed(7)
    sites = kernel.draw_sites(x, grad, gen)
    u = torch.rand(500, 3, generator=twin, dtype=torch.float64)
    assert torch.equal(sites, reference_draw_wor(kernel.proposal_logits(x, grad), u))
    assert torch.equal(gen.get_state(), twin.get_state())


@pytest.mark.parametrize("length", [2, 3])
@pytest.mark.parametrize("row", ["spread", "peaked"])
def test_fast_draw_has_the_sequence_distribution(length, row):
    """Chi-square of 200,000 fast draws against the enumerated sequence probabilities of one row; "peaked" has
    a site of nearly all the mass, so the draws after it take the fast path's exact fallback."""
    D, N = 5, 200_000
    logits = {"spread": torch.tensor([0.3, -1.0, 1.2, 0.0, -0.4]),
              "peaked": torch.tensor([20.0, 0.5, 0.0, -40.0, -1.0])}[row].double()
    paths = torch.tensor(list(itertools.permutations(range(D), length)))  # (M, L)
    probs = reference_log_wor_probability(logits.expand(len(paths), D), paths).exp()
    assert abs(float(probs.sum()) - 1.0) < 1e-12
    u = torch.rand(N, length, generator=torch.Generator().manual_seed(820 + length), dtype=torch.float64)
    sites, log_prob = _fast_draw_wor(logits.expand(N, D), u)
    codes = (paths * D ** torch.arange(length - 1, -1, -1)).sum(1)
    index = torch.searchsorted(codes, (sites * D ** torch.arange(length - 1, -1, -1)).sum(1))  # row of ``paths``
    assert torch.equal(paths[index], sites)
    assert torch.allclose(log_prob, probs.log()[index], rtol=0, atol=1e-9)
    counts = torch.bincount(index, minlength=len(paths)).double()
    p_value = _chisquare_pvalue(counts, N * probs)
    print(f"{row}/PAS-{length}-wor: fast draw chi2 p={p_value:.3g}")
    assert p_value > P_MIN


def test_adapted_path_length_stays_within_the_bits():
    """adapt raises L while the acceptance is above 0.574; on a near-flat 8-bit RBM it would pass D = 8, which
    L distinct flips cannot: the bound D (``adapt_upper``) holds it there, where the with-replacement PAS-3
    goes beyond D."""
    from gradmc.targets import RBM

    target = RBM(8, 4, weight_std=0.01, generator=torch.Generator().manual_seed(0)).double()
    x = (torch.rand(64, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(1)) < 0.5).double()
    values = {}
    for name in ("PAS-3(adapt=300)", "PAS-3-wor(adapt=300)"):
        kernel, gen = make_sampler(name), torch.Generator().manual_seed(2)
        state = kernel.init(x, target)
        for _ in range(300):
            state, info = kernel.step(state, target, gen)
        values[name] = state.value
    assert values["PAS-3(adapt=300)"] > 8  # the bound matters here
    assert values["PAS-3-wor(adapt=300)"] == 8
    with pytest.raises(ValueError, match="upper=2"):
        make_sampler("PAS-3-wor(adapt=10)").init(x[:, :2].contiguous(), RBM(2, 2).double())


def test_cached_steps_match_the_matrix_power(exact):
    """On the cacheable RBM the second and third steps draw from the proposal the step before kept (rejected
    rows included): three steps from a fixed state reproduce that state's row of P^3 (chi-square)."""
    target, states, pi = exact["rbm"]
    kernel = PASWithoutReplacement(2)
    P = _matrix(kernel, target, states)
    x0 = states[torch.argsort(pi)[len(pi) // 2]][None]
    row = torch.linalg.matrix_power(P, 3)[state_index(x0)[0]]
    state, gen = kernel.init(x0.expand(N_ROW, D).clone(), target), torch.Generator().manual_seed(640)
    for _ in range(3):
        state, info = kernel.step(state, target, gen)
    assert info.energy_evals == 1 and state.proposal is not None  # the kept proposal was used
    counts = torch.bincount(state_index(state.x), minlength=len(pi)).double()
    support = row > 1e-15
    assert counts[~support].sum() == 0
    p_value = _chisquare_pvalue(counts[support], N_ROW * row[support])
    print(f"rbm/PAS-2-wor: 3-step chi2 p={p_value:.3g} acceptance={float(info.acceptance_prob.mean()):.2f}")
    assert p_value > P_MIN
