"""The factorised gradient samplers (DMALA, DULA, DLMC, DLMC-Euler; categorical DMALA / DULA) are exact,
or, for the unadjusted DULA, visibly biased (EXPERIMENTS.md A0, "Exactness").

Targets small enough to enumerate, as in test_sampler_exactness.py: an RBM (8 visible, 5 hidden) and a
dense pairwise binary model (D = 8, 256 states, float64); a random pairwise Potts model on one-hot states
(D = 3 sites, K = 3 values, 27 states).

(a) the exact one-step matrix P from each kernel's ``transition_probabilities`` (which runs the same
    helpers as ``step``): rows sum to 1, pi P = pi and detailed balance to 1e-10, and the kernel moves;
(b) the real ``step`` from a fixed state reproduces the enumerated row (chi-square, fixed seed);
(c) teeth: mutated kernels (the reverse term dropped from the acceptance; the reverse probability
    computed with grad f(x) instead of grad f(x'); a different alpha / tau in the reverse move), written
    as subclasses overriding the shared helper, miss pi P = pi by far more than 1e-4, and one of them
    visibly in ``step`` too;
(d) DULA is biased: its exact P does not leave pi invariant, while DMALA's at the same alpha does;
(e) the flip probabilities against independent references (the two-state chain's matrix exponential
    for DLMC, the normalised DLP over {0, 1} for DMALA), cost counts (1 evaluation per cached step),
    the cache, and hyper-parameter validation.

All seeds are fixed, so the statistical tests are deterministic.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch
from _exact_targets import PairwiseBinary, binary_exact_targets
from scipy import stats
from torch import nn

from gradmc.samplers.discrete import factorised, make_sampler
from gradmc.samplers.discrete.factorised import (
    DLMC,
    DMALA,
    DULA,
    DLMCCategorical,
    DLMCEuler,
    DMALACategorical,
    DULACategorical,
    log1mexp,
)
from gradmc.samplers.discrete.onehot import enumerate_onehot, onehot_to_index
from gradmc.samplers.enumerate import (
    detailed_balance_error,
    state_index,
    stationarity_error,
    transition_matrix,
)

torch.set_num_threads(1)

D = 8
STAT_TOL = 1e-10  # float64 round-off is ~1e-16; EXPERIMENTS.md A0 asks for 1e-6
TEETH_TOL = 1e-4  # a broken kernel must miss pi P = pi by more than this
P_MIN = 1e-4  # smallest accepted chi-square p-value
N_ROW = 40_000  # chains in the single-row test
SITES, K = 3, 3  # the categorical target
CATEGORICAL_ALPHA = 1.0  # alpha of the categorical teeth (at 0.2 the kernel moves 3% of the time on this target)


class Potts(nn.Module):
    """Random pairwise model on one-hot x (C, SITES, K): f(x) = h . x + x^T J x / 2 (flattened), J symmetric
    with zero diagonal blocks; an nn.Module, so the kernels cache its evaluations."""

    def __init__(self, generator: torch.Generator):
        super().__init__()
        M = SITES * K
        J = 1.5 * torch.randn(M, M, generator=generator, dtype=torch.float64)
        J = (J + J.T) / 2
        same_site = torch.block_diag(*[torch.ones(K, K, dtype=torch.float64)] * SITES).bool()
        self.register_buffer("J", J.masked_fill(same_site, 0.0))
        self.register_buffer("h", torch.randn(M, generator=generator, dtype=torch.float64))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(C, SITES, K) -> (C,), differentiable in x."""
        flat = x.flatten(1)
        return flat @ self.h + 0.5 * ((flat @ self.J) * flat).sum(-1)


@pytest.fixture(scope="module")
def binary_targets():
    """name -> (target, states (256, D) float64, pi (256,) float64)."""
    out = binary_exact_targets(D)
    for _, _, pi in out.values():
        assert -(pi * pi.log()).sum() < 4.6  # far from uniform (log 256 = 5.55)
    return out


@pytest.fixture(scope="module")
def potts():
    """(target, states (27, SITES, K) float64 in enumerate_onehot order, pi (27,))."""
    target = Potts(torch.Generator().manual_seed(4003))
    states = enumerate_onehot(SITES, K, torch.float64)
    with torch.no_grad():
        pi = torch.softmax(target(states), 0)
    assert -(pi * pi.log()).sum() < 0.8 * math.log(K**SITES)
    return target, states, pi


def _binary_matrix(kernel, target, states) -> torch.Tensor:
    return transition_matrix(lambda x: kernel.transition_probabilities(x, target), states)


def _categorical_matrix(kernel, target, states) -> torch.Tensor:
    S = states.shape[0]
    next_states, probs = kernel.transition_probabilities(states, target)
    cols = onehot_to_index(next_states.reshape(-1, SITES, K)).reshape(S, -1)
    return torch.zeros(S, S, dtype=torch.float64).scatter_add_(1, cols, probs)


def _check_exact(P: torch.Tensor, pi: torch.Tensor, label: str, min_move: float = 0.05) -> None:
    assert (P >= -1e-12).all()
    assert torch.allclose(P.sum(1), torch.ones_like(pi), rtol=0, atol=1e-12)
    stat, balance = stationarity_error(P, pi), detailed_balance_error(P, pi)
    move = float(1 - P.diagonal() @ pi)
    print(f"{label}: max|pi P - pi|={stat:.1e} max|detailed balance|={balance:.1e} move prob={move:.3f}")
    assert stat < STAT_TOL
    assert balance < STAT_TOL
    assert move > min_move  # not the identity kernel


def _chisquare_pvalue(counts: torch.Tensor, expected: torch.Tensor) -> float:
    """Pearson chi-square p-value; cells with expected count < 5 are pooled into one cell."""
    small = expected < 5
    obs, exp = counts[~small], expected[~small]
    if small.any():
        obs = torch.cat([obs, counts[small].sum()[None]])
        exp = torch.cat([exp, expected[small].sum()[None]])
    return float(stats.chisquare(obs.numpy(), exp.numpy() * obs.sum().item() / exp.sum().item()).pvalue)


# ---------------------------------------------------------------------------------------------------
# (a) exact transition matrices

KERNELS = {
    "DMALA": DMALA(),
    "DMALA-0.5": DMALA(step_size=0.5),
    "DLMC": DLMC(),
    "DLMC-0.3": DLMC(tau=0.3),
    "DLMC-Euler": DLMCEuler(),
    "DLMC-Euler-0.3": DLMCEuler(tau=0.3),  # some bits with p_i = 1: reverse moves of probability 0
}


@pytest.mark.parametrize("target_name", ["rbm", "pairwise"])
@pytest.mark.parametrize("kernel_name", list(KERNELS))
def test_exact_kernel_is_stationary_and_reversible(binary_targets, target_name, kernel_name):
    target, states, pi = binary_targets[target_name]
    _check_exact(_binary_matrix(KERNELS[kernel_name], target, states), pi, f"{target_name}/{kernel_name}")


@pytest.mark.parametrize("step_size", [0.2, 1.0])
def test_categorical_dmala_is_exact(potts, step_size):
    target, states, pi = potts
    _check_exact(_categorical_matrix(DMALACategorical(step_size), target, states), pi,
                 f"potts/DMALA alpha={step_size}", min_move=0.02 if step_size < 0.5 else 0.05)


@pytest.mark.parametrize("tau", [None, 0.5, 3.0])
def test_categorical_dlmc_is_exact(potts, tau):
    target, states, pi = potts
    _check_exact(_categorical_matrix(DLMCCategorical(tau), target, states), pi, f"potts/DLMC tau={tau}",
                 min_move=0.02)


def test_categorical_dlmc_row_is_the_matrix_exponential_of_the_rate_generator():
    """One site, K = 3: the proposal row equals scipy's expm of tau Q, Q[j, k] = exp((g_k - g_j) / 2), rows of
    Q summing to 0 (an independent matrix exponential), and tau -> infinity gives the stationary softmax(g)."""
    from scipy.linalg import expm
    g = torch.tensor([[[0.3, -1.2, 2.0]]], dtype=torch.float64)  # (N=1, D=1, K=3)
    x = torch.tensor([[[0.0, 1.0, 0.0]]], dtype=torch.float64)
    Q = np.exp((g[0, 0][None, :] - g[0, 0][:, None]).numpy() / 2)
    np.fill_diagonal(Q, 0.0)
    np.fill_diagonal(Q, -Q.sum(1))
    for tau in (0.1, 0.7):
        got = DLMCCategorical(tau).log_site_probabilities(x, g).exp()[0, 0].numpy()
        np.testing.assert_allclose(got, expm(tau * Q)[1], rtol=1e-10, atol=1e-14)
    far = DLMCCategorical(60.0).log_site_probabilities(x, g).exp()[0, 0]
    torch.testing.assert_close(far, torch.softmax(g[0, 0], 0), rtol=1e-9, atol=1e-12)


def test_categorical_dlmc_at_two_values_is_the_binary_dlmc():
    """K = 2: the site's flow is the two-state chain of the binary DLMC, so the categorical proposal's
    change probabilities equal the binary flip probabilities for the same tau and gradient differences."""
    gen = torch.Generator().manual_seed(5)
    bits = torch.bernoulli(torch.full((6, 4), 0.5, dtype=torch.float64), generator=gen)
    grad_b = 3.0 * torch.randn(6, 4, dtype=torch.float64, generator=gen)
    onehot = torch.stack([1.0 - bits, bits], -1)  # (6, 4, 2)
    grad_c = torch.stack([torch.zeros_like(grad_b), grad_b], -1)  # f_c(X) = f_b(X[..., 1])
    for tau in (None, 0.4):
        log_p, _ = DLMC(tau).log_flip_probabilities(bits, grad_b)
        log_q = DLMCCategorical(tau).log_site_probabilities(onehot, grad_c)
        change = log_q.gather(-1, (1 - bits.long())[..., None]).squeeze(-1)
        torch.testing.assert_close(change, log_p, rtol=1e-9, atol=1e-12)


# ---------------------------------------------------------------------------------------------------
# (b) step reproduces the enumerated row


def _row(next_states: torch.Tensor, probs: torch.Tensor, num_states: int, index) -> torch.Tensor:
    return torch.zeros(num_states, dtype=torch.float64).scatter_add_(0, index(next_states[0]), probs[0])


def _assert_step_matches(kernel, target, x0, row, index, seed, label):
    gen = torch.Generator().manual_seed(seed)
    state = kernel.init(x0.expand(N_ROW, *x0.shape[1:]).clone(), target)
    state, info = kernel.step(state, target, gen)
    counts = torch.bincount(index(state.x), minlength=row.shape[0]).double()
    support = row > 1e-15
    assert counts[~support].sum() == 0
    p_value = _chisquare_pvalue(counts[support], N_ROW * row[support])
    accept = float(info.accepted.double().mean())
    print(f"{label}: row chi2 p={p_value:.3g} support={int(support.sum())} accept={accept:.3f}")
    assert p_value > P_MIN


@pytest.mark.parametrize("kernel_name", ["DMALA", "DULA", "DLMC", "DLMC-Euler", "DLMC-Euler-0.3"])
def test_step_matches_enumerated_row(binary_targets, kernel_name):
    target, states, pi = binary_targets["pairwise"]
    kernel = DULA() if kernel_name == "DULA" else KERNELS[kernel_name]
    x0 = states[torch.argsort(pi)[3 * states.shape[0] // 4]][None]  # a fairly likely, not modal, state
    row = _row(*kernel.transition_probabilities(x0, target), states.shape[0], state_index)
    _assert_step_matches(kernel, target, x0, row, state_index, 600 + len(kernel_name), f"pairwise/{kernel_name}")


@pytest.mark.parametrize("kernel", [DMALACategorical(), DULACategorical(), DLMCCategorical(0.5)],
                         ids=["DMALA", "DULA", "DLMC"])
def test_categorical_step_matches_enumerated_row(potts, kernel):
    target, states, pi = potts
    x0 = states[torch.argsort(pi)[states.shape[0] // 2]][None]
    row = _row(*kernel.transition_probabilities(x0, target), states.shape[0], onehot_to_index)
    _assert_step_matches(kernel, target, x0, row, onehot_to_index, 700 + len(kernel.name), f"potts/{kernel.name}")


# ---------------------------------------------------------------------------------------------------
# (c) teeth: mutated kernels (overriding the helpers that step and transition_probabilities share)


class NoReverseTerm:
    """WRONG: log alpha = f(x') - f(x) - log q(x'|x), the reverse proposal term dropped."""

    def log_acceptance(self, f_x, f_new, log_fwd, log_rev):
        return f_new - f_x - log_fwd


class ReverseGradAtX:
    """WRONG: the reverse move's probabilities computed at x' but with grad f(x) (the stale gradient)."""

    def log_reverse(self, x, grad_x, x_new, grad_new, mask=None):
        if mask is None:  # categorical
            return self.log_proposal(self.log_site_probabilities(x_new, grad_x), x.argmax(-1))
        return self.log_proposal(*self.log_flip_probabilities(x_new, grad_x), mask)


class ReverseOtherParameter:
    """WRONG: the reverse move uses alpha (DMALA) or tau (DLMC) twice the forward one."""

    def log_reverse(self, x, grad_x, x_new, grad_new, mask=None):
        field = "step_size" if hasattr(self, "step_size") else "tau"
        value = self.step_size if field == "step_size" else self.tau_for(x.shape[-1])
        other = type(self).__mro__[2](**{field: 2 * value})  # the unmutated kernel class
        if mask is None:
            return other.log_proposal(other.log_site_probabilities(x_new, grad_new), x.argmax(-1))
        return other.log_proposal(*other.log_flip_probabilities(x_new, grad_new), mask)


MUTATIONS = {"no_reverse": NoReverseTerm, "reverse_grad_at_x": ReverseGradAtX,
             "reverse_other_parameter": ReverseOtherParameter}
BASES = {"DMALA": DMALA, "DLMC": DLMC, "DLMC-Euler": DLMCEuler}


def _mutant(mutation: str, base: type, **params):
    cls = type(f"{mutation}_{base.__name__}", (MUTATIONS[mutation], base), {})
    assert cls.__mro__[2] is base
    return cls(**params)


@pytest.mark.parametrize("mutation", list(MUTATIONS))
@pytest.mark.parametrize("base", list(BASES))
def test_mutated_kernel_fails_exact_check(binary_targets, base, mutation):
    errors = {}
    for target_name, (target, states, pi) in binary_targets.items():
        P = _binary_matrix(_mutant(mutation, BASES[base]), target, states)
        assert torch.allclose(P.sum(1), torch.ones_like(pi), rtol=0, atol=1e-12)  # still a valid kernel
        errors[target_name] = stationarity_error(P, pi)
    print(f"{base} mutation {mutation}: max|pi P - pi| = " + ", ".join(f"{k} {v:.2e}" for k, v in errors.items()))
    for value in errors.values():
        assert math.isfinite(value) and value > TEETH_TOL


@pytest.mark.parametrize("mutation", list(MUTATIONS))
@pytest.mark.parametrize(("base", "params"), [(DMALACategorical, {"step_size": CATEGORICAL_ALPHA}),
                                              (DLMCCategorical, {"tau": 0.5})], ids=["DMALA", "DLMC"])
def test_mutated_categorical_kernel_fails_exact_check(potts, base, params, mutation):
    target, states, pi = potts
    kernel = _mutant(mutation, base, **params)
    err = stationarity_error(_categorical_matrix(kernel, target, states), pi)
    print(f"potts/{base.__name__} mutation {mutation}: max|pi P - pi| = {err:.2e}")
    assert math.isfinite(err) and err > TEETH_TOL


def test_mutation_reaches_step(binary_targets):
    """One step from pi with the stale-gradient DMALA departs from pi (chi-square over the 256 states; the
    exact DMALA, same draws, does not)."""
    target, states, pi = binary_targets["rbm"]
    n = 200_000
    gen = torch.Generator().manual_seed(2200)
    x0 = states[torch.multinomial(pi, n, replacement=True, generator=gen)]
    p_values = {}
    for label, kernel in (("DMALA", DMALA()), ("mutant", _mutant("reverse_grad_at_x", DMALA))):
        state, _ = kernel.step(kernel.init(x0, target), target, torch.Generator().manual_seed(2201))
        counts = torch.bincount(state_index(state.x), minlength=states.shape[0]).double()
        p_values[label] = _chisquare_pvalue(counts, n * pi)
    print(f"one step from pi, chi2 p: exact DMALA {p_values['DMALA']:.3g}, "
          f"stale-gradient mutant {p_values['mutant']:.3g}")
    assert p_values["DMALA"] > P_MIN
    assert p_values["mutant"] < 1e-10


# ---------------------------------------------------------------------------------------------------
# (d) DULA is biased


@pytest.mark.parametrize("target_name", ["rbm", "pairwise"])
def test_dula_is_biased_and_dmala_is_not(binary_targets, target_name):
    target, states, pi = binary_targets[target_name]
    P_dula = _binary_matrix(DULA(), target, states)
    P_dmala = _binary_matrix(DMALA(), target, states)
    assert torch.allclose(P_dula.sum(1), torch.ones_like(pi), rtol=0, atol=1e-12)
    # every proposal accepted: the off-diagonal entries are the proposal itself, at least DMALA's
    off = ~torch.eye(states.shape[0], dtype=torch.bool)
    assert bool((P_dula[off] >= P_dmala[off] - 1e-15).all())
    err_dula, err_dmala = stationarity_error(P_dula, pi), stationarity_error(P_dmala, pi)
    print(f"{target_name}: max|pi P - pi| DULA {err_dula:.2e}, DMALA {err_dmala:.1e}")
    assert err_dula > 1e-3
    assert err_dmala < STAT_TOL


def test_categorical_dula_is_biased(potts):
    target, states, pi = potts
    err = stationarity_error(_categorical_matrix(DULACategorical(CATEGORICAL_ALPHA), target, states), pi)
    print(f"potts: max|pi P - pi| DULA {err:.2e}")
    assert err > 1e-3


# ---------------------------------------------------------------------------------------------------
# (e) formulas, costs, cache, validation


def test_dlmc_flip_probability_solves_the_two_state_chain():
    """p = [exp(tau R)]_{0,1} for the generator R with rates e^{d/2} (flip) and e^{-d/2} (back), g = sqrt."""
    d = torch.tensor([-30.0, -4.0, -0.7, 0.0, 0.3, 2.5, 9.0], dtype=torch.float64)
    x = torch.zeros(1, d.shape[0], dtype=torch.float64)
    for tau in (0.05, 1.0, 3.0):
        log_p, log_keep = DLMC(tau=tau).log_flip_probabilities(x, d[None])  # x = 0: d = grad
        for i, di in enumerate(d.tolist()):
            r, r_back = math.exp(di / 2), math.exp(-di / 2)
            R = torch.tensor([[-r, r], [r_back, -r_back]], dtype=torch.float64)
            p = float(torch.linalg.matrix_exp(tau * R)[0, 1])
            # rel_tol 1e-8: matrix_exp loses ~1e-9 relative accuracy on the tiny entry at d = -30
            assert math.isclose(float(log_p[0, i].exp()), p, rel_tol=1e-8, abs_tol=1e-300)
            keep = float(torch.linalg.matrix_exp(tau * R)[0, 0])
            assert math.isclose(float(log_keep[0, i].exp()), keep, rel_tol=1e-8)
        # the Euler variant: one forward step of the same generator, I + tau R, clipped at 1
        log_p_e, _ = DLMCEuler(tau=tau).log_flip_probabilities(x, d[None])
        assert torch.allclose(log_p_e.exp()[0], (tau * (d / 2).exp()).clamp(max=1.0), rtol=1e-12, atol=0)


def test_dmala_flip_probability_is_the_normalised_dlp():
    """q(x'_i | x) ∝ exp(g_i (x'_i - x_i) / 2 - (x'_i - x_i)^2 / (2 alpha)) over x'_i in {0, 1}."""
    g = torch.Generator().manual_seed(3)
    x = torch.randint(0, 2, (5, 6), generator=g).double()
    grad = 3 * torch.randn(5, 6, generator=g, dtype=torch.float64)
    for alpha in (0.1, 0.2, 2.0):
        log_p, log_keep = DMALA(step_size=alpha).log_flip_probabilities(x, grad)
        step = 1 - 2 * x  # x'_i - x_i of a flip
        flip, keep = (grad * step / 2 - 1 / (2 * alpha)).exp(), torch.ones_like(x)
        assert torch.allclose(log_p.exp(), flip / (flip + keep), rtol=1e-12, atol=0)
        assert torch.allclose(log_keep.exp(), keep / (flip + keep), rtol=1e-12, atol=0)


def test_categorical_dmala_logits_are_the_dlp():
    g = torch.Generator().manual_seed(4)
    x = torch.nn.functional.one_hot(torch.randint(0, K, (4, SITES), generator=g), K).double()
    grad = torch.randn(4, SITES, K, generator=g, dtype=torch.float64)
    alpha = 0.3
    log_q = DMALACategorical(alpha).log_site_probabilities(x, grad)
    for c, d in itertools.product(range(4), range(SITES)):
        logits = [float((grad[c, d, k] - grad[c, d] @ x[c, d]) / 2 - ((torch.eye(K)[k].double() - x[c, d]) ** 2).sum()
                        / (2 * alpha)) for k in range(K)]
        ref = torch.log_softmax(torch.tensor(logits, dtype=torch.float64), 0)
        assert torch.allclose(log_q[c, d], ref, rtol=0, atol=1e-12)


def test_log1mexp_is_accurate():
    a = torch.tensor([-1e-20, -1e-5, -0.5, -math.log(2), -1.0, -40.0, -800.0, -math.inf], dtype=torch.float64)
    ref = [math.log(-math.expm1(v)) if v > -math.log(2) else math.log1p(-math.exp(v)) for v in a.tolist()]
    assert torch.allclose(log1mexp(a), torch.tensor(ref, dtype=torch.float64), rtol=1e-12, atol=1e-300)
    assert float(log1mexp(torch.zeros(1))) == -math.inf


@pytest.mark.parametrize("kernel", [DMALA(), DULA(), DLMC(), DLMCEuler()], ids=lambda k: k.name)
def test_cached_step_costs_one_evaluation_and_matches_uncached(binary_targets, kernel):
    rbm = binary_targets["rbm"][0]  # an nn.Module: cacheable
    x = torch.randint(0, 2, (64, D), generator=torch.Generator().manual_seed(1)).double()
    runs = {}
    for label, target in (("cached", rbm), ("uncached", lambda y: rbm(y))):  # a lambda is never cached
        gen = torch.Generator().manual_seed(2)
        state = kernel.init(x, target)
        evals = []
        for _ in range(4):
            state, info = kernel.step(state, target, gen)
            evals.append((info.energy_evals, info.grad_evals))
            assert torch.allclose(state.log_prob, rbm(state.x).detach(), rtol=0, atol=1e-10)
        runs[label] = (state.x, evals)
    assert runs["cached"][1] == [(2, 2), (1, 1), (1, 1), (1, 1)]  # the first step counts init's evaluation
    assert runs["uncached"][1] == [(2, 2)] * 4
    assert torch.equal(runs["cached"][0], runs["uncached"][0])


def test_categorical_cached_step_costs_one_evaluation(potts):
    target, states, _ = potts
    kernel = DMALACategorical()
    state = kernel.init(states[torch.arange(32) % states.shape[0]], target)
    gen = torch.Generator().manual_seed(5)
    counts = []
    for _ in range(3):
        state, info = kernel.step(state, target, gen)
        counts.append((info.energy_evals, info.grad_evals))
        assert torch.allclose(state.log_prob, target(state.x).detach(), rtol=0, atol=1e-10)
        assert bool((state.x.sum(-1) == 1).all())  # still one-hot
    assert counts == [(2, 2), (1, 1), (1, 1)]


def test_step_info_counts_flipped_bits(binary_targets):
    target, states, pi = binary_targets["pairwise"]
    x = states[torch.arange(128) % states.shape[0]]
    kernel = DLMC()
    state, info = kernel.step(kernel.init(x, target), target, torch.Generator().manual_seed(9))
    assert torch.equal(info.sites_changed, (state.x != x).sum(1))
    assert bool((info.sites_changed[~info.accepted] == 0).all())


def test_registry_names_defaults_and_hyperparameters():
    assert make_sampler("DMALA") == DMALA(0.2) and make_sampler("DULA") == DULA(0.2)
    assert make_sampler("DLMC") == DLMC() and DLMC().tau is None  # e / D on D bits
    assert make_sampler("DLMC-Euler") == DLMCEuler() and DLMCEuler().tau is None
    assert make_sampler("DMALA", step_size=0.1) == DMALA(0.1)
    assert make_sampler("DLMC-Euler", tau=0.3) == DLMCEuler(0.3)
    assert make_sampler("DMALA", state="categorical") == DMALACategorical(0.2)
    assert make_sampler("DULA", state="categorical", step_size=0.5) == DULACategorical(0.5)
    assert make_sampler("DLMC", state="categorical") == DLMCCategorical() and DLMCCategorical().tau is None
    assert make_sampler("DLMC", state="categorical", tau=0.3) == DLMCCategorical(0.3)
    assert {k.name for k in (make_sampler("DULA"), make_sampler("DLMC-Euler"))} == {"DULA", "DLMC-Euler"}
    with pytest.raises(ValueError, match=r"DLMC takes only the options \['tau', 'adapt'\]"):
        make_sampler("DLMC", step_size=0.1)
    with pytest.raises(ValueError, match="'step_size'"):
        make_sampler("DMALA", state="categorical", tau=1.0)
    for bad in (0.0, -1.0, math.nan, math.inf, "0.2", True):
        with pytest.raises(ValueError, match="must be a finite number > 0"):
            DMALA(step_size=bad)
        with pytest.raises(ValueError, match="must be a finite number > 0"):
            DLMC(tau=bad)
        with pytest.raises(ValueError, match="must be a finite number > 0"):
            DULACategorical(bad)
        with pytest.raises(ValueError, match="must be a finite number > 0"):
            DLMCCategorical(bad)


def test_input_validation(potts):
    target = PairwiseBinary(torch.eye(3), torch.zeros(3))
    with pytest.raises(ValueError):
        DMALA().init(torch.full((2, 3), 0.5), target)
    with pytest.raises(ValueError):
        DMALACategorical().init(torch.ones(2, SITES, K, dtype=torch.float64), potts[0])


def test_transition_probabilities_of_a_large_gradient_are_finite(binary_targets):
    """Saturated probabilities (p = 0 or 1 in float64) give finite, normalised rows, not NaN."""
    target = PairwiseBinary(torch.zeros(4, 4, dtype=torch.float64),
                            torch.tensor([900.0, -900.0, 3.0, -2.0], dtype=torch.float64))
    x = torch.tensor([[0.0, 1.0, 0.0, 1.0], [1.0, 0.0, 1.0, 0.0]], dtype=torch.float64)
    for kernel in (DMALA(), DULA(), DLMC(), DLMCEuler(), DLMCEuler(tau=2.0)):
        _, probs = kernel.transition_probabilities(x, target)
        assert bool(torch.isfinite(probs).all()), kernel
        assert torch.allclose(probs.sum(1), torch.ones(2, dtype=torch.float64), rtol=0, atol=1e-12)
        assert bool((probs > -1e-12).all())


def test_float32_flip_mask_follows_the_probabilities_the_ratio_uses():
    """A linear target f = b.x with b_i = -30 on 1000 bits, chains at the mode x = 0: DLMC (tau = 1) flips a
    bit with p ~ e^-30 ~ 9e-14 and its MH ratio is ~1, so 10 steps of 10,000 float32 chains expect 1e-5 moves
    in all. Comparing a float32 uniform with p floored p at 2^-24 per bit and moved ~5 chains; the exact draw
    (a 24-bit uniform refined by a second draw where its grid cannot decide) moves none."""
    D, C = 1000, 10_000
    b = torch.full((D,), -30.0)

    def target(x):
        return x @ b

    kernel = DLMC(tau=1.0)
    state = kernel.init(torch.zeros(C, D), target)
    gen = torch.Generator().manual_seed(0)
    moved = 0
    for _ in range(10):
        state, info = kernel.step(state, target, gen)
        moved += int((info.sites_changed > 0).sum())
    assert moved == 0 and not bool(state.x.any())


@pytest.mark.parametrize("kernel", [DMALA(), DLMC(tau=0.5)], ids=["logits", "log_probabilities"])
def test_flip_draw_refines_where_the_24_bit_grid_cannot_decide(monkeypatch, kernel):
    """With every 24-bit uniform forced to 0, each bit whose rarer outcome has probability r < 2^-24 is undecided
    and drawn by the second uniform: that outcome must come out with probability r 2^24 (a flip for p < 1/2, a
    keep for p > 1/2), exactly the rate the grid alone cannot give."""
    monkeypatch.setattr(factorised.streams, "random_words", lambda shape, generator, device=None:
                        torch.zeros(shape, dtype=torch.int32))
    C = 200_000
    x = torch.zeros(C, 2, dtype=torch.float64)
    # flip probabilities 0.3 * 2^-24 (bit 0) and 1 - 0.6 * 2^-24 (bit 1), whatever the kernel's parametrisation
    p = torch.tensor([0.3 * 2.0 ** -24, 1.0 - 0.6 * 2.0 ** -24], dtype=torch.float64)
    if isinstance(kernel, DMALA):  # logit g / 2 - 1 / (2 alpha) at x = 0
        grad = 2.0 * (torch.logit(p) + 0.5 / kernel.step_size)
    else:  # DLMC: p = sigmoid(g)(1 - exp(-tau (e^{g/2} + e^{-g/2}))); solve for g by bisection
        lo, hi = torch.full((2,), -60.0, dtype=torch.float64), torch.full((2,), 60.0, dtype=torch.float64)
        for _ in range(200):
            mid = (lo + hi) / 2
            above = kernel.log_flip_probabilities(x[:1], mid[None])[0][0].exp() > p
            lo, hi = torch.where(above, lo, mid), torch.where(above, mid, hi)
        grad = (lo + hi) / 2
    proposal = kernel._proposal(x, grad.expand(C, 2))
    mask = kernel._draw(proposal, torch.Generator().manual_seed(1))
    rate = mask.double().mean(0)
    expected = torch.tensor([0.3, 1.0 - 0.6], dtype=torch.float64)
    assert torch.allclose(rate, expected, atol=5 * math.sqrt(0.25 / C), rtol=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_logit_step_log_proposals_equal_the_shared_helpers(dtype):
    """The terms LogitFlipMH.step computes from its draw, log q(x'|x) = sum log(1 - q) - sum r |z| and
    log q(x|x') = -sum softplus((1 - 2m) z'), equal the helper the enumeration uses, sum logsigmoid(s z)."""
    gen = torch.Generator().manual_seed(7)
    z = torch.randn(50, 30, generator=gen, dtype=dtype) * 6
    z[0, :3] = torch.tensor([0.0, 80.0, -80.0], dtype=dtype)
    rare = (torch.rand(50, 30, generator=gen, dtype=dtype) < 0.3).to(dtype)
    mask = (rare - z.sign().clamp(min=0.0)).abs()
    kernel = DMALA()
    tol = {"rtol": 1e-5, "atol": 1e-4} if dtype == torch.float32 else {"rtol": 1e-12, "atol": 1e-10}
    rare_p = torch.sigmoid(-z.abs())
    log_fwd = torch.log1p(-rare_p).sum(-1) - (rare * z.abs()).sum(-1)
    torch.testing.assert_close(log_fwd, kernel._log_q((z,), mask != 0), **tol)
    z_new = torch.randn(50, 30, generator=gen, dtype=dtype) * 6
    log_rev = -torch.nn.functional.softplus((1 - 2 * mask) * z_new).sum(-1)
    torch.testing.assert_close(log_rev, kernel._log_q((z_new,), mask != 0), **tol)


def test_default_tau_scales_with_the_dimension():
    """tau = None is e / D: at a flat gradient (d = 0) DLMC flips each bit with (1 - exp(-2 tau)) / 2 and DLMC-Euler
    with tau, so about e bits flip whatever D (a fixed tau = 1 flips 43% of them)."""
    for D in (10, 784):
        x, grad = torch.zeros(1, D, dtype=torch.float64), torch.zeros(1, D, dtype=torch.float64)
        tau = math.e / D
        for kernel, expected in ((DLMC(), D * (1 - math.exp(-2 * tau)) / 2), (DLMCEuler(), math.e)):
            assert kernel.tau_for(D) == pytest.approx(tau)
            log_p, _ = kernel.log_flip_probabilities(x, grad)
            assert float(log_p.exp().sum()) == pytest.approx(expected, rel=1e-12)
    assert DLMC().tau_for(784) * 784 == pytest.approx(math.e) and DLMC(tau=0.5).tau_for(784) == 0.5
