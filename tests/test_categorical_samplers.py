"""Categorical Gibbs-X and categorical GWG (paper Eq. 4) leave their target invariant (EXPERIMENTS.md A0).

Target: a small random Potts model (local class below), D = 3 and 4 sites with K = 3 values
(27 and 81 states), far from uniform, enumerated exactly in float64.

Checks:
(a) the exact transition matrix built from each sampler's ``transition_probabilities`` (which runs
    the same helpers as ``step``): non-negative, rows sum to 1, pi P = pi, detailed balance, and equal
    to a reference matrix built here independently from the paper's formulas;
(b) the real ``step`` from a fixed state reproduces the enumerated row (chi-square, 100k chains);
(c) stationarity of ``step``: chains drawn exactly from pi stay pi-distributed (chi-square), after one
    step and after several (the permutation scan crosses a redraw);
(d) determinism, Info shapes and costs (counted calls), input validation;
(e) teeth: three mutated GWGs (reverse term dropped; current value not masked in the reverse logits
    only; reverse logits at a different temperature) fail the exact check and the one-step test.

All seeds are fixed, so the statistical tests are deterministic: a pass is not a flaky pass.
"""

from __future__ import annotations

import itertools
import math

import pytest
import torch
from scipy import stats

from gradmc.core.gradients import log_prob_and_grad
from gradmc.samplers.discrete.categorical_gibbs import CategoricalGibbs
from gradmc.samplers.discrete.gwg_categorical import MASKED_LOGIT, GWGCategorical
from gradmc.samplers.discrete.onehot import enumerate_onehot, onehot_to_index

torch.set_num_threads(2)

K = 3
DIMS = (3, 4)
N_ROW = 100_000  # chains in the single-row test
N_STATIONARY = 200_000  # chains in the stationarity tests
P_MIN = 1e-4  # smallest accepted chi-square p-value
EXACT_TOL = 1e-6  # required max |pi P - pi| (float64); the measured values are ~1e-16
TEETH_TOL = 1e-4  # a mutated kernel must exceed this max |pi P - pi|
SAMPLERS = {"Gibbs-1": CategoricalGibbs(1), "Gibbs-2": CategoricalGibbs(2), "GWG": GWGCategorical(2.0)}


class Potts:
    """Potts model, log p(x) = sum_i h_i^T x_i + sum_{i<j} x_i^T J_ij x_j + const, x (C, D, K) one-hot.

    Stored as a symmetric coupling tensor: J_ji = J_ij^T and J_ii = 0, so that the pair sum equals
    0.5 * sum_{i != j} x_i^T J_ij x_j (checked against the explicit i < j loop below). f is then
    linear in each x_i, which makes Eq. 4 exact for this model.

    Args:
        h: (D, K) float64 fields; J: (D, D, K, K) float64 couplings (symmetrised here).
    """

    def __init__(self, h: torch.Tensor, J: torch.Tensor):
        D = h.shape[0]
        J = (J + J.permute(1, 0, 3, 2)) / 2
        J = J * (1 - torch.eye(D, dtype=J.dtype))[:, :, None, None]
        self.h, self.J = h, J
        self._J_flat = J.permute(0, 2, 1, 3).reshape(D * K, D * K)  # row (i, a), column (j, b)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        """(C, D, K) -> (C,) unnormalised log-probability, differentiable in x."""
        flat = x.flatten(1)  # (C, D * K)
        return flat @ self.h.flatten() + 0.5 * ((flat @ self._J_flat) * flat).sum(-1)

    def pair_sum(self, x: torch.Tensor) -> torch.Tensor:
        """The paper's form with an explicit loop over i < j, for checking ``__call__``."""
        D = x.shape[1]
        out = (x * self.h).sum((1, 2))
        for i, j in itertools.combinations(range(D), 2):
            out = out + torch.einsum("ca,ab,cb->c", x[:, i], self.J[i, j], x[:, j])
        return out


@pytest.fixture(scope="module", params=DIMS, ids=[f"D{d}" for d in DIMS])
def exact(request):
    """(target, states (K**D, D, K) float64, pi (K**D,) float64)."""
    D = request.param
    g = torch.Generator().manual_seed(4000 + D)
    target = Potts(torch.randn(D, K, generator=g, dtype=torch.float64),
                   torch.randn(D, D, K, K, generator=g, dtype=torch.float64) * 1.5)
    states = enumerate_onehot(D, K, torch.float64)
    with torch.no_grad():
        pi = torch.softmax(target(states), 0)
    assert -(pi * pi.log()).sum() < 0.8 * math.log(K**D)  # far from uniform
    return target, states, pi


def _transition_matrix(sampler, target, states) -> torch.Tensor:
    """(S, S) kernel from ``sampler.transition_probabilities``; repeated next states are summed."""
    S, D, _ = states.shape
    next_states, probs = sampler.transition_probabilities(states, target)
    cols = onehot_to_index(next_states.reshape(-1, D, K)).reshape(S, -1)
    return torch.zeros(S, S, dtype=torch.float64).scatter_add_(1, cols, probs)


def _chisquare_pvalue(counts: torch.Tensor, expected: torch.Tensor) -> float:
    """Pearson chi-square p-value; cells with expected count < 5 are pooled into one cell."""
    small = expected < 5
    obs, exp = counts[~small], expected[~small]
    if small.any():
        obs = torch.cat([obs, counts[small].sum()[None]])
        exp = torch.cat([exp, expected[small].sum()[None]])
    return float(stats.chisquare(obs.numpy(), exp.numpy() * obs.sum().item() / exp.sum().item()).pvalue)


def _run_counts(sampler, target, x0, num_steps: int, seed: int) -> torch.Tensor:
    """Histogram (K**D,) of the states after num_steps batched steps from x0 (N, D, K)."""
    gen = torch.Generator().manual_seed(seed)
    state = sampler.init(x0, target)
    for _ in range(num_steps):
        state, _ = sampler.step(state, target, gen)
    return torch.bincount(onehot_to_index(state.x), minlength=K ** x0.shape[1]).double()


def _draw_from_pi(states, pi, n: int, seed: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    return states[torch.multinomial(pi, n, replacement=True, generator=gen)]


# ---------------------------------------------------------------------------------------------------
# independent references, from the paper's formulas (no sampler code)


def _reference_gwg(target, states, temperature: float) -> torch.Tensor:
    """P[x, y] = q(i,j|x) min(1, e^{f(y)-f(x)} q(i,v|y) / q(i,j|x)) for y = x with site i set to j != v."""
    S, D, _ = states.shape
    f, grad = log_prob_and_grad(target, states)  # (S,), (S, D, K)
    value = states.argmax(-1)  # (S, D)
    idx = onehot_to_index(states)
    assert torch.equal(idx, torch.arange(S))
    place = K ** torch.arange(D - 1, -1, -1)

    def log_q(s: int) -> dict:
        d = {(i, j): float(grad[s, i, j] - grad[s, i, value[s, i]]) / temperature
             for i in range(D) for j in range(K) if j != value[s, i]}
        log_norm = math.log(sum(math.exp(v) for v in d.values()))
        return {key: v - log_norm for key, v in d.items()}

    lq = [log_q(s) for s in range(S)]
    P = torch.zeros(S, S, dtype=torch.float64)
    for s in range(S):
        for (i, j), lq_fwd in lq[s].items():
            y = s + (j - int(value[s, i])) * int(place[i])
            lq_rev = lq[y][(i, int(value[s, i]))]
            P[s, y] = math.exp(lq_fwd) * min(1.0, math.exp(float(f[y] - f[s]) + lq_rev - lq_fwd))
        P[s, s] = 1.0 - P[s].sum()
    return P


def _reference_gibbs(pi, states, block_size: int) -> torch.Tensor:
    """Average over X-subsets B of P_B(x, y) = pi(y) / pi(x_rest) on {y : y_rest = x_rest}."""
    S, D, _ = states.shape
    value = states.argmax(-1)  # (S, D)
    P = torch.zeros(S, S, dtype=torch.float64)
    blocks = list(itertools.combinations(range(D), block_size))
    for block in blocks:
        rest = [i for i in range(D) if i not in block]
        agree = (value[:, None, rest] == value[None, :, rest]).all(-1).double()  # (S, S)
        P += agree * pi[None] / (agree @ pi)[:, None]
    return P / len(blocks)


# ---------------------------------------------------------------------------------------------------
# (a) exact transition matrices


def test_potts_matches_pair_sum_and_eq4_is_exact(exact):
    target, states, _ = exact
    with torch.no_grad():
        assert torch.allclose(target(states), target.pair_sum(states), rtol=0, atol=1e-12)
    # f is linear in each site, so d_ij = f(x with site i set to j) - f(x) exactly (Eq. 4)
    f, grad = log_prob_and_grad(target, states)
    logits = GWGCategorical(temperature=1.0).proposal_logits(states, grad).reshape(states.shape)
    S, D, _ = states.shape
    place = K ** torch.arange(D - 1, -1, -1)
    value = states.argmax(-1)
    for i in range(D):
        for j in range(K):
            moved = (value[:, i] != j)
            y = torch.arange(S) + (j - value[:, i]) * place[i]
            assert torch.allclose(logits[moved, i, j], (f[y] - f)[moved], rtol=0, atol=1e-12)
            assert (logits[~moved, i, j] <= MASKED_LOGIT).all()  # the current value is masked (weight 0)


CASES = ["Gibbs-1", "Gibbs-2", "GWG", "GWG-T1", "Gibbs-D"]


def _sampler(name: str, D: int):
    extra = {"GWG-T1": GWGCategorical(1.0), "Gibbs-D": CategoricalGibbs(D)}
    return extra[name] if name in extra else SAMPLERS[name]


@pytest.mark.parametrize("name", CASES)
def test_transition_matrix_is_exact_and_reversible(exact, name):
    target, states, pi = exact
    S, D, _ = states.shape
    sampler = _sampler(name, D)
    P = _transition_matrix(sampler, target, states)
    if isinstance(sampler, GWGCategorical):
        ref = _reference_gwg(target, states, sampler.temperature)
    else:
        ref = _reference_gibbs(pi, states, sampler.block_size)
    assert (P >= -1e-12).all()
    assert torch.allclose(P.sum(1), torch.ones(S, dtype=torch.float64), rtol=0, atol=1e-12)
    stationarity_err = float((pi @ P - pi).abs().max())
    flux = pi[:, None] * P
    balance_err = float((flux - flux.T).abs().max())
    ref_err = float((P - ref).abs().max())
    move = float(1 - P.diagonal() @ pi)
    print(f"D={D} {name}: max|pi P - pi|={stationarity_err:.2e} max|balance|={balance_err:.2e} "
          f"max|P - reference|={ref_err:.2e} move prob={move:.3f}")
    assert stationarity_err < EXACT_TOL
    assert balance_err < EXACT_TOL
    assert ref_err < 1e-12
    assert move > 0.1
    if name == "Gibbs-D":  # one block of all sites: exact independent sampling, every row is pi
        assert torch.allclose(P, pi.expand(S, S), rtol=0, atol=1e-12)


# ---------------------------------------------------------------------------------------------------
# (b) the real step reproduces an enumerated row


@pytest.mark.parametrize("name", ["Gibbs-1", "Gibbs-2", "GWG"])
@pytest.mark.parametrize("start", ["mode", "rarest"])
def test_step_matches_transition_row(exact, name, start):
    target, states, pi = exact
    S, D, _ = states.shape
    x0_index = {"mode": pi.argmax(), "rarest": pi.argmin()}[start]
    sampler = SAMPLERS[name]
    next_states, probs = sampler.transition_probabilities(states[x0_index:x0_index + 1], target)
    row = torch.zeros(S, dtype=torch.float64).index_add_(0, onehot_to_index(next_states[0]), probs[0])
    seed = 100 + 10 * D + ["Gibbs-1", "Gibbs-2", "GWG"].index(name) + (5 if start == "rarest" else 0)
    counts = _run_counts(sampler, target, states[x0_index].expand(N_ROW, D, K).clone(), 1, seed)
    support = row > 0
    assert counts[~support].sum() == 0
    p_value = _chisquare_pvalue(counts[support], N_ROW * row[support])
    print(f"D={D} {name} from {start}: row chi2 p={p_value:.3g} support={int(support.sum())} "
          f"stay={float(row[x0_index]):.3f}")
    assert p_value > P_MIN


# ---------------------------------------------------------------------------------------------------
# (c) stationarity of step from exact samples


@pytest.mark.parametrize("name,multi", [("Gibbs-1", False), ("Gibbs-2", False), ("GWG", False),
                                        ("Gibbs-1", True), ("Gibbs-2", True)])
def test_step_leaves_pi_invariant(exact, name, multi):
    """One step from pi; for Gibbs also D + 1 steps, so the permutation scan redraws its order."""
    target, states, pi = exact
    D = states.shape[1]
    num_steps, n = (D + 1, N_STATIONARY // 4) if multi else (1, N_STATIONARY)
    seed = 500 + 10 * D + ["Gibbs-1", "Gibbs-2", "GWG"].index(name) + 5 * multi
    x0 = _draw_from_pi(states, pi, n, seed)
    counts = _run_counts(SAMPLERS[name], target, x0, num_steps, seed + 1)
    p_value = _chisquare_pvalue(counts, n * pi)
    print(f"D={D} {name} {num_steps} step(s) from pi: chi2 p={p_value:.3g}")
    assert p_value > P_MIN


# ---------------------------------------------------------------------------------------------------
# (d) determinism, Info, cost, validation


class CountingTarget:
    """Wraps a target and records the batch size of every call."""

    def __init__(self, target):
        self.target, self.calls = target, []

    def __call__(self, x):
        self.calls.append(x.shape[0])
        return self.target(x)


@pytest.mark.parametrize("name", ["Gibbs-1", "Gibbs-2", "GWG"])
def test_determinism_info_and_cost(exact, name):
    target, states, pi = exact
    C, T = 64, 8
    sampler = SAMPLERS[name]

    def run(seed):
        gen = torch.Generator().manual_seed(seed)
        counting = CountingTarget(target)
        state = sampler.init(_draw_from_pi(states, pi, C, 0), counting)
        xs, infos = [], []
        for _ in range(T):
            counting.calls.clear()
            x_prev = state.x
            state, info = sampler.step(state, counting, gen)
            xs.append(state.x)
            infos.append(info)
            assert torch.equal(info.sites_changed, (state.x != x_prev).any(-1).sum(1))
            expected_calls = [C * K**sampler.block_size] if name.startswith("Gibbs") else [C, C]
            assert counting.calls == expected_calls
        return torch.stack(xs), infos

    xs1, infos = run(1)
    xs2, _ = run(1)
    xs3, _ = run(2)
    assert torch.equal(xs1, xs2)
    assert not torch.equal(xs1, xs3)
    assert ((xs1 == 0) | (xs1 == 1)).all() and (xs1.sum(-1) == 1).all()  # still one-hot
    cost = {"Gibbs-1": (K, 0), "Gibbs-2": (K**2, 0), "GWG": (2, 2)}[name]
    for info in infos:
        assert info.acceptance_prob.shape == (C,) and info.acceptance_prob.dtype == torch.float64
        assert info.accepted.shape == (C,) and info.accepted.dtype == torch.bool
        assert info.sites_changed.shape == (C,) and info.sites_changed.dtype == torch.int64
        assert (info.energy_evals, info.grad_evals) == cost
        assert ((info.acceptance_prob >= 0) & (info.acceptance_prob <= 1)).all()
        if name == "GWG":  # exactly one site changes on acceptance: the current value is never proposed
            assert torch.equal(info.sites_changed, info.accepted.long())
        else:
            assert info.accepted.all() and (info.sites_changed <= sampler.block_size).all()


def test_permutation_scan_visits_every_site(exact):
    target, states, pi = exact
    D = states.shape[1]
    gen = torch.Generator().manual_seed(3)
    sampler = CategoricalGibbs(1)
    state = sampler.init(_draw_from_pi(states, pi, 8, 1), target)
    state, _ = sampler.step(state, target, gen)
    order = state.order
    assert torch.equal(order.sort(1).values, torch.arange(D).expand(8, D))
    for t in range(2, D + 1):
        state, _ = sampler.step(state, target, gen)
        assert state.position == t and torch.equal(state.order, order)
    state, _ = sampler.step(state, target, gen)  # exhausted: a fresh permutation
    assert state.position == 1 and not torch.equal(state.order, order)


@pytest.mark.parametrize("sampler", [CategoricalGibbs(1), GWGCategorical()], ids=["Gibbs", "GWG"])
def test_input_validation(sampler):
    target = lambda x: x.sum((1, 2))  # noqa: E731
    good = torch.nn.functional.one_hot(torch.tensor([[0, 2, 1]]), 3).double()
    half = good.clone()
    half[0, 0] = 0.5
    two = good.clone()
    two[0, 1, 0] = 1.0
    zero = good.clone()
    zero[0, 2] = 0.0
    for bad, match in [
        (good[0], "shape"),  # 2-D
        (good[None], "shape"),  # 4-D
        (good.long(), "floating"),
        (half, "only 0 and 1"),
        (two, "exactly one 1"),
        (zero, "exactly one 1"),
        (good[..., :1], "at least 2 categories"),
    ]:
        with pytest.raises(ValueError, match=match):
            sampler.init(bad, target)
        with pytest.raises(ValueError, match=match):
            sampler.transition_probabilities(bad, target)
    with pytest.raises(TypeError, match="torch.Tensor"):
        sampler.init(good.tolist(), target)


def test_hyperparameter_validation():
    target = lambda x: x.sum((1, 2))  # noqa: E731
    for bad in (0, -1, 1.5):
        with pytest.raises(ValueError, match="block_size"):
            CategoricalGibbs(bad)
    with pytest.raises(ValueError, match="exceeds the number of sites"):
        CategoricalGibbs(4).init(torch.nn.functional.one_hot(torch.zeros(2, 3).long(), 3).float(), target)
    with pytest.raises(ValueError, match="candidates"):
        CategoricalGibbs(11).init(torch.nn.functional.one_hot(torch.zeros(2, 11).long(), 3).float(), target)
    for bad in (0.0, -2.0):
        with pytest.raises(ValueError, match="temperature"):
            GWGCategorical(bad)


# ---------------------------------------------------------------------------------------------------
# (e) teeth: mutated GWGs must fail


class NoReverseTerm(GWGCategorical):
    """WRONG: accepts with min(1, exp(f(x') - f(x))), the q(rev|x') / q(fwd|x) term dropped."""

    @staticmethod
    def _log_alpha(f_x, f_new, log_q_fwd, log_q_rev):
        return f_new - f_x


class UnmaskedReverse(GWGCategorical):
    """WRONG: the reverse logits at x' keep the current values (logit d_ii = 0) instead of -inf."""

    def _reverse_log_q(self, x_new, grad_new, rev_idx):
        d = grad_new - (grad_new * x_new).sum(-1, keepdim=True)
        return torch.log_softmax((d / self.temperature).flatten(1), -1).gather(1, rev_idx[:, None]).squeeze(1)


class ReverseTemperature(GWGCategorical):
    """WRONG: the reverse logits use temperature 1 while the forward ones use self.temperature (2)."""

    def _reverse_log_q(self, x_new, grad_new, rev_idx):
        log_q = torch.log_softmax(GWGCategorical(1.0).proposal_logits(x_new, grad_new), -1)
        return log_q.gather(1, rev_idx[:, None]).squeeze(1)


MUTANTS = [NoReverseTerm, UnmaskedReverse, ReverseTemperature]


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda m: m.__name__)
def test_mutants_fail(exact, mutant):
    target, states, pi = exact
    D = states.shape[1]
    P = _transition_matrix(mutant(2.0), target, states)
    err = float((pi @ P - pi).abs().max())
    seed = 900 + 10 * D + MUTANTS.index(mutant)
    n = N_STATIONARY // 4
    counts = _run_counts(mutant(2.0), target, _draw_from_pi(states, pi, n, seed), 1, seed + 1)
    p_value = _chisquare_pvalue(counts, n * pi)
    print(f"D={D} {mutant.__name__}: max|pi P - pi|={err:.2e} one-step chi2 p={p_value:.3g}")
    assert math.isfinite(err) and err > TEETH_TOL
    assert p_value < 1e-10
