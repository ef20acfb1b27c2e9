"""The path auxiliary sampler PAS (gradmc.samplers.discrete.pas) leaves its target invariant.

On the D = 8 RBM and pairwise model of test_sampler_exactness (float64, 256 states):
(a) for path lengths R = 1, 2, 3 the exact one-step matrix from ``transition_probabilities`` (which
    shares the path density and the acceptance with ``step``) has rows summing to 1, pi P = pi and
    detailed balance to 1e-10, and moves; PAS-1 is GWG at temperature 2 (identical matrices), and its
    ``step`` makes exactly GWG's draws;
(b) the real ``step`` from a fixed state reproduces the enumerated row (chi-square, fixed seed);
(c) teeth: a reverse-path term dropped, scored with the gradient at the start instead of the end point,
    or at the wrong temperature, breaks pi P = pi by far more than 1e-4;
(d) a cached step costs one function+gradient evaluation;
(e) the fast path computations of ``step`` (O(C D) per step) equal the reference ones by definition
    (O(C L D)): path log-probabilities forward and reverse, the draw from the same uniforms, and the draw's
    path distribution (chi-square against the enumerated path probabilities), on random and extreme logits.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import pytest
import torch
from _exact_targets import binary_exact_targets
from test_sampler_exactness import P_MIN, STAT_TOL, TEETH_TOL, _chisquare_pvalue

from gradmc.core.gradients import log_prob_and_grad
from gradmc.samplers.discrete import GWG, PAS, make_sampler
from gradmc.samplers.discrete.pas import _fast_draw_path, reference_draw_path, reference_log_path_probability
from gradmc.samplers.enumerate import detailed_balance_error, state_index, stationarity_error, transition_matrix

torch.set_num_threads(1)

D = 8
N_ROW = 40_000


@pytest.fixture(scope="module")
def exact():
    """name -> (target, states (256, D), pi (256,)): the targets of test_sampler_exactness."""
    return binary_exact_targets(D)


def _matrix(kernel, target, states):
    return transition_matrix(lambda x: kernel.transition_probabilities(x, target), states)


# ---------------------------------------------------------------------------------------------------
# (a) exact matrices


@pytest.mark.parametrize("target_name", ["rbm", "pairwise"])
@pytest.mark.parametrize("path_length", [1, 2, 3])
def test_exact_kernel_is_stationary_and_reversible(exact, target_name, path_length):
    target, states, pi = exact[target_name]
    P = _matrix(PAS(path_length), target, states)
    assert (P >= -1e-12).all()
    assert torch.allclose(P.sum(1), torch.ones(len(pi), dtype=torch.float64), rtol=0, atol=1e-12)
    stat, balance = stationarity_error(P, pi), detailed_balance_error(P, pi)
    move = float(1 - P.diagonal() @ pi)
    print(f"{target_name}/PAS-{path_length}: max|pi P - pi|={stat:.1e} max|detailed balance|={balance:.1e} "
          f"move prob={move:.3f}")
    assert stat < STAT_TOL
    assert balance < STAT_TOL
    assert move > 0.05
    if path_length > 1:  # reaches states more than one flip away
        far = (states[:, None, :] != states[None, :, :]).sum(-1) == path_length
        assert float(P[far].max()) > 1e-3


@pytest.mark.parametrize("target_name", ["rbm", "pairwise"])
def test_path_length_one_is_gwg(exact, target_name):
    target, states, pi = exact[target_name]
    diff = float((_matrix(PAS(1), target, states) - _matrix(GWG(temperature=2.0), target, states)).abs().max())
    print(f"{target_name}: max|P(PAS-1) - P(GWG)|={diff:.1e}")
    assert diff < 1e-14


def test_path_length_one_step_makes_gwg_draws(exact):
    target, states, pi = exact["rbm"]
    x0 = states[torch.multinomial(pi, 2000, replacement=True, generator=torch.Generator().manual_seed(1))]
    out = []
    for kernel in (PAS(1), GWG()):
        state, gen = kernel.init(x0, target), torch.Generator().manual_seed(2)
        for _ in range(5):
            state, info = kernel.step(state, target, gen)
        out.append((state.x, info.acceptance_prob))
    assert torch.equal(out[0][0], out[1][0])
    assert torch.allclose(out[0][1], out[1][1], rtol=0, atol=1e-12)


# ---------------------------------------------------------------------------------------------------
# (b) the real step reproduces the enumerated row


@pytest.mark.parametrize("path_length", [1, 2, 3])
def test_step_matches_enumerated_row(exact, path_length):
    target, states, pi = exact["pairwise"]
    x0 = states[torch.argsort(pi)[3 * len(pi) // 4]][None]  # a fairly likely, not modal, state
    kernel = PAS(path_length)
    next_states, probs = kernel.transition_probabilities(x0, target)
    row = torch.zeros(len(pi), dtype=torch.float64).scatter_add_(0, state_index(next_states[0]), probs[0])
    gen = torch.Generator().manual_seed(600 + path_length)
    state = kernel.init(x0.expand(N_ROW, D).clone(), target)
    state, info = kernel.step(state, target, gen)
    counts = torch.bincount(state_index(state.x), minlength=len(pi)).double()
    support = row > 1e-15
    assert counts[~support].sum() == 0
    p_value = _chisquare_pvalue(counts[support], N_ROW * row[support])
    print(f"pairwise/PAS-{path_length}: row chi2 p={p_value:.3g} support={int(support.sum())} "
          f"stay prob={float(row[state_index(x0)[0]]):.3f}")
    assert p_value > P_MIN
    assert int(info.sites_changed.max()) <= path_length
    assert torch.equal(info.sites_changed, (state.x != x0).sum(1))


# ---------------------------------------------------------------------------------------------------
# (c) teeth: the mutation sits in log_acceptance, shared by step and transition_probabilities

MUTATIONS = ("no_reverse", "reverse_at_start", "reverse_temperature")


@dataclass(frozen=True)
class MutatedPAS(PAS):
    """Deliberately WRONG PAS acceptance ratios:

    no_reverse: the reverse-path term log q_{x'}(reverse path) dropped;
    reverse_at_start: the reverse path scored with grad f(x) (the start) instead of grad f(x');
    reverse_temperature: the reverse path scored at temperature 1 while the forward one uses T = 2.
    """

    mutation: str = "no_reverse"

    def log_acceptance(self, x, sites, f_x, grad_x, f_new, grad_new):
        log_fwd = self.log_path_probability(self.proposal_logits(x, grad_x), sites, reverse=False)
        rev_logits = self.proposal_logits(x, grad_new)
        if self.mutation == "no_reverse":
            return f_new - f_x - log_fwd
        if self.mutation == "reverse_at_start":
            rev_logits = self.proposal_logits(x, grad_x)
        elif self.mutation == "reverse_temperature":
            rev_logits = rev_logits * self.temperature / 1.0
        return f_new - f_x + self.log_path_probability(rev_logits, sites, reverse=True) - log_fwd


@pytest.mark.parametrize("target_name", ["rbm", "pairwise"])
@pytest.mark.parametrize("mutation", MUTATIONS)
def test_mutated_kernels_are_not_invariant(exact, target_name, mutation):
    target, states, pi = exact[target_name]
    errs = {}
    for path_length in (2, 3):
        P = _matrix(MutatedPAS(path_length, mutation=mutation), target, states)
        assert torch.allclose(P.sum(1), torch.ones(len(pi), dtype=torch.float64), rtol=0, atol=1e-12)
        errs[path_length] = stationarity_error(P, pi)
    print(f"{target_name}/{mutation}: max|pi P - pi| = " + ", ".join(f"PAS-{r}: {e:.2e}" for r, e in errs.items()))
    assert min(errs.values()) > 10 * TEETH_TOL


def test_mutation_reaches_step(exact):
    """The mutated acceptance is what ``step`` uses: its acceptance probabilities differ from PAS's."""
    target, states, pi = exact["pairwise"]
    x0 = states[torch.multinomial(pi, 500, replacement=True, generator=torch.Generator().manual_seed(3))]
    accs = []
    for kernel in (PAS(3), MutatedPAS(3, mutation="reverse_at_start")):
        _, info = kernel.step(kernel.init(x0, target), target, torch.Generator().manual_seed(4))
        accs.append(info.acceptance_prob)
    assert float((accs[0] - accs[1]).abs().max()) > 1e-3


# ---------------------------------------------------------------------------------------------------
# (d) cost, registry, arguments


def test_cached_step_costs_one_evaluation(exact):
    target, states, pi = exact["rbm"]
    kernel = PAS(3)
    state, gen = kernel.init(states[:64].clone(), target), torch.Generator().manual_seed(5)
    state, info = kernel.step(state, target, gen)
    assert info.energy_evals == info.grad_evals == 2  # the first step counts init's evaluation
    for _ in range(3):
        state, info = kernel.step(state, target, gen)
        assert info.energy_evals == info.grad_evals == 1
        f = target(state.x).detach()
        assert torch.allclose(state.log_prob, f, rtol=0, atol=1e-10)


def test_registry_and_arguments():
    assert make_sampler("PAS-3") == PAS(path_length=3)
    assert make_sampler("PAS-1").name == "PAS-1"
    for bad in (0, -1, 2.0, True):
        with pytest.raises(ValueError, match="path_length"):
            PAS(path_length=bad)
    with pytest.raises(ValueError, match="temperature"):
        PAS(temperature=0.0)


# ---------------------------------------------------------------------------------------------------
# (e) the fast path computations equal the reference ones


def _random_logits(C, D, scale, dtype, gen):
    """(C, D) logits: Gaussian of std ``scale``, with planted extremes +-80 and one dominant entry per row in
    some rows (so a flipped-back site held nearly all the mass: the fast path's fallback rows)."""
    logits = torch.randn(C, D, generator=gen, dtype=torch.float64) * scale
    logits[::7, 3] = 80.0
    logits[::11, 2] = -80.0
    logits[1::5, 0] = 40.0
    return logits.to(dtype)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("path_length", [1, 2, 3, 4])
def test_fast_path_probabilities_match_reference(dtype, path_length):
    gen = torch.Generator().manual_seed(700 + path_length)
    kernel = PAS(path_length)
    C, D = 3000, 8
    for scale in (0.5, 5.0, 80.0):
        logits = _random_logits(C, D, scale, dtype, gen)
        sites = torch.randint(0, D, (C, path_length), generator=gen)
        sites[::3, -1] = sites[::3, 0]  # repeated sites
        sites[1::4, :] = sites[1::4, :1]
        u = torch.rand(C, path_length, generator=gen, dtype=torch.float64)
        drawn, log_drawn = _fast_draw_path(logits, u)
        cases = [(sites, False, kernel.log_path_probability(logits, sites, False)),
                 (sites, True, kernel.log_path_probability(logits, sites, True)),
                 (drawn, False, log_drawn)]
        for path, reverse, fast in cases:
            assert fast.shape == (C,)
            exact = reference_log_path_probability(logits.double(), path, reverse)
            err = float(((fast.double() - exact).abs() / exact.abs().clamp(min=1.0)).max())
            if dtype == torch.float64:
                assert err < 1e-9, (scale, reverse, err)
            else:  # no further from the float64 value than the float32 reference computation
                ref32 = reference_log_path_probability(logits, path, reverse).double()
                err32 = float(((ref32 - exact).abs() / exact.abs().clamp(min=1.0)).max())
                assert err < 3 * err32 + 1e-6, (scale, reverse, err, err32)
        same = (drawn == reference_draw_path(logits, u)).all(1)
        if dtype == torch.float64:
            assert bool(same.all())
        else:  # float32 weights relative to different maxima round differently at interval boundaries
            assert float(same.double().mean()) > 0.999


def test_draw_path_uses_the_generator_like_the_reference(exact):
    """draw_path takes one (C, L) float64 uniform draw from the generator and inverts like the reference."""
    target, states, pi = exact["rbm"]
    kernel = PAS(3)
    x = states[torch.randint(0, len(states), (500,), generator=torch.Generator().manual_seed(6))]
    _, grad = log_prob_and_grad(target, x)
    gen, twin = torch.Generator().manual_seed(7), torch.Generator().manual_seed(7)
    sites = kernel.draw_path(x, grad, 3, gen)
    u = torch.rand(500, 3, generator=twin, dtype=torch.float64)
    assert torch.equal(sites, reference_draw_path(kernel.proposal_logits(x, grad), u))
    assert torch.equal(gen.get_state(), twin.get_state())


@pytest.mark.parametrize("path_length", [2, 3])
@pytest.mark.parametrize("row", ["spread", "peaked"])
def test_fast_draw_has_the_path_distribution(path_length, row):
    """Chi-square of 200,000 fast draws against the enumerated path probabilities of one row; "peaked" has
    a site of nearly all the mass, so the draws after it take the fast path's exact fallback."""
    D, N = 5, 200_000
    logits = {"spread": torch.tensor([0.3, -1.0, 1.2, 0.0, -0.4]),
              "peaked": torch.tensor([20.0, 0.5, 0.0, -40.0, -1.0])}[row].double()
    paths = torch.tensor(list(itertools.product(range(D), repeat=path_length)))  # (D ** L, L)
    probs = reference_log_path_probability(logits.expand(len(paths), D), paths, False).exp()
    assert abs(float(probs.sum()) - 1.0) < 1e-12
    u = torch.rand(N, path_length, generator=torch.Generator().manual_seed(800 + path_length), dtype=torch.float64)
    sites, log_prob = _fast_draw_path(logits.expand(N, D), u)
    index = (sites * D ** torch.arange(path_length - 1, -1, -1)).sum(1)  # row of ``paths``
    assert torch.allclose(log_prob, probs.log()[index], rtol=0, atol=1e-9)
    counts = torch.bincount(index, minlength=len(paths)).double()
    assert counts[probs == 0].sum() == 0
    p_value = _chisquare_pvalue(counts, N * probs)
    print(f"{row}/PAS-{path_length}: fast draw chi2 p={p_value:.3g}")
    assert p_value > P_MIN
