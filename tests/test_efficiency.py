"""Exact kernel efficiency (gradmc.samplers.efficiency) against closed forms, and GWG Theorem 1's claims."""

from __future__ import annotations

import math

import pytest
import torch

from gradmc.claims.theory.gwg_theorem1 import SIGMAS, _model, _smoothness, claims, kernels, theorem_terms
from gradmc.core.exact import enumerate_binary
from gradmc.samplers.efficiency import asymptotic_variance, locally_balanced_kernel, spectral_gap
from gradmc.samplers.enumerate import detailed_balance_error, stationarity_error


@pytest.mark.parametrize(("a", "b"), [(0.3, 0.1), (0.05, 0.9), (0.5, 0.5)])
def test_two_state_chain_closed_forms(a, b):
    """P = [[1 - a, a], [b, 1 - b]]: eigenvalues 1 and lambda = 1 - a - b, so Gap = a + b; for h = 1{state 1},
    var_p(h) = pi_0 pi_1 and the asymptotic variance is pi_0 pi_1 (1 + lambda) / (1 - lambda)."""
    P = torch.tensor([[1 - a, a], [b, 1 - b]], dtype=torch.float64)
    pi = torch.tensor([b, a], dtype=torch.float64) / (a + b)
    lam = 1 - a - b
    assert spectral_gap(P, pi) == pytest.approx(a + b, abs=1e-12)
    h = torch.tensor([0.0, 1.0])
    expected = float(pi[0] * pi[1]) * (1 + lam) / (1 - lam)
    assert float(asymptotic_variance(P, pi, h)) == pytest.approx(expected, rel=1e-10)


def test_asymptotic_variance_is_the_sum_of_autocovariances():
    """On a random reversible kernel: var_p(h) + 2 sum_k cov(h(x_0), h(x_k)), summed from powers of P."""
    g = torch.Generator().manual_seed(0)
    S = 6
    pi = torch.softmax(torch.randn(S, generator=g, dtype=torch.float64), 0)
    sym = torch.rand(S, S, generator=g, dtype=torch.float64)
    flux = 0.5 * (sym + sym.T) * pi[:, None] * pi[None, :]  # symmetric flux: pi_a P_ab = pi_b P_ba
    P = flux / pi[:, None]
    P = P / P.sum(1).max()  # substochastic rows, the rest of each row stays put
    P += torch.diag(1.0 - P.sum(1))
    h = torch.randn(S, 2, generator=g, dtype=torch.float64)
    h0 = h - pi @ h
    total, power = (pi[:, None] * h0 * h0).sum(0), torch.eye(S, dtype=torch.float64)
    for _ in range(5000):
        power = power @ P
        total += 2.0 * (pi[:, None] * h0 * (power @ h0)).sum(0)
    assert torch.allclose(asymptotic_variance(P, pi, h), total, rtol=1e-8)


def test_bad_kernels_are_refused():
    pi = torch.full((3,), 1 / 3, dtype=torch.float64)
    cycle = torch.tensor([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]], dtype=torch.float64)
    with pytest.raises(ValueError, match="not reversible"):
        spectral_gap(cycle, pi)
    with pytest.raises(ValueError, match="rows that sum to 1"):
        spectral_gap(torch.full((3, 3), 0.5, dtype=torch.float64), pi)
    with pytest.raises(ValueError, match="h must have S = 3 rows"):
        asymptotic_variance(torch.eye(3, dtype=torch.float64), pi, torch.zeros(4))
    with pytest.raises(ValueError, match="finite"):
        locally_balanced_kernel(torch.tensor([0.0, math.inf, 0.0, 0.0]), 2)


def test_locally_balanced_kernel_matches_its_definition():
    """Every entry from the definition, state by state, on D = 3; and pi-reversibility."""
    dim = 3
    g = torch.Generator().manual_seed(1)
    f = torch.randn(2 ** dim, generator=g, dtype=torch.float64) * 2.0
    P = locally_balanced_kernel(f, dim)

    def q(x: int) -> dict[int, float]:
        w = {x ^ (1 << i): math.exp((float(f[x ^ (1 << i)]) - float(f[x])) / 2) for i in range(dim)}
        z = sum(w.values())
        return {y: v / z for y, v in w.items()}

    for x in range(2 ** dim):
        for y, qxy in q(x).items():
            accept = min(1.0, math.exp(float(f[y]) - float(f[x])) * q(y)[x] / qxy)
            assert float(P[x, y]) == pytest.approx(qxy * accept, rel=1e-12)
    pi = torch.softmax(f, 0)
    assert detailed_balance_error(P, pi) < 1e-14 and stationarity_error(P, pi) < 1e-14


def test_gwg_equals_the_locally_balanced_kernel_on_an_ising_model():
    """f(x) = s^T J s + b^T s with a zero diagonal: GWG's first-order estimate of a flip's f(x') - f(x) is exact,
    so its kernel IS the locally balanced one: an exact check of our GWG kernel."""
    from gradmc.targets.ising import DenseIsing

    g = torch.Generator().manual_seed(2)
    upper = torch.triu(torch.randn(6, 6, generator=g, dtype=torch.float64) * 0.4, diagonal=1)
    model = DenseIsing(upper + upper.T, torch.randn(6, generator=g, dtype=torch.float64))
    states = enumerate_binary(6, torch.float64)
    from gradmc.samplers.discrete.gwg import GWG
    from gradmc.samplers.enumerate import transition_matrix

    q_grad = transition_matrix(lambda x: GWG().transition_probabilities(x, model), states)
    assert torch.allclose(q_grad, locally_balanced_kernel(model(states), 6), atol=1e-12)


def test_theorem_1_holds_and_its_check_can_fail():
    made = claims()
    assert [c.status for c in made] == ["PASS", "PASS"]
    for c in made:
        assert c.interval.low == c.interval.high == c.interval.effect > 0 and c.interval.replicates == 20
    # on the weakest couplings c is near 1 and GWG's gap is within 1% of the locally balanced one's
    weak = _model(SIGMAS[0], 0)
    terms = theorem_terms(weak, _smoothness(weak))
    assert terms["c"] > 0.9 and terms["gap_grad"] / terms["gap"] == pytest.approx(1.0, abs=0.01)
    # an understated smoothness (L = 0: c = 1) claims Gap(Q_grad) >= Gap(Q), false on a strongly coupled RBM
    strong = _model(SIGMAS[2], 0)
    assert theorem_terms(strong, 0.0)["log_b"] < 0
    _, pi, q_grad, q = kernels(strong)
    assert detailed_balance_error(q_grad, pi) < 1e-12 and detailed_balance_error(q, pi) < 1e-12
