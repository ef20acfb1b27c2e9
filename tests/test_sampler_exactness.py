"""The discrete samplers leave their target invariant (EXPERIMENTS.md A0, "Exactness").

Targets small enough to enumerate (D = 8, 256 states), far from uniform:
- an RBM with 8 visible and 5 hidden units, W ~ N(0, 1), b, c ~ N(0, 1);
- a dense pairwise binary model log p(x) = x^T J x + b^T x (local class below).

Checks:
(a) one-step stationarity: N chains drawn exactly from pi, ONE step of the sampler (all chains in one
    batched call), histogram of the 256 states against N pi: chi-square test and a bound on every
    cell's error from multinomial standard errors;
(b) GWG's exact 256 x 256 transition matrix built from the sampler's public ``proposal_logits`` and
    ``log_prob_and_grad``: rows sum to 1, pi P = pi, detailed balance; and the real ``step`` from a
    fixed state reproduces the matrix row;
(c) teeth: a GWG without the reverse proposal term fails (a) and (b).

All seeds are fixed, so the statistical tests are deterministic: a pass is not a flaky pass.
"""

from __future__ import annotations

import math

import pytest
import torch
from scipy import stats

from gradmc.samplers.base import log_prob_and_grad, metropolis_hastings_accept, sample_categorical
from gradmc.samplers.discrete import GWG, make_sampler
from gradmc.samplers.discrete.gwg import GWGState
from gradmc.targets import RBM
from gradmc.targets.exact import exact_distribution

torch.set_num_threads(2)

D = 8
NUM_STATES = 2**D
N_STATIONARY = 500_000  # chains in the one-step test (cells expecting < 5 counts are pooled)
N_ROW = 100_000  # chains in the single-row test
P_MIN = 1e-4  # smallest accepted chi-square p-value
# Bonferroni bound for the per-cell check: under pi, z_k = (p_hat_k - pi_k) / s_k with
# s_k = sqrt(pi_k (1 - pi_k) / N) is approximately N(0, 1) (each count is Binomial(N, pi_k); CLT), so
# P(max_k |z_k| > Z) <= 256 * 2 * (1 - Phi(Z)) = 256 * 3.8e-8 ~ 1e-5 for Z = 5.5.
Z_MAX = 5.5
# EXPERIMENTS.md A0: the authors' samplers reach max marginal error <= 0.003. A marginal's standard
# error is <= 0.5 / sqrt(N) = 7.1e-4 here, so 0.003 is > 4 standard errors.
MARGINAL_TOL = 0.003
_BIT_WEIGHTS = 2 ** torch.arange(D - 1, -1, -1, dtype=torch.float64)  # enumerate_binary: MSB first


class PairwiseBinary:
    """Dense pairwise binary model, log p(x) = x^T J x + b^T x + const, x (C, D) in {0, 1}.

    Args:
        J: (D, D) float64 couplings (symmetric here; any J works); b: (D,) float64 biases.
    """

    def __init__(self, J: torch.Tensor, b: torch.Tensor):
        self.J, self.b = J, b

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        """(C, D) -> (C,) unnormalised log-probability, differentiable in x."""
        return ((x @ self.J) * x).sum(-1) + x @ self.b


class GWGNoReverse(GWG):
    """Deliberately WRONG GWG: accepts with min(1, exp(f(x') - f(x))), the q(i|x')/q(i|x) term dropped."""

    def step(self, state: GWGState, log_prob, generator: torch.Generator):
        x = state.x
        f_x, grad_x = log_prob_and_grad(log_prob, x)
        idx = sample_categorical(self.proposal_logits(x, grad_x), generator)
        rows = torch.arange(x.shape[0])
        x_new = x.clone()
        x_new[rows, idx] = 1.0 - x_new[rows, idx]
        f_new, _ = log_prob_and_grad(log_prob, x_new)
        accepted, _ = metropolis_hastings_accept(f_new - f_x, generator)
        x_out = torch.where(accepted[:, None], x_new, x)
        return GWGState(x=x_out, log_prob=torch.where(accepted, f_new, f_x)), None


@pytest.fixture(scope="module")
def rbm():
    g = torch.Generator().manual_seed(20210401)
    model = RBM(D, 5, weight_std=1.0, generator=g).double()
    with torch.no_grad():
        model.b.copy_(torch.randn(D, generator=g, dtype=torch.float64))
        model.c.copy_(torch.randn(5, generator=g, dtype=torch.float64))
    return model


@pytest.fixture(scope="module")
def pairwise():
    g = torch.Generator().manual_seed(7)
    A = torch.randn(D, D, generator=g, dtype=torch.float64) * 0.5
    return PairwiseBinary(J=(A + A.T) / 2, b=torch.randn(D, generator=g, dtype=torch.float64))


@pytest.fixture(scope="module")
def exact(rbm, pairwise):
    """name -> (target, states (256, D) float64, pi (256,) float64)."""
    out = {}
    for name, target in (("rbm", rbm), ("pairwise", pairwise)):
        states, pi = exact_distribution(target, D)
        # far from uniform: entropy well below log 256 = 5.55 nats
        assert -(pi * pi.log()).sum() < 4.6
        out[name] = (target, states, pi)
    return out


def _state_index(x: torch.Tensor) -> torch.Tensor:
    """(C, D) binary -> (C,) int64 row index in enumerate_binary's order."""
    return (x.double() @ _BIT_WEIGHTS).round().long()


def _chisquare_pvalue(counts: torch.Tensor, expected: torch.Tensor) -> float:
    """Pearson chi-square p-value; cells with expected count < 5 are pooled into one cell."""
    small = expected < 5
    obs, exp = counts[~small], expected[~small]
    if small.any():
        obs = torch.cat([obs, counts[small].sum()[None]])
        exp = torch.cat([exp, expected[small].sum()[None]])
    return float(stats.chisquare(obs.numpy(), exp.numpy()).pvalue)


def _one_step_from_pi(sampler, target, states, pi, num_chains: int, seed: int):
    """Draw num_chains states from pi, take one batched step; return (256,) counts and the states."""
    gen = torch.Generator().manual_seed(seed)
    x0 = states[torch.multinomial(pi, num_chains, replacement=True, generator=gen)]  # (N, D)
    state = sampler.init(x0, target)
    state, _ = sampler.step(state, target, gen)
    counts = torch.bincount(_state_index(state.x), minlength=NUM_STATES).double()
    return counts, state.x


def _gwg_transition_matrix(sampler: GWG, target, states: torch.Tensor, reverse_term: bool = True):
    """Exact GWG kernel P (256, 256): P[x, flip_i(x)] = q(i|x) min(1, e^{f(y) - f(x)} q(i|y) / q(i|x)).

    Built independently of ``GWG.step``, from the public proposal logits; the diagonal takes the
    rejected mass. ``reverse_term=False`` builds the kernel of the broken variant.
    """
    S = states.shape[0]
    f, grad = log_prob_and_grad(target, states)  # (S,), (S, D)
    log_q = torch.log_softmax(sampler.proposal_logits(states, grad), -1)  # (S, D): log q(i | x)
    src = torch.arange(S)
    flip = 2 ** torch.arange(D - 1, -1, -1)  # bit i of the index sits at position D - 1 - i
    dst = src[:, None] ^ flip[None, :]  # (S, D): index of x with bit i flipped
    cols = torch.arange(D)[None, :].expand(S, D)
    log_alpha = f[dst] - f[:, None]
    if reverse_term:
        log_alpha = log_alpha + log_q[dst, cols] - log_q
    move = log_q.exp() * log_alpha.clamp(max=0.0).exp()  # (S, D)
    P = torch.zeros(S, S, dtype=torch.float64)
    P[src[:, None], dst] = move
    P[src, src] = 1.0 - move.sum(1)
    return P


# ---------------------------------------------------------------------------------------------------
# (a) one-step stationarity

CASES = [
    ("rbm", "Gibbs-1"),
    ("rbm", "Gibbs-2"),
    ("rbm", "GWG"),
    ("rbm", "BlockGibbs"),
    ("pairwise", "Gibbs-1"),
    ("pairwise", "Gibbs-2"),
    ("pairwise", "GWG"),
]


@pytest.mark.parametrize("target_name,sampler_name", CASES)
def test_one_step_leaves_pi_invariant(exact, target_name, sampler_name):
    target, states, pi = exact[target_name]
    seed = 1000 + CASES.index((target_name, sampler_name))
    counts, x1 = _one_step_from_pi(make_sampler(sampler_name), target, states, pi, N_STATIONARY, seed)
    assert counts.sum() == N_STATIONARY
    p_value = _chisquare_pvalue(counts, N_STATIONARY * pi)
    freq = counts / N_STATIONARY
    se = (pi * (1 - pi) / N_STATIONARY).sqrt()  # (256,) multinomial standard errors
    z_max = float(((freq - pi).abs() / se).max())
    abs_err = float((freq - pi).abs().max())
    marginal_err = float((x1.double().mean(0) - pi @ states).abs().max())
    print(f"{target_name}/{sampler_name}: chi2 p={p_value:.3g} max|err|={abs_err:.2e} "
          f"(bound {Z_MAX * float(se.max()):.2e}) max z={z_max:.2f} marginal err={marginal_err:.2e}")
    assert p_value > P_MIN
    assert z_max < Z_MAX
    assert marginal_err < MARGINAL_TOL


# ---------------------------------------------------------------------------------------------------
# (b) exact GWG transition matrix


@pytest.mark.parametrize("target_name", ["rbm", "pairwise"])
def test_gwg_transition_matrix_is_reversible(exact, target_name):
    target, states, pi = exact[target_name]
    P = _gwg_transition_matrix(GWG(temperature=2.0), target, states)
    assert (P >= -1e-12).all()  # the diagonal 1 - sum(moves) may round to -1e-17
    assert torch.allclose(P.sum(1), torch.ones(NUM_STATES, dtype=torch.float64), rtol=0, atol=1e-12)
    stationarity_err = float((pi @ P - pi).abs().max())
    flux = pi[:, None] * P  # (256, 256): pi_x P_xy
    balance_err = float((flux - flux.T).abs().max())
    print(f"{target_name}: max|pi P - pi|={stationarity_err:.2e} max|detailed balance|={balance_err:.2e} "
          f"mean move prob={float(1 - P.diagonal() @ pi):.3f}")
    assert stationarity_err < 1e-12  # well inside the required 1e-6 (float64 round-off only)
    assert balance_err < 1e-12
    assert float(1 - P.diagonal() @ pi) > 0.1  # the kernel actually moves (not P = I)


@pytest.mark.parametrize("target_name,start", [("rbm", "mode"), ("rbm", "rarest"), ("pairwise", "median")])
def test_gwg_step_matches_transition_row(exact, target_name, start):
    target, states, pi = exact[target_name]
    order = torch.argsort(pi)
    x0_index = {"mode": order[-1], "rarest": order[0], "median": order[NUM_STATES // 2]}[start]
    sampler = GWG(temperature=2.0)
    row = _gwg_transition_matrix(sampler, target, states)[x0_index]  # (256,)
    gen = torch.Generator().manual_seed(11)
    state = sampler.init(states[x0_index].expand(N_ROW, D).clone(), target)
    state, _ = sampler.step(state, target, gen)
    counts = torch.bincount(_state_index(state.x), minlength=NUM_STATES).double()
    support = row > 0  # x0 and its 8 one-flip neighbours
    assert int(support.sum()) <= D + 1
    assert counts[~support].sum() == 0
    p_value = _chisquare_pvalue(counts[support], N_ROW * row[support])
    print(f"{target_name}/{start}: row chi2 p={p_value:.3g} stay prob={float(row[x0_index]):.3f}")
    assert p_value > P_MIN


# ---------------------------------------------------------------------------------------------------
# (c) the checks can fail


def test_broken_gwg_fails_one_step_stationarity(exact):
    target, states, pi = exact["pairwise"]
    counts, _ = _one_step_from_pi(GWGNoReverse(), target, states, pi, N_STATIONARY, seed=2000)
    p_value = _chisquare_pvalue(counts, N_STATIONARY * pi)
    z_max = float(((counts / N_STATIONARY - pi).abs() / (pi * (1 - pi) / N_STATIONARY).sqrt()).max())
    print(f"broken GWG: chi2 p={p_value:.3g} max z={z_max:.1f}")
    assert p_value < 1e-30
    assert z_max > Z_MAX


@pytest.mark.parametrize("target_name", ["rbm", "pairwise"])
def test_broken_gwg_transition_matrix_is_not_invariant(exact, target_name):
    target, states, pi = exact[target_name]
    P = _gwg_transition_matrix(GWG(temperature=2.0), target, states, reverse_term=False)
    err = float((pi @ P - pi).abs().max())
    print(f"{target_name}: broken max|pi P - pi|={err:.2e}")
    assert err > 1e-3
    assert math.isfinite(err)
