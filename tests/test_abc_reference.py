"""The exact ABC reference posterior of the skew-normal location (gradmc.targets.abc_reference, KMC Fig. 4
right) against closed forms, brute-force simulation and quadrature."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from gradmc.targets.abc_reference import abc_log_likelihood, half_normal_mean_pmf, reference_marginal
from gradmc.targets.abc_skew_normal import ABCSkewNormalPosterior


def test_half_normal_mean_pmf_moments():
    """A = mean of n |N(0,1)|: E[A] = sqrt(2/pi), Var[A] = (1 - 2/pi) / n; grid error O(h^2)."""
    for n in (1, 10):
        a, p = half_normal_mean_pmf(n, h=5e-3)
        np.testing.assert_allclose(p.sum(), 1.0)
        mean = p @ a
        np.testing.assert_allclose(mean, math.sqrt(2 / math.pi), atol=1e-5)
        np.testing.assert_allclose(p @ (a - mean) ** 2, (1 - 2 / math.pi) / n, rtol=1e-3)
    with pytest.raises(ValueError, match="n >= 1"):
        half_normal_mean_pmf(0)


def test_reference_is_exact_gaussian_when_alpha_is_zero():
    """alpha = 0: summary ~ N(theta, I / n), ABC likelihood N(s_obs; theta, (1/n + eps^2) I): conjugate."""
    target = ABCSkewNormalPosterior(d=3, alpha_value=0.0, num_obs=4, epsilon=0.5, prior_var=2.0, seed=3)
    s2 = 1 / 4 + 0.25
    var = 1 / (1 / 2.0 + 1 / s2)
    ref = reference_marginal(target, coord=1)
    np.testing.assert_allclose(ref["mean"], var / s2 * float(target.s_obs[1]), rtol=1e-10)
    np.testing.assert_allclose(ref["std"], math.sqrt(var), rtol=1e-10)
    np.testing.assert_allclose(ref["density"], np.exp(-0.5 * (ref["grid"] - ref["mean"]) ** 2 / var)
                               / math.sqrt(2 * math.pi * var), rtol=1e-8)
    with pytest.raises(ValueError, match="coord"):
        reference_marginal(target, coord=3)


def test_reference_abc_likelihood_matches_brute_force():
    """The mixture formula for p_eps(s_obs | theta) vs the mean kernel over 100k simulated summaries (SE ~1%)."""
    target = ABCSkewNormalPosterior()
    g = torch.Generator().manual_seed(5)
    theta = torch.stack([target.theta_true - 0.3, target.theta_true + 0.1 * torch.arange(10.0, dtype=torch.float64)])
    exact = abc_log_likelihood(target, theta)
    for c in range(2):
        k = torch.cat([target.log_kernel(target.simulate_summaries(theta[c:c + 1], 50_000, g))[0] for _ in range(2)])
        w = torch.exp(k - exact[c])  # ratio to the exact likelihood, mean 1
        se = float(w.std()) / math.sqrt(w.numel())
        assert abs(float(w.mean()) - 1) < 4 * se and se < 0.02, (float(w.mean()), se)
    with pytest.raises(ValueError, match="theta"):
        abc_log_likelihood(target, theta[:, :3])


def test_reference_marginal_matches_quadrature_in_one_dimension():
    """d = 1, alpha = 3: posterior prop. to prior x exact ABC likelihood, integrated on a theta grid (an
    independent route through Bayes' rule; the prior is informative here, so the mixture weights matter)."""
    target = ABCSkewNormalPosterior(d=1, alpha_value=3.0, num_obs=4, epsilon=0.5, prior_var=0.5, seed=2)
    ref = reference_marginal(target)
    grid = np.linspace(ref["mean"] - 8 * ref["std"], ref["mean"] + 8 * ref["std"], 601)
    theta = torch.tensor(grid[:, None])
    log_post = (abc_log_likelihood(target, theta) + target.log_prior(theta)).numpy()
    post = np.exp(log_post - log_post.max())
    post /= np.trapezoid(post, grid)
    mean = np.trapezoid(post * grid, grid)
    np.testing.assert_allclose(ref["mean"], mean, atol=1e-6)
    np.testing.assert_allclose(ref["std"] ** 2, np.trapezoid(post * (grid - mean) ** 2, grid), rtol=1e-5)
    np.testing.assert_allclose(reference_marginal(target, grid=grid)["density"], post, atol=1e-6)


def test_reference_density_consistent_with_its_moments():
    ref = reference_marginal(ABCSkewNormalPosterior())
    x, f = ref["grid"], ref["density"]
    np.testing.assert_allclose(np.trapezoid(f, x), 1.0, atol=1e-6)
    np.testing.assert_allclose(np.trapezoid(f * x, x), ref["mean"], atol=1e-6)
    np.testing.assert_allclose(np.trapezoid(f * (x - ref["mean"]) ** 2, x), ref["std"] ** 2, rtol=1e-5)
