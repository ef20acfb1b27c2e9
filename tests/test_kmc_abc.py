"""KMC Fig. 4 right (ABC skew normal): shards, run, the exact reference marginal, ACF, figure, claims."""

from __future__ import annotations

import copy
import math
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
import torch
import yaml
from _t_bounds import t_bounds

from gradmc.claims.base import NOT_DECIDABLE_SCALE
from gradmc.config import ConfigError, fill_defaults, validate_config
from gradmc.evaluation.autocorrelation import autocorrelation
from gradmc.evaluation.ess import ess
from gradmc.experiments import kmc_abc as exp
from gradmc.experiments.kmc_abc.claims import QUOTES, claims, marginal_error
from gradmc.experiments.kmc_abc.figure import figure
from gradmc.experiments.runner import tidy_frame
from gradmc.experiments.standard import collect
from gradmc.results import provenance, validate_metrics, write_parquet

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
            "habc_num_sims": 10, "max_lag": 20, "habc_chains_per_shard": 0}
    spec.update(over)
    return fill_defaults({"name": "test", "device": "cpu", "kmc_abc": spec})


def _shard(sampler: str, runs: tuple[int, ...], **over) -> exp.Shard:
    """A shard of ``_config()`` (the schema defaults otherwise: the paper's B4 target) with SMALL sizes."""
    return replace(exp.shards(_config(), {})[0], sampler=sampler, runs=runs, **{**SMALL, **over})


def test_shards_enumerate_and_reject_bad_config():
    shards = exp.shards(_config(), {})
    expected = [("KMC", (r,)) for r in range(3)] + [("RW", (r,)) for r in range(3)]
    assert [(s.sampler, s.runs) for s in shards] == expected + [("HABC", (0, 1, 2)), ("reference", (0,))]
    assert all(s.num_steps == 5 and s.d == 10 and s.epsilon == 0.55 and s.step_size_range == (0.01, 0.1)
               and s.adaptation == "vanishing" and s.rw_initial_scale == 0.3 for s in shards)
    chunked = exp.shards(_config(samplers=["HABC"], habc_chains_per_shard=2), {})
    assert [s.runs for s in chunked] == [(0, 1), (2,), (0,)]
    with pytest.raises(ValueError, match="max_lag"):
        exp.shards(_config(num_iterations=20), {})


@pytest.mark.parametrize(("key", "value"), [("samplers", ["NUTS"]), ("adaptation", "always"), ("kmc_sigma_grid", []),
                                            ("kmc_lambda_grid", [0.0]), ("habc_chains_per_shard", -1)])
def test_schema_rejects_bad_config(key, value):
    config = yaml.safe_load(open("config/smoke.yaml"))
    config["kmc_abc"][key] = value
    with pytest.raises(ConfigError, match=f"kmc_abc.{key}"):
        validate_config(copy.deepcopy(config))


@pytest.fixture(scope="module")
def smoke_frames() -> dict[str, pd.DataFrame]:
    shards = {"KMC": _shard("KMC", (0,)), "RW": _shard("RW", (1,)),
              "HABC": _shard("HABC", (0, 1)), "reference": _shard("reference", (0,))}
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
    again = exp.run(_shard("KMC", (0,)))
    pd.testing.assert_frame_equal(again.drop(columns="wall_time_s"), smoke_frames["KMC"].drop(columns="wall_time_s"))
    for shard, match in ((_shard("KMC", (0, 1)), "exactly one run"),
                         (_shard("KMC", (0,), num_burn_in=0), "num_burn_in"),
                         (_shard("RW", (0,), max_lag=60), "max_lag")):
        with pytest.raises(ValueError, match=match):
            exp.run(shard)


# ---------------------------------------------------------------------------------- figure and claims


def _ar1(rng, mean: float, sd: float, phi: float, T: int) -> np.ndarray:
    """Stationary AR(1) with the given mean, marginal sd and coefficient phi (phi = 0: i.i.d. normal)."""
    x = np.empty(T)
    x[0] = mean + sd * rng.standard_normal()
    for t in range(1, T):
        x[t] = mean + phi * (x[t - 1] - mean) + sd * math.sqrt(1 - phi**2) * rng.standard_normal()
    return x


def _synthetic(kmc_sd: float, habc_sd: float, T: int = 3000, runs: int = 5, kmc_shift: float = 0.0,
               kmc_phi: float = 0.0) -> pd.DataFrame:
    """Exact reference N(9.5, 0.6^2); KMC an AR(1) (kmc_phi, mean 9.5 + kmc_shift), HABC i.i.d., RW AR(1) phi 0.95."""
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
    chains = (("KMC", 9.5 + kmc_shift, kmc_sd, kmc_phi, 10.0), ("HABC", 9.5, habc_sd, 0.0, 1020.0),
              ("RW", 9.5, 0.6, 0.95, 10.0))
    for name, mean, sd, phi, sims in chains:
        for seed in range(runs):
            x = _ar1(rng, mean, sd, phi, T)
            rows = [(name, seed, 0, t + 1, "theta1", v, t + 1, 0, 0.0) for t, v in enumerate(x)]
            rows += [(name, seed, 0, k, "acf_theta1", v, T, 0, 0.0) for k, v in enumerate(autocorrelation(x, 30))]
            rows += [(name, seed, 0, T, m, v, T, 0, 0.0) for m, v in (
                ("mean_theta1", x.mean()), ("std_theta1", x.std(ddof=1)), ("ess_theta1", ess(x[None])),
                ("acceptance_rate", 0.5), ("simulations_per_iteration", sims))]
            df = tidy_frame(rows, exp.EXPERIMENT, exp.TARGET)
            df["x"] = np.nan
            frames.append(df)
    out = collect("kmc_abc", frames)
    validate_metrics(out)
    return out


def test_claims_pass_fail_inconclusive():
    good = claims(_synthetic(kmc_sd=0.6, habc_sd=1.8, T=10_000))
    assert [c.status for c in good] == ["PASS"] * 8, [c.row() for c in good]
    assert [c.direction for c in good] == [0, 0, 1, 1, 0, -1, 1, 0]
    bad = claims(_synthetic(kmc_sd=1.8, habc_sd=0.6, kmc_shift=1.5, kmc_phi=0.99))
    assert [c.status for c in bad] == ["FAIL"] * 7 + ["PASS"], [c.row() for c in bad]
    assert "3000 kept iterations" in bad[0].note and "5 runs" in bad[0].note
    few = claims(_synthetic(kmc_sd=0.6, habc_sd=1.8, T=500, runs=4))
    assert [c.status for c in few] == ["INCONCLUSIVE"] * 8
    assert claims(_synthetic(0.6, 1.8, T=100).query("sampler != 'reference'")) == []
    np.testing.assert_allclose(marginal_error(np.array([1.0, 3.0]), 1.0, 1.0), 1.0 + abs(math.sqrt(2) - 1))
    with pytest.raises(ValueError, match="ref_sd"):
        marginal_error(np.array([1.0, 2.0]), 0.0, 0.0)


def test_claims_quote_the_paper_and_name_their_test():
    good = claims(_synthetic(kmc_sd=0.6, habc_sd=1.8, T=10_000))
    assert [c.quote for c in good] == ([QUOTES["kmc_exact"]] * 2 + [QUOTES["mixes"]] * 3 + [QUOTES["rw_aim"]] * 2
                                       + [QUOTES["simulations"]])
    assert [c.test for c in good] == (["equivalence"] * 2 + ["superiority"] * 2 + ["equivalence"]
                                      + ["superiority"] * 2 + ["agreement"])
    assert all(c.source == "KMC" and c.paper == "KMC Fig. 4 right" for c in good)
    assert all(c.margin_why for c in good if c.test != "superiority")
    assert "no sentence on RW" in good[5].note and good[2].null == pytest.approx(0.2)


def test_claims_the_config_cannot_decide_are_not_decidable():
    """Short chains cannot decide the equivalence claims, too few runs none, another L not the factor 2L = 100;
    the bias of HABC is decided at any length, and a FAIL stays a FAIL."""
    df = _synthetic(kmc_sd=0.6, habc_sd=1.8, T=10_000)
    short = {"kmc_abc": {"runs": list(range(5)), "num_iterations": 1000, "num_steps": 50}}
    statuses = [c.status for c in claims(df, short)]
    assert statuses == [NOT_DECIDABLE_SCALE] * 2 + ["PASS"] * 2 + [NOT_DECIDABLE_SCALE] + ["PASS"] * 3
    assert "kmc_abc.num_iterations = 1,000: unmet" in claims(df, short)[0].row()["note"]
    few = {"kmc_abc": {"runs": [0, 1], "num_iterations": 5000, "num_steps": 5}}
    assert {c.status for c in claims(df, few)} == {NOT_DECIDABLE_SCALE}
    full = {"kmc_abc": {"runs": list(range(10)), "num_iterations": 5000, "num_steps": 50}}
    assert [c.status for c in claims(df, full)] == ["PASS"] * 8
    bad = claims(_synthetic(kmc_sd=1.8, habc_sd=0.6, kmc_shift=1.5, kmc_phi=0.99), full)
    assert [c.status for c in bad] == ["FAIL"] * 7 + ["PASS"]


def test_claims_effects_by_hand():
    df = _synthetic(kmc_sd=0.6, habc_sd=1.8, kmc_shift=0.03, T=1000)
    out = claims(df)
    # KMC's mean shift: mean over runs of (run mean - 9.5) / 0.6, t interval (t union bootstrap-t) over 5 runs.
    runs = df[(df["sampler"] == "KMC") & (df["metric"] == "mean_theta1")].sort_values("seed")["value"].to_numpy()
    z = (runs - 9.5) / 0.6
    iv = out[0].interval
    np.testing.assert_allclose([iv.effect, iv.low, iv.high], [z.mean(), *t_bounds(z)])
    assert out[0].tolerance == 0.1 and out[4].tolerance == pytest.approx(1.96 / math.sqrt(5000))
    # simulations per iteration: 1020 / 10 = 102 in every run, vs the paper's 2L = 100: a zero-width interval at 2.
    assert (out[-1].interval.effect, out[-1].interval.low, out[-1].interval.high) == (2.0, 2.0, 2.0)


def test_figure_writes_files_and_table(tmp_path, smoke_frames):
    metrics = write_parquet(collect("kmc_abc", list(smoke_frames.values())), tmp_path / "m.parquet",
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
    for c in claims(collect("kmc_abc", list(smoke_frames.values()))):
        assert c.experiment == "kmc_abc" and c.measured
    no_ref = write_parquet(collect("kmc_abc", [smoke_frames["KMC"]]), tmp_path / "n.parquet", provenance({"name": "t"}),
                           validate=True)
    with pytest.raises(ValueError, match="reference"):
        figure(no_ref, tmp_path / "x", tmp_path / "y")
