"""B3 (GP classification on Glass, pseudo-marginal) and B4 (ABC skew normal) targets, and the Glass loader.

The real data lives in ``<repo>/../shared/data``; when it is missing the Glass tests fail. Downloads go to a
local http.server on 127.0.0.1 only.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from _localdata import serve

from gradmc.data import glass
from gradmc.samplers.continuous.pseudo_marginal import GaussianRandomWalkProposal, PseudoMarginalMH
from gradmc.targets.abc_skew_normal import ABCSkewNormalPosterior, SkewNormalSimulator
from gradmc.targets.gp_classification import GPClassificationPosterior


@pytest.fixture(scope="module")
def shared(real_data):
    """UCI Glass: ../shared/data, else fetched (see conftest.real_data)."""
    return real_data("glass")

pytestmark = pytest.mark.usefixtures("download_env")


# --- Glass ------------------------------------------------------------------------------------------


def test_glass_remote_matches_manifest(shared_copy):
    rows = [line.split("\t") for line in (shared_copy / "MANIFEST.tsv").read_text().splitlines()]
    entry = {r[2]: r for r in rows if len(r) == 3}[glass.GLASS.relpath]
    assert int(entry[0]) == glass.GLASS.size and entry[1] == glass.GLASS.sha256


def _check_glass(X, y):
    assert X.shape == (214, 9) and X.dtype == np.float64 and y.shape == (214,)
    np.testing.assert_allclose(X.mean(0), 0, atol=1e-12)
    np.testing.assert_allclose(X.std(0), 1, rtol=1e-12)
    assert set(np.unique(y)) == {0, 1} and y.sum() == 163  # types 1, 2, 3 (70 + 76 + 17); type 4 is empty
    assert y[:163].all() and not y[163:].any()  # the file is sorted by type


def test_load_glass_from_shared_folder(shared):
    _check_glass(*glass.load_glass(shared, remote=glass.GLASS))


def test_load_glass_downloads_verified_from_local_mirror(shared, tmp_path):
    with pytest.raises(FileNotFoundError, match="glass/glass.data"):
        glass.load_glass(tmp_path, remote=glass.GLASS)
    with serve(shared) as url:
        X, y = glass.load_glass(tmp_path, allow_download=True, base_url=url, remote=glass.GLASS)
    _check_glass(X, y)
    assert (tmp_path / "glass" / "glass.data").read_bytes() == (shared / "glass" / "glass.data").read_bytes()


def test_load_glass_rejects_corrupt_file(shared, tmp_path):
    bad = tmp_path / "glass" / "glass.data"
    bad.parent.mkdir()
    bad.write_bytes((shared / "glass" / "glass.data").read_bytes().replace(b"1.52101", b"1.52102", 1))
    with pytest.raises(ValueError, match="sha256"):
        glass.load_glass(tmp_path, remote=glass.GLASS)


def test_parse_glass_validates(shared, tmp_path):
    raw, types = glass.parse_glass(shared / "glass" / "glass.data")
    assert raw.shape == (214, 9) and sorted(set(types.tolist())) == [1, 2, 3, 5, 6, 7]
    lines = (shared / "glass" / "glass.data").read_text().splitlines()
    cases = {
        "rows": lines[:-1],
        "columns": [ln.rsplit(",", 1)[0] for ln in lines],
        "types": lines[:-1] + [lines[-1].rsplit(",", 1)[0] + ",9"],
        "numeric": lines[:-1] + [lines[-1].replace("7", "x")],
    }
    for name, content in cases.items():
        path = tmp_path / f"{name}.data"
        path.write_text("\n".join(content) + "\n")
        with pytest.raises(ValueError, match=str(path)):
            glass.parse_glass(path)


# --- GP classification --------------------------------------------------------------------------------


def _tiny_gpc(**kw):
    X = torch.tensor([[-1.5], [-0.8], [-0.1], [0.4], [0.9], [1.6]], dtype=torch.float64)
    y = torch.tensor([0, 0, 1, 0, 1, 1])
    return GPClassificationPosterior(X, y, **kw)


def test_gpc_is_estimate_is_unbiased_against_brute_force():
    """E_q[p(y|f) N(f; 0, K) / q(f)] = p(y|theta) = E_{f ~ N(0, K)}[p(y|f)] (module docstring).

    Brute force: 2e6 prior draws of f. IS: 4000 independent estimates with only S = 2 samples each (few
    samples make any bias of the estimator, e.g. from the log, easy to see). Compared on the natural scale.
    """
    target = _tiny_gpc(num_importance_samples=2)
    g = torch.Generator().manual_seed(0)
    theta = torch.tensor([[0.3]], dtype=torch.float64)
    K = target.covariance(theta)[0]
    f = torch.randn(2_000_000, 6, generator=g, dtype=torch.float64) @ torch.linalg.cholesky(K).T
    lik = torch.exp(target.log_lik(f))
    bf, bf_se = lik.mean(), lik.std() / math.sqrt(lik.numel())
    est = torch.exp(target.log_marginal_estimate(theta.expand(4000, 1), g))
    is_mean, is_se = est.mean(), est.std() / math.sqrt(est.numel())
    assert abs(is_mean - bf) < 4 * math.hypot(is_se, bf_se), (is_mean, is_se, bf, bf_se)
    assert is_se / is_mean < 0.01  # Laplace q is a good proposal here
    # the deterministic Laplace approximation is close (it is not exact)
    laplace = target.laplace_log_marginal(theta)[0]
    assert abs(laplace - torch.log(bf)) < 0.15
    # many samples: the log estimate concentrates at log p(y|theta)
    big = target.log_marginal_estimate(theta, g, num_samples=200_000)[0]
    assert abs(big - torch.log(bf)) < 5 * bf_se / bf + 0.01


def test_gpc_laplace_mode_is_stationary():
    target = _tiny_gpc()
    theta = torch.tensor([[-1.0], [0.0], [2.0]], dtype=torch.float64)
    K, f_hat, _, _, a = target.laplace(theta)
    grad = -torch.linalg.solve(K, f_hat[..., None]).squeeze(-1) + (target.y01 - torch.sigmoid(f_hat))
    assert grad.abs().max() < 1e-6
    torch.testing.assert_close(a, target.y01 - torch.sigmoid(f_hat))  # a = grad log p(y|f_hat) at the mode


def test_gpc_shapes_determinism_and_errors():
    target = _tiny_gpc(num_importance_samples=5)
    theta = torch.tensor([[0.0], [1.0], [-2.0]], dtype=torch.float64)
    out1 = target.log_prob(theta, torch.Generator().manual_seed(3))
    out2 = target.log_prob(theta, torch.Generator().manual_seed(3))
    assert out1.shape == (3,) and torch.isfinite(out1).all()
    torch.testing.assert_close(out1, out2, rtol=0, atol=0)
    assert not torch.equal(out1, target.log_prob(theta, torch.Generator().manual_seed(4)))
    # chains are independent of each other: row 0 alone equals row 0 of a batch only in distribution, but
    # log_prior is exact per row
    torch.testing.assert_close(target.log_prior(theta), -0.5 * theta[:, 0] ** 2 / 5 - 0.5 * math.log(2 * math.pi * 5))
    with pytest.raises(ValueError, match="theta"):
        target.log_prob(torch.zeros(3, 2, dtype=torch.float64), torch.Generator())
    with pytest.raises(ValueError, match="labels"):
        GPClassificationPosterior(torch.zeros(3, 1), torch.tensor([0, 1, 2]))
    with pytest.raises(ValueError):
        GPClassificationPosterior(torch.zeros(3, 1), torch.tensor([0, 1]))
    with pytest.raises(ValueError):
        GPClassificationPosterior(torch.zeros(3, 1), torch.tensor([0, 1, 1]), num_importance_samples=0)


def test_gpc_on_glass_is_finite_at_extreme_hyperparameters(shared):
    X, y = glass.load_glass(shared, remote=glass.GLASS)
    target = GPClassificationPosterior(X, y)
    g = torch.Generator().manual_seed(0)
    theta = torch.cat(
        [
            torch.randn(3, 9, generator=g, dtype=torch.float64) * math.sqrt(5),
            torch.full((1, 9), 6.0, dtype=torch.float64),
            torch.full((1, 9), -6.0, dtype=torch.float64),
        ]
    )
    out = target.log_prob(theta, g)
    assert out.shape == (5,) and torch.isfinite(out).all()
    lap = target.laplace_log_marginal(theta) + target.log_prior(theta)
    assert (out - lap).abs().max() < 5.0  # IS with 100 samples stays near the Laplace value on Glass


def test_gpc_runs_in_pseudo_marginal_mh():
    target = _tiny_gpc(num_importance_samples=10)
    sampler = PseudoMarginalMH(GaussianRandomWalkProposal(0.5))
    g = torch.Generator().manual_seed(0)
    state = sampler.init(torch.zeros(4, 1, dtype=torch.float64), target.log_prob, g)
    for _ in range(20):
        state, info = sampler.step(state, target.log_prob, g)
    assert torch.isfinite(state.log_prob).all() and state.x.shape == (4, 1)


# --- ABC skew normal ----------------------------------------------------------------------------------


def test_skew_normal_simulator_moments():
    sim = SkewNormalSimulator(torch.full((10,), 10.0, dtype=torch.float64))
    g = torch.Generator().manual_seed(0)
    theta = torch.arange(10, dtype=torch.float64)[None]
    n = 400_000
    y = sim.simulate(theta, n, g)[0]
    mean, cov = y.mean(0), torch.cov(y.T)
    expected_cov = sim.covariance()
    se_mean = torch.sqrt(torch.diagonal(expected_cov) / n)
    assert ((mean - sim.mean(theta[0])).abs() < 5 * se_mean).all()
    # Var of a covariance entry of near-Gaussian data ~ (S_ii S_jj + S_ij^2) / n
    d = torch.diagonal(expected_cov)
    se_cov = torch.sqrt((d[:, None] * d[None, :] + expected_cov**2) / n)
    assert ((cov - expected_cov).abs() < 6 * se_cov).all()
    # skewness along delta: the density of <alpha, y - theta> is the closed form 2 N Phi (projection check)
    u = (y - theta) @ sim.delta / sim.delta.norm()
    frac_neg = (u < 0).double().mean()
    # u = |delta| |U0| + sqrt(1 - |delta|^2) Z  =>  P(u < 0) = arctan(sqrt(1 - r^2) / r) / pi
    r = float(sim.delta.norm())
    p_neg = math.atan(math.sqrt(1 - r * r) / r) / math.pi
    assert abs(frac_neg - p_neg) < 5 * math.sqrt(p_neg * (1 - p_neg) / n)


def test_skew_normal_log_density_normalised_1d():
    sim = SkewNormalSimulator(torch.tensor([3.0], dtype=torch.float64))
    grid = torch.linspace(-10, 10, 20001, dtype=torch.float64)[:, None]
    dens = torch.exp(sim.log_density(grid, torch.tensor([0.5], dtype=torch.float64)))
    assert abs(torch.trapezoid(dens, grid[:, 0]) - 1) < 1e-8
    mean = torch.trapezoid(dens * grid[:, 0], grid[:, 0])
    torch.testing.assert_close(mean, sim.mean(torch.tensor([0.5], dtype=torch.float64))[0])


def test_abc_estimate_is_unbiased():
    """E[(1/M) sum_m N(s_obs; s_m, eps^2 I)] = E_s[N(s_obs; s, eps^2 I)]: mean of 20000 M = 10 estimates vs
    a brute-force average over 200000 simulated summaries, on the natural scale relative to the latter."""
    target = ABCSkewNormalPosterior()
    g = torch.Generator().manual_seed(1)
    theta = (target.theta_true - 0.2)[None]
    log_k = torch.cat([target.log_kernel(target.simulate_summaries(theta, 50_000, g))[0] for _ in range(4)])
    ref = torch.logsumexp(log_k, 0) - math.log(log_k.numel())
    k = torch.exp(log_k - ref)
    ref_se = k.std() / math.sqrt(k.numel())  # relative SE of the reference
    est = torch.exp(target.log_abc_likelihood_estimate(theta.expand(20_000, -1), g) - ref)
    se = est.std() / math.sqrt(est.numel())
    assert abs(est.mean() - 1) < 4 * math.hypot(se, ref_se), (est.mean(), se, ref_se)


def test_abc_shapes_determinism_and_errors():
    target = ABCSkewNormalPosterior()
    assert target.s_obs.shape == (10,)
    torch.testing.assert_close(target.s_obs, ABCSkewNormalPosterior(seed=0).s_obs, rtol=0, atol=0)
    assert not torch.equal(target.s_obs, ABCSkewNormalPosterior(seed=1).s_obs)
    assert ((target.s_obs - target.simulator.mean(target.theta_true)).abs() < 1.5).all()
    theta = torch.randn(5, 10, generator=torch.Generator().manual_seed(0), dtype=torch.float64) + 10
    a = target.log_prob(theta, torch.Generator().manual_seed(2))
    b = target.log_prob(theta, torch.Generator().manual_seed(2))
    assert a.shape == (5,) and torch.isfinite(a).all()
    torch.testing.assert_close(a, b, rtol=0, atol=0)
    assert target.simulator.simulate(theta, 7, torch.Generator()).shape == (5, 7, 10)
    assert target.simulate_summaries(theta, 3, torch.Generator()).shape == (5, 3, 10)
    torch.testing.assert_close(
        target.log_prior(torch.zeros(1, 10, dtype=torch.float64)),
        torch.tensor([-5 * math.log(2 * math.pi * 25)], dtype=torch.float64),
    )
    with pytest.raises(ValueError, match="theta"):
        target.log_prob(torch.zeros(5, 3), torch.Generator())
    with pytest.raises(ValueError, match="num_sims"):
        target.simulator.simulate(theta, 0, torch.Generator())
    with pytest.raises(ValueError):
        ABCSkewNormalPosterior(epsilon=0.0)
    # far from the data the log estimate is very negative but finite (logsumexp, no underflow to -inf)
    assert torch.isfinite(target.log_prob(torch.zeros(2, 10, dtype=torch.float64), torch.Generator())).all()


def test_abc_runs_in_pseudo_marginal_mh():
    target = ABCSkewNormalPosterior()
    sampler = PseudoMarginalMH(GaussianRandomWalkProposal(0.3))
    g = torch.Generator().manual_seed(0)
    state = sampler.init(target.theta_true.expand(4, -1).clone(), target.log_prob, g)
    accepted = 0
    for _ in range(50):
        state, info = sampler.step(state, target.log_prob, g)
        accepted += int(info.accepted.sum())
    assert torch.isfinite(state.log_prob).all() and accepted > 0
