"""KMC Fig. 3 (8-D banana): cross-validated (s, lambda) of KMC finite, its metric rows, and the figure's intervals."""

from __future__ import annotations

import copy
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
import torch
import yaml

from gradmc.config import ConfigError, fill_defaults, validate_config
from gradmc.experiments import kmc_banana as exp
from gradmc.experiments.kmc_banana.figure import bootstrap_median_interval, figure, summary_table
from gradmc.results import provenance, validate_metrics, write_parquet
from gradmc.seeding import make_generator, seed_from
from gradmc.surrogates import (
    cross_validate_finite,
    cross_validate_finite_stats,
    finite_statistics,
    fit_finite,
    fit_finite_from_statistics,
    gaussian_random_features,
    score_matching_objective,
)
from gradmc.surrogates.cv import kfold_indices
from gradmc.targets import Banana

CV_ROWS = {"surrogate_lengthscale", "surrogate_sigma", "surrogate_lambda", "surrogate_cv_points",
           "surrogate_cv_seconds"}


def _gaussian(n: int, d: int = 2, seed: int = 0) -> torch.Tensor:
    return torch.randn(n, d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def _independent_scores(x, lengthscales, lambdas, m, k, fold_seed, feature_seed) -> np.ndarray:
    """Held-out J by brute force: fit_finite on k - 1 folds, score_matching_objective on the held-out one."""
    folds = kfold_indices(x.shape[0], k, torch.Generator().manual_seed(fold_seed))
    out = np.empty((len(lengthscales), len(lambdas)))
    for i, s in enumerate(lengthscales):
        feats = gaussian_random_features(x.shape[1], m, s, torch.Generator().manual_seed(feature_seed), x.dtype)
        for j, lam in enumerate(lambdas):
            vals = []
            for idx in folds:
                mask = torch.ones(x.shape[0], dtype=torch.bool)
                mask[idx] = False
                vals.append(float(score_matching_objective(fit_finite(x[mask], feats, lam), x[idx])))
            out[i, j] = np.mean(vals)
    return out


def test_statistics_equal_the_explicit_fit():
    x = _gaussian(40, 3)
    feats = gaussian_random_features(3, 25, 1.5, torch.Generator().manual_seed(1), torch.float64)
    ref = fit_finite(x, feats, 1e-2)
    b_sum, c_sum = finite_statistics(x, feats)
    torch.testing.assert_close(b_sum, ref.b_sum)
    torch.testing.assert_close(c_sum, ref.c_sum)
    fast = fit_finite_from_statistics(feats, 1e-2, 40, b_sum, c_sum)
    torch.testing.assert_close(fast.theta, ref.theta)
    with pytest.raises(ValueError, match="num_points"):
        fit_finite_from_statistics(feats, 1e-2, 0, b_sum, c_sum)


def test_stats_cv_picks_the_best_grid_point_on_a_gaussian():
    """Known answer on N(0, I_2): the grid point with the lowest brute-force held-out J wins, the scores agree
    with the brute force and with cross_validate_finite, and the winner is the sensible one (a moderate
    length scale with a small ridge; lambda = 100 shrinks f to ~0, J ~ 0, well above the optimum ~ -d/2)."""
    x, widths, lams = _gaussian(120), [0.3, 1.0, 3.0], [1e-3, 1e2]
    cv = cross_validate_finite_stats(x, widths, lams, 40, 4, torch.Generator().manual_seed(5), feature_seed=9)
    brute = _independent_scores(x, widths, lams, 40, 4, 5, 9)
    np.testing.assert_allclose(cv.mean_scores.numpy(), brute, rtol=1e-8, atol=1e-10)
    i, j = np.unravel_index(np.argmin(brute), brute.shape)
    assert (cv.best_width, cv.best_lambda) == (widths[i], lams[j])
    assert cv.best_lambda == 1e-3 and cv.best_width in (1.0, 3.0)
    assert float(cv.mean_scores[:, 1].min()) > float(cv.mean_scores.min()) + 0.3
    ref = cross_validate_finite(x, widths, lams, 40, 4, torch.Generator().manual_seed(5), feature_seed=9)
    torch.testing.assert_close(cv.scores, ref.scores)


def test_stats_cv_rejects_bad_input():
    x = _gaussian(10)
    with pytest.raises(ValueError, match="non-empty"):
        cross_validate_finite_stats(x, [], [1.0], 5)
    with pytest.raises(ValueError, match="lam"):
        cross_validate_finite_stats(x, [1.0], [0.0], 5)
    with pytest.raises(ValueError, match="num_folds"):
        cross_validate_finite_stats(x, [1.0], [1.0], 5, num_folds=11)


def _config(**over) -> dict:
    spec = {"samplers": ["KMC"], "n": [40], "runs": [0], "num_burn_in": 10, "num_iterations": 20,
            "step_size_range": [0.6, 1.3], "num_steps_range": [5, 8], "kmc_lengthscales": [2.0, 10.0, 40.0],
            "kmc_lambdas": [1e-6, 1e-2], "cv_folds": 4, "history": "target", "adaptation": "none"}
    spec.update(over)
    return fill_defaults({"name": "test", "device": "cpu", "kmc_banana": spec})


def test_rows_hold_the_cv_choice_of_the_history():
    """The emitted surrogate_* rows equal an independent CV on the same history, folds and features."""
    shard = exp.shards(_config(), {})[0]
    assert shard.lengthscale is None and shard.lam is None and shard.cv_grid == ((2.0, 10.0, 40.0), (1e-6, 1e-2))
    df = exp.run(shard)
    validate_metrics(df)
    v = df.set_index("metric")["value"]
    assert CV_ROWS <= set(v.index)
    x = Banana(8, 100.0, 0.03).sample(40, make_generator(seed_from("kmc_banana", "history", 40, 0)))
    x = torch.unique(x, dim=0)  # the CV runs on the distinct rows, sorted (module doc)
    ref = cross_validate_finite(x, [2.0, 10.0, 40.0], [1e-6, 1e-2], 40, 4,
                                make_generator(seed_from("kmc_banana", "cv", 40, 0)),
                                feature_seed=seed_from("kmc_banana", "features", 40, 0))
    assert v["surrogate_lengthscale"] == ref.best_width and v["surrogate_lambda"] == ref.best_lambda
    assert v["surrogate_sigma"] == pytest.approx(2 * ref.best_width**2) and v["surrogate_cv_points"] == 40
    assert (df["n"] == 40).all() and (df["step"] == 30).all()


def test_fixed_parameters_skip_the_cv():
    both = exp.run(exp.shards(_config(lengthscale=5.0, lam=1e-3), {})[0])
    assert not CV_ROWS & set(both["metric"])
    one = exp.run(exp.shards(_config(lengthscale=5.0), {})[0]).set_index("metric")["value"]
    assert one["surrogate_lengthscale"] == 5.0 and one["surrogate_lambda"] in (1e-6, 1e-2)


def test_too_few_distinct_points_fall_back_to_the_first_grid_point():
    shard = exp.shards(_config(), {})[0]
    s, lam, rows = exp.choose_parameters(shard, torch.zeros(40, 8, dtype=torch.float64))
    assert (s, lam) == (2.0, 1e-6) and rows["surrogate_cv_points"] == 0


def test_schema_accepts_null_and_rejects_bad_grids():
    config = fill_defaults(yaml.safe_load(open("config/smoke.yaml")))
    assert config["kmc_banana"]["lengthscale"] is None
    validate_config(copy.deepcopy(config))
    for key, value in (("kmc_lambdas", []), ("kmc_lengthscales", [-1.0]), ("cv_folds", 1), ("lam", 0.0)):
        bad = copy.deepcopy(config)
        bad["kmc_banana"][key] = value
        with pytest.raises(ConfigError, match=f"kmc_banana.{key}"):
            validate_config(bad)


def _smoke_stage() -> pd.DataFrame:
    config = fill_defaults(yaml.safe_load(open("config/smoke.yaml")))
    config["device"] = "cpu"
    frames = [exp.run(s) for s in exp.shards(config, {})]
    df = pd.concat(frames, ignore_index=True).drop(columns=["wall_time_s"])
    timed = df["metric"].isin(["min_ess_per_second", "surrogate_cv_seconds"])
    return df[~timed].reset_index(drop=True)


def test_smoke_stage_is_deterministic_and_reports_the_choice():
    a, b = _smoke_stage(), _smoke_stage()
    pd.testing.assert_frame_equal(a, b)
    kmc = a[(a["sampler"] == "KMC") & (a["metric"] == "surrogate_lengthscale")]
    assert sorted(kmc["n"]) == [20, 40] and set(kmc["value"]) <= {5.0, 20.0}
    assert not (a[a["sampler"] != "KMC"]["metric"].str.startswith("surrogate_")).any()


def test_bootstrap_median_interval():
    assert bootstrap_median_interval([3.0] * 7) == (3.0, 3.0)
    assert bootstrap_median_interval([np.nan, 2.0]) == (2.0, 2.0)
    assert all(np.isnan(bootstrap_median_interval([np.nan])))
    v = np.random.default_rng(1).normal(10.0, 1.0, 30)
    lo, hi = bootstrap_median_interval(v)
    assert lo < np.median(v) < hi and hi - lo < 1.5 and bootstrap_median_interval(v) == (lo, hi)
    with pytest.raises(ValueError, match="level"):
        bootstrap_median_interval(v, level=1.0)


def test_figure_table_has_intervals_and_cv_panel(tmp_path):
    rows = []
    for name, n in (("KMC", 50), ("KMC", 200), ("HMC", 0)):
        for seed in range(5):
            vals = {"min_ess": 10.0 * (n + 1) ** 0.5 + seed, "acceptance_rate": 0.5, "mean_norm": 1.0}
            if name == "KMC":
                vals.update(surrogate_lengthscale=20.0, surrogate_sigma=800.0, surrogate_lambda=1e-6)
            rows += [("kmc_banana", "banana", name, n, seed, 0, 300, m, v, 1, 0, 1.0) for m, v in vals.items()]
    df = pd.DataFrame(rows, columns=["experiment", "target", "sampler", "n", "seed", "chain", "step", "metric",
                                     "value", "energy_evals", "grad_evals", "wall_time_s"])
    table = summary_table(df)
    ess = table[table["metric"] == "min_ess"]
    assert ((ess["ci_lo"] <= ess["median"]) & (ess["median"] <= ess["ci_hi"])).all()
    assert set(table["metric"]) >= {"surrogate_lengthscale", "surrogate_lambda"}
    metrics = write_parquet(df, tmp_path / "m.parquet", provenance({"name": "test"}), validate=True)
    paths = figure(metrics, tmp_path / "fig3", config_name="test")
    assert all(p.stat().st_size > 0 for p in paths)
    assert "95% percentile-bootstrap interval of the median" in (tmp_path / "fig3.md").read_text()


def test_kmc_finite_fit_is_unchanged_by_the_fast_statistics():
    """The experiment's fit (statistics route) gives the same surrogate as fit_finite on the same points."""
    shard = replace(exp.shards(_config(lengthscale=5.0, lam=1e-3), {})[0])
    x = _gaussian(40, 8, seed=3)
    fast, rows = exp._fit_surrogate(shard, x)
    feats = gaussian_random_features(8, 40, 5.0, make_generator(seed_from("kmc_banana", "features", 40, 0)),
                                     torch.float64)
    torch.testing.assert_close(fast.theta, fit_finite(x, feats, 1e-3).theta)
    assert rows == {}
