"""KMC Fig. 4 right (ABC skew normal): shards, run, the exact reference marginal, ACF, figure, claims."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch

from gradmc.claims.kmc_abc import claims, marginal_error
from gradmc.evaluation.ess import ess
from gradmc.experiments import kmc_abc as exp
from gradmc.experiments.runner import tidy_frame
from gradmc.figures.kmc_abc import figure
from gradmc.results import provenance, validate_metrics, write_parquet
from gradmc.targets.abc_skew_normal import ABCSkewNormalPosterior

SMALL = dict(num_burn_in=20, num_iterations=60, num_steps=5, kmc_history_size=50, kmc_sigma_grid=(10.0, 30.0),
             kmc_lambda_grid=(1.0, 10.0), kmc_cv_folds=2, max_lag=20)


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Tiny batched linear algebra (HABC's 10 x 10 Cholesky) is far slower with several threads."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def _config(**over) -> dict:
    spec = {"samplers": ["KMC", "RW", "HABC"], "runs": [0, 1, 2], "num_burn_in": 20, "num_iterations": 60,
            "step_size_range": [0.01, 0.1], "num_steps": 5, "kmc_history_size": 50, "kmc_sigma_grid": [10.0, 30.0],
            "kmc_lambda_grid": [1.0, 10.0], "kmc_cv_folds": 2, "habc_step_size_range": [0.01, 0.05],
            "habc_num_sims": 10, "max_lag": 20}
    spec.update(over)
    return {"name": "test", "device": "cpu", "kmc_abc": spec}


def test_shards_enumerate_and_reject_bad_config():
    shards = exp.shards(_config())
    expected = [("KMC", (r,)) for r in range(3)] + [("RW", (r,)) for r in range(3)]
    assert [(s.sampler, s.runs) for s in shards] == expected + [("HABC", (0, 1, 2)), ("reference", (0,))]
    assert all(s.num_steps == 5 and s.d == 10 and s.epsilon == 0.55 and s.step_size_range == (0.01, 0.1)
               for s in shards)
    chunked = exp.shards(_config(samplers=["HABC"], habc_chains_per_shard=2))
    assert [s.runs for s in chunked] == [(0, 1), (2,), (0,)]
    for over, match in (({"samplers": ["NUTS"]}, "unknown sampler"), ({"adaptation": "always"}, "adaptation"),
                        ({"num_iterations": 20}, "max_lag"), ({"kmc_sigma_grid": []}, "kmc_sigma_grid"),
                        ({"kmc_lambda_grid": [0.0]}, "kmc_lambda_grid"), ({"habc_chains_per_shard": -1}, "chains")):
        with pytest.raises(ValueError, match=match):
            exp.shards(_config(**over))


@pytest.fixture(scope="module")
def smoke_frames() -> dict[str, pd.DataFrame]:
    shards = {"KMC": exp.Shard("KMC", (0,), **SMALL), "RW": exp.Shard("RW", (1,), **SMALL),
              "HABC": exp.Shard("HABC", (0, 1), **SMALL), "reference": exp.Shard("reference", (0,), **SMALL)}
    return {name: exp.run(shard) for name, shard in shards.items()}


@pytest.mark.parametrize("sampler", ["KMC", "RW", "HABC"])
def test_run_returns_tidy_rows(smoke_frames, sampler):
    df = smoke_frames[sampler]
    validate_metrics(df)
    B, T, L = SMALL["num_burn_in"], SMALL["num_iterations"], SMALL["num_steps"]
    per_iter, sims = (2 * (L + 1), 2 * (L + 1) * 10) if sampler == "HABC" else (1, 10)
    for _, d in df.groupby("seed"):
        trace = d[d["metric"] == "theta1"].sort_values("step")
        assert trace["step"].tolist() == list(range(1, T + 1)) and trace["x"].isna().all()
        assert trace["energy_evals"].iloc[-1] == per_iter * (B + T)  # cumulative, burn-in included
        acf = d[d["metric"] == "acf_theta1"].sort_values("step")
        assert acf["step"].tolist() == list(range(SMALL["max_lag"] + 1))
        np.testing.assert_allclose(acf["value"].iloc[0], 1.0)
        v = d[d["step"] == B + T].set_index("metric")["value"]
        assert v["simulations_per_iteration"] == sims and v["likelihood_estimates_per_iteration"] == per_iter
        np.testing.assert_allclose(v["mean_theta1"], trace["value"].mean())
        np.testing.assert_allclose(v["std_theta1"], trace["value"].std(ddof=1))
        assert 0.0 <= v["acceptance_rate"] <= 1.0 and v["ess_theta1"] > 0
        assert (v["acceptance_rate"] == 1.0) == (sampler == "HABC")
        assert np.isfinite(trace["value"]).all() and (trace["value"] - 10).abs().max() < 10
    assert sorted(df["seed"].unique()) == {"KMC": [0], "RW": [1], "HABC": [0, 1]}[sampler]
    if sampler == "KMC":
        v = df[df["step"] == B + T].set_index("metric")["value"]
        assert v["surrogate_sigma"] in (10.0, 30.0) and v["surrogate_lambda"] in (1.0, 10.0)
        assert v["surrogate_refits"] >= 1  # a_0 = 1: the first kept iteration always refits


def test_run_is_deterministic_and_rejects_bad_shards(smoke_frames):
    again = exp.run(exp.Shard("KMC", (0,), **SMALL))
    pd.testing.assert_frame_equal(again.drop(columns="wall_time_s"), smoke_frames["KMC"].drop(columns="wall_time_s"))
    for shard, match in ((exp.Shard("KMC", (0, 1), **SMALL), "exactly one run"),
                         (exp.Shard("MALA", (0,), **SMALL), "unknown sampler"),
                         (exp.Shard("KMC", (0,), **{**SMALL, "num_burn_in": 0}), "num_burn_in"),
                         (exp.Shard("RW", (0,), **{**SMALL, "adaptation": "x"}), "adaptation"),
                         (exp.Shard("RW", (0,), **{**SMALL, "max_lag": 60}), "max_lag")):
        with pytest.raises(ValueError, match=match):
            exp.run(shard)


# ------------------------------------------------------------------------------ exactness of the helpers


def test_autocorrelation_matches_ar1_closed_form():
    """AR(1) x_t = phi x_{t-1} + e_t has rho_k = phi^k; Bartlett's SE at T = 2e5 is < 0.004 here."""
    phi, T = 0.7, 200_000
    rng = np.random.default_rng(0)
    e = rng.standard_normal(T)
    x = np.empty(T)
    x[0] = e[0] / math.sqrt(1 - phi**2)
    for t in range(1, T):
        x[t] = phi * x[t - 1] + e[t]
    acf = exp.autocorrelation(x, 30)
    np.testing.assert_allclose(acf, phi ** np.arange(31), atol=0.02)
    assert np.isnan(exp.autocorrelation(np.ones(50), 10)).all()
    with pytest.raises(ValueError, match="max_lag"):
        exp.autocorrelation(x[:10], 10)
    with pytest.raises(ValueError, match="NaN"):
        exp.autocorrelation(np.array([1.0, np.nan, 2.0]), 1)


def test_half_normal_mean_pmf_moments():
    """A = mean of n |N(0,1)|: E[A] = sqrt(2/pi), Var[A] = (1 - 2/pi) / n; grid error O(h^2)."""
    for n in (1, 10):
        a, p = exp.half_normal_mean_pmf(n, h=5e-3)
        np.testing.assert_allclose(p.sum(), 1.0)
        mean = p @ a
        np.testing.assert_allclose(mean, math.sqrt(2 / math.pi), atol=1e-5)
        np.testing.assert_allclose(p @ (a - mean) ** 2, (1 - 2 / math.pi) / n, rtol=1e-3)
    with pytest.raises(ValueError, match="n >= 1"):
        exp.half_normal_mean_pmf(0)


def test_reference_is_exact_gaussian_when_alpha_is_zero():
    """alpha = 0: summary ~ N(theta, I / n), ABC likelihood N(s_obs; theta, (1/n + eps^2) I): conjugate."""
    target = ABCSkewNormalPosterior(d=3, alpha_value=0.0, num_obs=4, epsilon=0.5, prior_var=2.0, seed=3)
    s2 = 1 / 4 + 0.25
    var = 1 / (1 / 2.0 + 1 / s2)
    ref = exp.reference_marginal(target, coord=1)
    np.testing.assert_allclose(ref["mean"], var / s2 * float(target.s_obs[1]), rtol=1e-10)
    np.testing.assert_allclose(ref["std"], math.sqrt(var), rtol=1e-10)
    np.testing.assert_allclose(ref["density"], np.exp(-0.5 * (ref["grid"] - ref["mean"]) ** 2 / var)
                               / math.sqrt(2 * math.pi * var), rtol=1e-8)
    with pytest.raises(ValueError, match="coord"):
        exp.reference_marginal(target, coord=3)


def test_reference_abc_likelihood_matches_brute_force():
    """The mixture formula for p_eps(s_obs | theta) vs the mean kernel over 100k simulated summaries (SE ~1%)."""
    target = ABCSkewNormalPosterior()
    g = torch.Generator().manual_seed(5)
    theta = torch.stack([target.theta_true - 0.3, target.theta_true + 0.1 * torch.arange(10.0, dtype=torch.float64)])
    exact = exp.abc_log_likelihood(target, theta)
    for c in range(2):
        k = torch.cat([target.log_kernel(target.simulate_summaries(theta[c:c + 1], 50_000, g))[0] for _ in range(2)])
        w = torch.exp(k - exact[c])  # ratio to the exact likelihood, mean 1
        se = float(w.std()) / math.sqrt(w.numel())
        assert abs(float(w.mean()) - 1) < 4 * se and se < 0.02, (float(w.mean()), se)
    with pytest.raises(ValueError, match="theta"):
        exp.abc_log_likelihood(target, theta[:, :3])


def test_reference_marginal_matches_quadrature_in_one_dimension():
    """d = 1, alpha = 3: posterior prop. to prior x exact ABC likelihood, integrated on a theta grid (an
    independent route through Bayes' rule; the prior is informative here, so the mixture weights matter)."""
    target = ABCSkewNormalPosterior(d=1, alpha_value=3.0, num_obs=4, epsilon=0.5, prior_var=0.5, seed=2)
    ref = exp.reference_marginal(target)
    grid = np.linspace(ref["mean"] - 8 * ref["std"], ref["mean"] + 8 * ref["std"], 601)
    theta = torch.tensor(grid[:, None])
    log_post = (exp.abc_log_likelihood(target, theta) + target.log_prior(theta)).numpy()
    post = np.exp(log_post - log_post.max())
    post /= np.trapezoid(post, grid)
    mean = np.trapezoid(post * grid, grid)
    np.testing.assert_allclose(ref["mean"], mean, atol=1e-6)
    np.testing.assert_allclose(ref["std"] ** 2, np.trapezoid(post * (grid - mean) ** 2, grid), rtol=1e-5)
    np.testing.assert_allclose(exp.reference_marginal(target, grid=grid)["density"], post, atol=1e-6)


def test_reference_density_consistent_with_its_moments():
    ref = exp.reference_marginal(ABCSkewNormalPosterior())
    x, f = ref["grid"], ref["density"]
    np.testing.assert_allclose(np.trapezoid(f, x), 1.0, atol=1e-6)
    np.testing.assert_allclose(np.trapezoid(f * x, x), ref["mean"], atol=1e-6)
    np.testing.assert_allclose(np.trapezoid(f * (x - ref["mean"]) ** 2, x), ref["std"] ** 2, rtol=1e-5)


# ---------------------------------------------------------------------------------- figure and claims


def _synthetic(kmc_sd: float, habc_sd: float, T: int = 3000, runs: int = 4) -> pd.DataFrame:
    """Exact reference N(9.5, 0.6^2); KMC and HABC i.i.d. normal draws (ACF 0), RW an AR(1) with phi 0.95."""
    rng = np.random.default_rng(1)
    frames = []
    ref = {"mean_theta1": 9.5, "std_theta1": 0.6}
    grid = np.linspace(9.5 - 3.6, 9.5 + 3.6, 201)
    rows = [("reference", 0, -1, 0, m, v, 0, 0, 0.0) for m, v in ref.items()]
    dens = np.exp(-0.5 * ((grid - 9.5) / 0.6) ** 2) / (0.6 * math.sqrt(2 * math.pi))
    rows += [("reference", 0, -1, i, "density_theta1", float(v), 0, 0, 0.0) for i, v in enumerate(dens)]
    df = tidy_frame(rows, exp.EXPERIMENT, exp.TARGET)
    df["x"] = np.concatenate([[np.nan, np.nan], grid])
    frames.append(df)
    for name, sd, sims in (("KMC", kmc_sd, 10.0), ("HABC", habc_sd, 1020.0), ("RW", 0.6, 10.0)):
        for seed in range(runs):
            if name == "RW":
                x = np.empty(T)
                x[0] = 9.5
                for t in range(1, T):
                    x[t] = 9.5 + 0.95 * (x[t - 1] - 9.5) + 0.6 * math.sqrt(1 - 0.95**2) * rng.standard_normal()
            else:
                x = 9.5 + sd * rng.standard_normal(T)
            rows = [(name, seed, 0, t + 1, "theta1", v, t + 1, 0, 0.0) for t, v in enumerate(x)]
            rows += [(name, seed, 0, k, "acf_theta1", v, T, 0, 0.0) for k, v in enumerate(exp.autocorrelation(x, 30))]
            rows += [(name, seed, 0, T, m, v, T, 0, 0.0) for m, v in (
                ("mean_theta1", x.mean()), ("std_theta1", x.std(ddof=1)), ("ess_theta1", ess(x[None])),
                ("acceptance_rate", 0.5), ("simulations_per_iteration", sims))]
            df = tidy_frame(rows, exp.EXPERIMENT, exp.TARGET)
            df["x"] = np.nan
            frames.append(df)
    out = exp.collect(frames)
    validate_metrics(out)
    return out


def test_claims_pass_and_fail():
    good = claims(_synthetic(kmc_sd=0.6, habc_sd=1.8))
    assert [c.passed for c in good] == [True, True, True, True, True], [c.measured for c in good]
    assert "simulations per iteration KMC 10 vs HABC 1020 (102x)" in good[3].measured
    bad = claims(_synthetic(kmc_sd=1.8, habc_sd=0.6))
    assert [c.passed for c in bad] == [False, False, False, True, True]
    assert "3000 kept iterations" in bad[0].note
    assert claims(_synthetic(0.6, 1.8).query("sampler != 'reference'")) == []
    np.testing.assert_allclose(marginal_error(np.array([1.0, 3.0]), 1.0, 1.0), 1.0 + abs(math.sqrt(2) - 1))
    with pytest.raises(ValueError, match="ref_sd"):
        marginal_error(np.array([1.0, 2.0]), 0.0, 0.0)


def test_figure_writes_files_and_table(tmp_path, smoke_frames):
    metrics = write_parquet(exp.collect(list(smoke_frames.values())), tmp_path / "m.parquet",
                            provenance({"name": "test"}), validate=True)
    paths = figure(metrics, tmp_path / "fig" / "fig4", tmp_path / "tab" / "fig4", config_name="test")
    assert sorted(p.name for p in paths) == ["fig4.csv", "fig4.md", "fig4.pdf", "fig4.png"]
    assert all(p.stat().st_size > 0 for p in paths)
    table = pd.read_csv(tmp_path / "tab" / "fig4.csv")
    lag0 = table[(table["panel"] == "acf") & (table["x"] == 0)]
    assert sorted(lag0["sampler"]) == ["HABC", "KMC", "RW"] and (lag0["median"] == 1.0).all()
    dens = table[(table["panel"] == "density") & (table["sampler"] == "reference")]
    width = np.diff(dens["x"].to_numpy()).mean()
    assert abs(dens["median"].sum() * width - 1.0) < 1e-3  # exact density over +-5 sd, midpoint sums
    summ = table[(table["panel"] == "summary") & (table["metric"] == "mean_theta1")].set_index("sampler")
    ref = smoke_frames["reference"].set_index("metric")["value"]
    np.testing.assert_allclose(summ.loc["reference", "pooled"], ref["mean_theta1"])
    for c in claims(exp.collect(list(smoke_frames.values()))):
        assert c.experiment == "kmc_abc" and c.measured
    no_ref = write_parquet(exp.collect([smoke_frames["KMC"]]), tmp_path / "n.parquet", provenance({"name": "t"}),
                           validate=True)
    with pytest.raises(ValueError, match="reference"):
        figure(no_ref, tmp_path / "x", tmp_path / "y")
