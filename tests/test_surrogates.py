"""Tests of gradmc.surrogates: KMC lite / finite score estimators, random features, score matching, CV."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch

from gradmc.surrogates import (
    FiniteSurrogate,
    LiteSurrogate,
    cross_validate_finite,
    cross_validate_lite,
    fit_finite,
    fit_lite,
    gaussian_kernel,
    gaussian_random_features,
    rational_quadratic_kernel,
    rational_quadratic_random_features,
    score_matching_objective,
)
from gradmc.surrogates.cv import held_out_score, kfold_indices
from gradmc.surrogates.finite import finite_system
from gradmc.surrogates.lite import lite_system

F64 = torch.float64


def _gaussian(d: int, n: int, seed: int):
    """(mu (d,), Sigma (d, d), samples (n, d), test points (200, d) in the bulk) of a correlated Gaussian."""
    g = torch.Generator().manual_seed(seed)
    a = torch.eye(d, dtype=F64) + 0.4 * torch.triu(torch.ones(d, d, dtype=F64), 1)
    mu = torch.linspace(-0.5, 1.0, d, dtype=F64)
    x = mu + torch.randn(n, d, generator=g, dtype=F64) @ a.t()
    xt = mu + 0.7 * torch.randn(200, d, generator=g, dtype=F64) @ a.t()
    return mu, a @ a.t(), x, xt


def _rel_score_error(sur, mu, sigma, xt) -> float:
    true = -(xt - mu) @ torch.linalg.inv(sigma)
    return float((sur.grad(xt) - true).norm() / true.norm())


# ---------------------------------------------------------------- derivatives against autograd


def _autograd_grad_lap(f, x):
    x = x.clone().requires_grad_(True)
    g = torch.autograd.grad(f(x).sum(), x, create_graph=True)[0]
    lap = sum(torch.autograd.grad(g[:, l].sum(), x, retain_graph=True)[0][:, l] for l in range(x.shape[1]))
    return g.detach(), lap.detach()


def test_lite_and_finite_derivatives_match_autograd():
    mu, sigma, x, xt = _gaussian(3, 100, 0)
    lite = fit_lite(x, 3.0, 0.1)
    fin = fit_finite(x, gaussian_random_features(3, 50, 1.5, torch.Generator().manual_seed(0)), 1e-3)
    for sur in (lite, fin):
        g, lap = _autograd_grad_lap(sur.log_density, xt[:7])
        torch.testing.assert_close(sur.grad(xt[:7]), g, rtol=1e-10, atol=1e-10)
        torch.testing.assert_close(sur.laplacian(xt[:7]), lap, rtol=1e-9, atol=1e-9)


def test_lite_alpha_minimises_penalised_training_objective():
    """alpha of eq. 7 is the stationary point of J(f; Z) + (2 lambda / (n sigma^2)) ||alpha||^2."""
    _, _, z, _ = _gaussian(2, 60, 1)
    s, lam = 2.0, 0.3
    sur = fit_lite(z, s, lam)
    alpha = sur.alpha.clone().requires_grad_(True)
    trial = LiteSurrogate(z, alpha, s, lam)
    obj = score_matching_objective(trial, z) + 2 * lam / (z.shape[0] * s**2) * (alpha**2).sum()
    (grad,) = torch.autograd.grad(obj, alpha)
    assert float(grad.abs().max()) < 1e-10


def test_finite_theta_minimises_penalised_training_objective():
    _, _, x, _ = _gaussian(2, 80, 2)
    sur = fit_finite(x, gaussian_random_features(2, 40, 1.0, torch.Generator().manual_seed(3)), 0.05)
    theta = sur.theta.clone().requires_grad_(True)
    feats = sur.features
    j = (feats.laplacian(x) @ theta + 0.5 * ((feats.gradient(x) @ theta) ** 2).sum(-1)).mean()
    (grad,) = torch.autograd.grad(j + 0.5 * sur.lam * (theta**2).sum(), theta)
    assert float(grad.abs().max()) < 1e-10
    torch.testing.assert_close(j.detach(), score_matching_objective(sur, x))


# ---------------------------------------------------------------- (a) score recovery on a Gaussian

LITE_TOL = 0.2
FINITE_TOL = 0.15


@pytest.mark.parametrize("d", [2, 3])
def test_lite_recovers_gaussian_score(d):
    mu, sigma, x, xt = _gaussian(d, 500, 10 + d)
    err = _rel_score_error(fit_lite(x, 32.0, 100.0), mu, sigma, xt)
    assert err < LITE_TOL, err


@pytest.mark.parametrize("d", [2, 3])
@pytest.mark.parametrize("kernel", ["gaussian", "rational_quadratic"])
def test_finite_recovers_gaussian_score(d, kernel):
    mu, sigma, x, xt = _gaussian(d, 2000, 20 + d)
    g = torch.Generator().manual_seed(d)
    feats = (gaussian_random_features(d, 300, 4.0, g) if kernel == "gaussian"
             else rational_quadratic_random_features(d, 300, 4.0, 2.0, g))
    err = _rel_score_error(fit_finite(x, feats, 1e-4), mu, sigma, xt)
    assert err < FINITE_TOL, err


# ---------------------------------------------------------------- (b) online == batch


def test_finite_online_updates_equal_batch_fit():
    _, _, x, xt = _gaussian(3, 300, 4)
    feats = gaussian_random_features(3, 120, 2.0, torch.Generator().manual_seed(5))
    batch = fit_finite(x, feats, 1e-3)
    online = FiniteSurrogate(feats, 1e-3)
    for i in range(x.shape[0]):
        online = online.update(x[i : i + 1])
        if i == 10:
            early, early_theta = online, online.theta.clone()
    assert online.num_points == 300
    assert not torch.allclose(early_theta, batch.theta)
    # update returns a new value: the surrogate of step 10 is unchanged by the 289 later updates
    assert early.num_points == 11 and torch.equal(early.theta, early_theta)
    torch.testing.assert_close(online.b, batch.b, rtol=0, atol=1e-10)
    torch.testing.assert_close(online.c, batch.c, rtol=0, atol=1e-10)
    assert float((online.theta - batch.theta).abs().max()) < 1e-8
    assert float((online.grad(xt) - batch.grad(xt)).abs().max()) < 1e-8
    # batches of points give the same statistics as single points
    chunked = FiniteSurrogate(feats, 1e-3).update(x[:100]).update(x[100:])
    assert float((chunked.theta - batch.theta).abs().max()) < 1e-8


def test_finite_surrogate_is_immutable_and_update_adds_exact_sums():
    """update(x) = a new surrogate whose sums are the old sums plus those of x (finite_system times N)."""
    _, _, x, _ = _gaussian(2, 40, 9)
    feats = gaussian_random_features(2, 30, 1.5, torch.Generator().manual_seed(2))
    first = fit_finite(x[:25], feats, 0.1)
    before = (first.num_points, first.b_sum.clone(), first.c_sum.clone(), first.theta.clone())
    second = first.update(x[25:])
    assert second is not first and (first.num_points, second.num_points) == (25, 40)
    assert torch.equal(first.b_sum, before[1]) and torch.equal(first.c_sum, before[2])
    assert torch.equal(first.theta, before[3])
    b, c = finite_system(x[25:], feats)
    torch.testing.assert_close(second.b_sum, before[1] + 15 * b, rtol=0, atol=1e-10)
    torch.testing.assert_close(second.c_sum, before[2] + 15 * c, rtol=0, atol=1e-10)
    a = second.c + 0.1 * torch.eye(30, dtype=torch.float64)
    torch.testing.assert_close(second.theta, torch.linalg.solve(a, second.b), rtol=1e-9, atol=1e-12)
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.num_points = 0
    empty = FiniteSurrogate(feats, 0.1)
    with pytest.raises(ValueError, match="no points"):
        empty.grad(x)


# ---------------------------------------------------------------- (c) order invariance


def test_fits_are_invariant_to_data_order():
    _, _, x, xt = _gaussian(2, 200, 6)
    perm = torch.randperm(200, generator=torch.Generator().manual_seed(7))
    a, b = fit_lite(x, 3.0, 0.5), fit_lite(x[perm], 3.0, 0.5)
    torch.testing.assert_close(b.alpha, a.alpha[perm], rtol=1e-8, atol=1e-10)
    torch.testing.assert_close(b.grad(xt), a.grad(xt), rtol=1e-8, atol=1e-10)
    feats = gaussian_random_features(2, 80, 1.5, torch.Generator().manual_seed(8))
    torch.testing.assert_close(fit_finite(x[perm], feats, 1e-3).theta, fit_finite(x, feats, 1e-3).theta,
                               rtol=1e-8, atol=1e-10)


# ---------------------------------------------------------------- (d) random features -> kernel


@pytest.mark.parametrize("kernel", ["gaussian", "rational_quadratic"])
def test_random_features_converge_to_kernel_like_inverse_sqrt_m(kernel):
    g = torch.Generator().manual_seed(9)
    x = torch.randn(40, 3, generator=g, dtype=F64)
    s, a = 1.3, 1.5
    exact = gaussian_kernel(x, x, 2 * s * s) if kernel == "gaussian" else rational_quadratic_kernel(x, x, s, a)
    ms = [100, 1600, 25600]
    errs = []
    for m in ms:
        rms = []
        for rep in range(4):
            gr = torch.Generator().manual_seed(100 * rep + m)
            feats = (gaussian_random_features(3, m, s, gr) if kernel == "gaussian"
                     else rational_quadratic_random_features(3, m, s, a, gr))
            torch.testing.assert_close(feats.kernel(x, x), exact)
            rms.append(float((feats.approximate_kernel(x, x) - exact).pow(2).mean().sqrt()))
        errs.append(sum(rms) / len(rms))
    # each 16x increase of m should cut the error ~4x (1/sqrt(m)); allow [2.5, 6.5]
    for e0, e1 in zip(errs, errs[1:], strict=False):
        assert 2.5 < e0 / e1 < 6.5, errs
    assert errs[-1] * math.sqrt(ms[-1]) < 2.0, errs


def test_random_feature_derivatives_are_consistent():
    feats = rational_quadratic_random_features(2, 30, 0.8, 1.0, torch.Generator().manual_seed(1))
    x = torch.randn(5, 2, dtype=F64, generator=torch.Generator().manual_seed(2))
    jac = torch.autograd.functional.jacobian(lambda y: feats.features(y).sum(0), x)  # (m, N, d)
    torch.testing.assert_close(feats.gradient(x), jac.permute(1, 2, 0))
    torch.testing.assert_close(feats.laplacian(x), feats.second_derivatives(x).sum(1))


# ---------------------------------------------------------------- (e) cross-validation


def test_score_uses_the_held_out_fold():
    mu, sigma, x, _ = _gaussian(2, 300, 11)
    train, test_a, test_b = x[:200], x[200:250], x[250:]
    for fit in (lambda t: fit_lite(t, 4.0, 0.1),
                lambda t: fit_finite(t, gaussian_random_features(2, 60, 2.0, torch.Generator().manual_seed(0)), 1e-3)):
        sa, sb, strain = (held_out_score(fit, train, t) for t in (test_a, test_b, train))
        assert len({sa, sb, strain}) == 3  # same training fold, different held-out folds -> different scores
    # the held-out score of an overfitted (tiny-width) model is worse than its training score
    over = lambda t: fit_lite(t, 0.05, 1e-6)  # noqa: E731
    assert held_out_score(over, train, test_a) > held_out_score(over, train, train)


def test_kfold_indices_partition():
    folds = kfold_indices(23, 4, torch.Generator().manual_seed(0))
    assert sorted(torch.cat(folds).tolist()) == list(range(23))
    assert {len(f) for f in folds} <= {5, 6}


def test_cross_validation_picks_sensible_widths_for_a_gaussian():
    mu, sigma, x, xt = _gaussian(2, 300, 12)
    g = torch.Generator().manual_seed(0)
    res = cross_validate_lite(x, [0.05, 0.5, 8.0, 32.0], [1e-3, 1.0, 100.0], num_folds=3, generator=g)
    assert res.scores.shape == (4, 3, 3)
    assert res.best_width >= 8.0, res.mean_scores  # measured: picks (32, 100)
    resf = cross_validate_finite(x, [0.1, 4.0], [1e-4, 1e-1], num_features=100, num_folds=3, generator=g)
    assert resf.best_width == 4.0, resf.mean_scores
    err = _rel_score_error(fit_lite(x, res.best_width, res.best_lambda), mu, sigma, xt)
    assert err < 0.3, err


# ---------------------------------------------------------------- (f) errors


def test_bad_inputs_raise_value_errors():
    x = torch.randn(10, 2, dtype=F64)
    feats = gaussian_random_features(2, 5, 1.0)
    with pytest.raises(ValueError, match="sigma"):
        fit_lite(x, 0.0, 1.0)
    with pytest.raises(ValueError, match="lam"):
        fit_lite(x, 1.0, -1.0)
    with pytest.raises(ValueError, match="regulariser"):
        fit_lite(x, 1.0, 1.0, regulariser="nope")
    with pytest.raises(ValueError, match="shape"):
        fit_lite(torch.randn(10, dtype=F64), 1.0, 1.0)
    with pytest.raises(ValueError, match="floating"):
        fit_lite(torch.ones(10, 2, dtype=torch.int64), 1.0, 1.0)
    with pytest.raises(ValueError, match="non-finite"):
        fit_lite(torch.full((3, 2), float("nan"), dtype=F64), 1.0, 1.0)
    with pytest.raises(ValueError, match="num_features"):
        gaussian_random_features(2, 0, 1.0)
    with pytest.raises(ValueError, match="lengthscale"):
        gaussian_random_features(2, 5, -1.0)
    with pytest.raises(ValueError, match="shape"):
        rational_quadratic_random_features(2, 5, 1.0, 0.0)
    with pytest.raises(ValueError, match="lam"):
        FiniteSurrogate(feats, 0.0)
    with pytest.raises(ValueError, match="no points"):
        _ = FiniteSurrogate(feats, 1.0).theta
    with pytest.raises(ValueError, match="shape"):
        FiniteSurrogate(feats, 1.0).update(torch.randn(4, 3, dtype=F64))
    with pytest.raises(ValueError, match="shape"):
        fit_lite(x, 1.0, 1.0).grad(torch.randn(4, 3, dtype=F64))
    with pytest.raises(ValueError, match="shape"):
        score_matching_objective(fit_lite(x, 1.0, 1.0), torch.randn(4, 3, dtype=F64))
    with pytest.raises(ValueError, match="num_folds"):
        cross_validate_lite(x, [1.0], [1.0], num_folds=1)
    with pytest.raises(ValueError, match="non-empty"):
        cross_validate_lite(x, [], [1.0])
    with pytest.raises(ValueError, match="width"):
        cross_validate_lite(x, [-1.0], [1.0])
    with pytest.raises(ValueError, match="kernel"):
        cross_validate_finite(x, [1.0], [1.0], num_features=5, kernel="nope")
    b, c, k = lite_system(x, 1.0)
    assert b.shape == (10,) and c.shape == k.shape == (10, 10)
    assert finite_system(x, feats)[1].shape == (5, 5)


def test_median_heuristic_exact_values_and_options():
    """Points 0, 1, 3, 7 on a line: the 6 distances 1, 3, 7, 2, 6, 4 have lower median 3."""
    from gradmc.surrogates import median_heuristic

    x = torch.tensor([[0.0, 0.0], [1.0, 0.0], [3.0, 0.0], [7.0, 0.0]], dtype=torch.float64)
    assert median_heuristic(x) == 3.0 and median_heuristic(x, pairwise="cdist") == 3.0
    assert median_heuristic(x, max_points=3) == 2.0  # 0, 1, 3: distances 1, 3, 2
    same = torch.ones(5, 2, dtype=torch.float64)
    assert median_heuristic(same, fallback=1.0) == 1.0 and median_heuristic(same) == 0.0
    assert median_heuristic(x[:1], fallback=2.5) == 2.5
    with pytest.raises(ValueError, match="at least 2 points"):
        median_heuristic(x[:1])
    with pytest.raises(ValueError, match="pairwise"):
        median_heuristic(x, pairwise="manhattan")
    # over 25 rows cdist takes the matrix-product route: the same median to rounding
    z = torch.randn(60, 3, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    assert median_heuristic(z, pairwise="cdist") == pytest.approx(median_heuristic(z), rel=1e-12)


def test_fit_lite_on_history_uses_the_distinct_states_and_the_cv_choice():
    """Exact: repeats are dropped (the fit equals fit_lite on the distinct rows), a cap draws one permutation,
    given params skip the CV, a one-point grid needs none, else the CV winner is used."""
    from gradmc.surrogates import cross_validate_lite, fit_lite_on_history

    _, _, x, _ = _gaussian(2, 30, 4)
    history = torch.cat([x, x[:10], x[5:8]])  # 43 rows, 30 distinct
    sur, params = fit_lite_on_history(history, 100, (2.0,), (0.1,), 3, torch.Generator().manual_seed(0))
    want = fit_lite(torch.unique(x, dim=0), 2.0, 0.1)
    assert params == (2.0, 0.1) and torch.equal(sur.z, want.z) and torch.equal(sur.alpha, want.alpha)
    g = torch.Generator().manual_seed(1)
    capped, _ = fit_lite_on_history(history, 12, (2.0,), (0.1,), 3, g, params=(3.0, 0.5))
    perm = torch.randperm(30, generator=torch.Generator().manual_seed(1))[:12]
    assert torch.equal(capped.z, torch.unique(x, dim=0)[perm]) and (capped.sigma, capped.lam) == (3.0, 0.5)
    grid = ((1.0, 4.0), (0.01, 1.0))
    _, chosen = fit_lite_on_history(history, 100, *grid, 3, torch.Generator().manual_seed(2))
    cv = cross_validate_lite(torch.unique(x, dim=0), *grid, 3, torch.Generator().manual_seed(2))
    assert chosen == (cv.best_width, cv.best_lambda)
