"""Pseudo-likelihood maximisation (PLM) for Potts models: objective against brute-force conditionals of
``gradmc.targets.Potts`` and the persistent-vi formula, exact parameter recovery on an enumerable model,
and contact precision on the synthetic benchmark with known contacts."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from gradmc.proteins import apc, coupling_norms, load_synthetic_potts, one_hot, precision_at_k
from gradmc.targets import Potts
from gradmc.training.plm import GROUP_EPS, fit_plm, pseudo_log_likelihood, zero_sum_gauge


@pytest.fixture(scope="module")
def shared(real_data):
    """The canonical files these tests read: ../shared/data, else fetched (see conftest.real_data)."""
    return real_data("pf00018", "potts_synthetic")


def _random_potts(L: int, q: int, seed: int, scale: float = 1.0):
    g = torch.Generator().manual_seed(seed)
    h = torch.randn(L, q, generator=g, dtype=torch.float64)
    A = scale * torch.randn(L, L, q, q, generator=g, dtype=torch.float64)
    J = 0.5 * (A + A.permute(1, 0, 3, 2))
    J[range(L), range(L)] = 0.0
    return h, J


def _all_states(L: int, q: int) -> np.ndarray:
    return np.array(list(itertools.product(range(q), repeat=L)))


def test_pseudo_log_likelihood_matches_potts_conditionals():
    L, q = 4, 3
    h, J = _random_potts(L, q, seed=1)
    model = Potts(h, J)
    states = np.random.default_rng(0).integers(0, q, size=(7, L))
    expect = np.zeros(len(states))
    for n, x in enumerate(states):
        for i in range(L):  # p(x_i | x_-i) from the joint log p of the q sequences differing at site i
            variants = np.repeat(x[None], q, 0)
            variants[:, i] = np.arange(q)
            lp = model.log_prob(one_hot(variants, q, torch.float64))
            expect[n] += float(lp[x[i]] - torch.logsumexp(lp, 0))
    np.testing.assert_allclose(pseudo_log_likelihood(states, h, J).numpy(), expect, rtol=1e-12, atol=1e-12)


def test_pseudo_log_likelihood_matches_persistent_vi_formula(shared):
    # negative_log_pseudolikelihood.m: H = hi(i,:) + sum_{j != i} eij(i, j, :, x_j), written with loops
    data = load_synthetic_potts(shared, num_samples=3)
    hi, eij = data.true_h.numpy(), data.true_J.numpy()
    expect = np.zeros(3)
    for n, x in enumerate(data.states):
        for i in range(data.length):
            H = hi[i].copy()
            for j in range(data.length):
                if j != i:
                    H += eij[i, j, :, x[j]]
            expect[n] += H[x[i]] - np.log(np.exp(H).sum())
    got = pseudo_log_likelihood(data.states, data.true_h, data.true_J).numpy()
    np.testing.assert_allclose(got, expect, rtol=1e-10)


def test_pseudo_log_likelihood_gradient_matches_finite_differences():
    h, J = _random_potts(3, 2, seed=5)
    X = np.array([[0, 1, 1], [1, 0, 1], [1, 1, 0], [0, 0, 0]])
    inputs = (h.clone().requires_grad_(), J.clone().requires_grad_())
    assert torch.autograd.gradcheck(lambda a, b: pseudo_log_likelihood(X, a, b), inputs)


def test_zero_sum_gauge_keeps_the_distribution():
    L, q = 3, 3
    h, J = _random_potts(L, q, seed=2)
    hz, Jz = zero_sum_gauge(h, J)
    x = one_hot(_all_states(L, q), q, torch.float64)
    diff = Potts(h, J).log_prob(x) - Potts(hz, Jz).log_prob(x)
    assert float(diff.max() - diff.min()) < 1e-12  # same distribution: log p differs by a constant
    assert Jz.sum(2).abs().max() < 1e-12 and Jz.sum(3).abs().max() < 1e-12 and hz.sum(1).abs().max() < 1e-12


def test_plm_recovers_exact_parameters():
    """Population pseudo-likelihood (every state weighted by its exact probability) is maximised exactly by
    the true parameters, unique up to gauge (Besag 1975); with lambda = 1e-8 the ridge bias is ~1e-8 and
    L-BFGS stops at loss changes of 1e-12, i.e. parameter errors ~1e-5 (observed ~2e-5); tolerance 1e-3."""
    L, q = 3, 3
    h, J = _random_potts(L, q, seed=0, scale=0.7)
    X = _all_states(L, q)
    p = torch.softmax(Potts(h, J).log_prob(one_hot(X, q, torch.float64)), 0)
    fit = fit_plm(X, q, weights=p.numpy(), lambda_h=1e-8, lambda_J=1e-8, scale_lambda_J=False,
                  max_iterations=1000, tolerance=1e-11)
    assert fit.converged and fit.h.shape == (L, q) and fit.J.shape == (L, L, q, q)
    Potts(fit.h, fit.J)  # symmetric with zero diagonal blocks
    hz, Jz = zero_sum_gauge(h, J)
    fz, Fz = zero_sum_gauge(fit.h, fit.J)
    assert float((hz - fz).abs().max()) < 1e-3 and float((Jz - Fz).abs().max()) < 1e-3
    assert float(Jz.abs().max()) > 0.3  # the couplings are far from the zero start


def test_fit_is_a_stationary_point_of_the_documented_objective():
    """F / sum(w) with all three penalties, rebuilt from the free parameters h and J_ij (i < j): the reported
    objective equals it and its gradient vanishes at the fit (a wrong penalty factor leaves O(0.01))."""
    rng = np.random.default_rng(4)
    L, q = 5, 3
    X = rng.integers(0, q, size=(25, L))
    w = torch.as_tensor(rng.uniform(0.2, 1.0, size=25))
    lam_h, lam_J, lam_g = 0.1, 0.05, 0.2
    fit = fit_plm(X, q, weights=w.numpy(), lambda_h=lam_h, lambda_J=lam_J, lambda_group=lam_g,
                  max_iterations=500, tolerance=1e-10)
    lam_J_eff = lam_J * (q - 1) * (L - 1)
    pairs = [(i, j) for i in range(L) for j in range(i + 1, L)]
    h = fit.h.clone().requires_grad_()
    U = {p: fit.J[p].clone().requires_grad_() for p in pairs}

    def objective():
        J = torch.zeros(L, L, q, q, dtype=torch.float64)
        for (i, j), u in U.items():
            J[i, j], J[j, i] = u, u.T
        reg = lam_h * (h**2).sum()
        for u in U.values():
            reg = reg + lam_J_eff * (u**2).sum() + lam_g * (torch.sqrt((u**2).sum() + GROUP_EPS**2) - GROUP_EPS)
        return (-(w * pseudo_log_likelihood(X, h, J)).sum() + reg) / w.sum()

    value = objective()
    assert float(value.detach()) == pytest.approx(fit.objective, rel=1e-10)
    grads = torch.autograd.grad(value, [h, *U.values()])
    assert max(float(g.abs().max()) for g in grads) < 1e-5
    assert fit.lambda_J == pytest.approx(lam_J_eff) and fit.lambda_group == lam_g


def test_weights_act_as_multiplicities():
    rng = np.random.default_rng(3)
    X = rng.integers(0, 3, size=(12, 4))
    w = rng.integers(1, 4, size=12)
    kwargs = dict(lambda_h=0.05, lambda_J=0.05, max_iterations=300, tolerance=1e-10)
    a = fit_plm(X, 3, weights=w.astype(float), **kwargs)
    b = fit_plm(np.repeat(X, w, axis=0), 3, **kwargs)
    assert a.lambda_J == pytest.approx(0.05 * 2 * 3)  # EVcouplings scaling (q - 1)(L - 1)
    np.testing.assert_allclose(a.J.numpy(), b.J.numpy(), atol=1e-6)
    np.testing.assert_allclose(a.h.numpy(), b.h.numpy(), atol=1e-6)
    c = fit_plm(X, 3, weights=w.astype(float), batch_size=5, **kwargs)  # chunking changes nothing
    np.testing.assert_allclose(a.J.numpy(), c.J.numpy(), atol=1e-6)


def test_plm_input_errors():
    X = np.zeros((4, 3), dtype=int)
    with pytest.raises(ValueError, match="0..1"):
        fit_plm(X + 2, 2)
    with pytest.raises(ValueError, match=r"weights must be \(4,\)"):
        fit_plm(X, 2, weights=np.ones(3))
    with pytest.raises(ValueError, match="lambda_h"):
        fit_plm(X, 2, lambda_h=-1.0)
    with pytest.raises(ValueError, match="J must have shape"):
        pseudo_log_likelihood(X, torch.zeros(3, 2), torch.zeros(3, 3, 2, 3))


def test_plm_synthetic_contacts_above_chance(shared):
    """Synthetic benchmark (Ingraham & Marks 2017), first 400 samples, 10 L-BFGS iterations: top-L pairs with
    |i - j| >= 6 after APC. Chance = 33 / 990 = 0.033; the bound 0.3 is 9x chance (measured 0.66)."""
    data = load_synthetic_potts(shared, num_samples=400)
    fit = fit_plm(data.states, data.num_states, max_iterations=10)
    F = coupling_norms(fit.J)
    i, j = np.triu_indices(data.length, 6)
    chance = data.contacts[i, j].mean()
    assert chance == pytest.approx(33 / 990)
    assert precision_at_k(apc(F), data.contacts, data.length, min_separation=6) >= 0.3
    assert precision_at_k(F, data.contacts, data.length, min_separation=1) >= 0.8  # chance 100 / 1225


@pytest.mark.slow
def test_plm_pf00018_contacts_above_chance(shared):
    """PF00018 with 0.8-identity weights, 30 L-BFGS iterations in float32 (~2-3 min on 2 busy cores): top-L
    APC pairs with |i - j| >= 6. Chance = 107 / 903 = 0.118; the bound 0.45 is ~4x chance."""
    from gradmc.proteins import load_pf00018, sequence_weights

    data = load_pf00018(shared)
    fit = fit_plm(data.states, data.num_states, weights=sequence_weights(data.states), max_iterations=30,
                  dtype=torch.float32)
    assert precision_at_k(apc(coupling_norms(fit.J)), data.contacts, data.length, min_separation=6) >= 0.45
