"""KMC Fig. 4 left (GP classification on Glass): benchmark stage, sampling stage, MMD, figure, claims.

A benchmark chain has no closed-form answer to compare with, so these tests check what is exact: the
prefix MMD against the library's mmd2, the benchmark file round trip, the KAMH Hastings term against
torch.distributions, cost accounting, the shard grid, and the errors. Real data: ../shared/data/glass.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import pandas as pd
import pytest
import torch
import yaml
from _t_bounds import t_bounds

from gradmc.claims.base import NOT_DECIDABLE_SCALE
from gradmc.config import ConfigError, fill_defaults, validate_config
from gradmc.evaluation.ess import ess
from gradmc.experiments import kmc_gpc as exp
from gradmc.experiments import kmc_gpc_benchmark as bench
from gradmc.experiments.kmc_gpc.claims import QUOTES, claims
from gradmc.experiments.kmc_gpc.figure import figure
from gradmc.experiments.standard import collect
from gradmc.results import provenance, read_parquet, validate_metrics, write_parquet
from gradmc.samplers.continuous import KAMH


@pytest.fixture(scope="module")
def shared(real_data):
    """The canonical files these tests read: ../shared/data, else fetched (see conftest.real_data)."""
    return real_data("glass")


@pytest.fixture(scope="module", autouse=True)
def _one_thread():
    """One intra-op thread, as in the Ray workers: the GPC target's many small (214, 214) linear-algebra calls
    get about 30x slower with 2 threads on a busy 2-core machine."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


BENCH = {"num_chains": 2, "num_iterations": 70, "num_burn_in": 20, "thin": 5, "num_importance_samples": 20,
         "prior_var": 5.0}


def _config(**over) -> dict:
    spec = {"samplers": ["KMC", "KAMH", "RW"], "runs": [0, 1], "num_iterations": 25, "mmd_every": 10,
            "num_history": 15, "step_size_range": [0.01, 0.1], "num_steps_range": [1, 10], "kmc_sigmas": [10.0, 100.0],
            "kmc_lambdas": [0.1, 1.0], "cv_folds": 3, "kamh_gamma": 0.3, "benchmark": dict(BENCH)}
    spec.update(over)
    return fill_defaults({"name": "test", "device": "cpu", "kmc_gpc": spec})


@pytest.fixture(scope="module")
def benchmark_file(shared, tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GRADMC_DATA_DIR", str(shared))
        shards = bench.shards(_config(), {})
        df = collect("kmc_gpc_benchmark", [bench.run(s) for s in shards])
    return write_parquet(df, tmp_path_factory.mktemp("bench") / "benchmark.parquet", provenance({"name": "test"}),
                         validate=True)


@pytest.fixture
def data_env(shared, monkeypatch):
    monkeypatch.setenv("GRADMC_DATA_DIR", str(shared))


def test_benchmark_file_round_trip(benchmark_file):
    df, _ = read_parquet(benchmark_file)
    validate_metrics(df)
    K = (BENCH["num_iterations"] - BENCH["num_burn_in"]) // BENCH["thin"]  # 10 kept states per chain
    theta = df[df["metric"].str.startswith("theta_")]
    assert len(theta) == 2 * K * 9 and sorted(theta["step"].unique()) == list(range(K))
    samples = bench.load_benchmark(benchmark_file)
    assert samples.shape == (2 * K, 9) and samples.dtype == torch.float64
    first = theta[(theta["chain"] == 1) & (theta["step"] == 3)].set_index("metric")["value"]
    assert samples[K + 3].tolist() == [first[f"theta_{d}"] for d in range(9)]
    # costs: the kept state k is taken after burn-in + (k + 1) * thin steps (+1 initial estimate)
    ev = theta[(theta["chain"] == 0) & (theta["metric"] == "theta_0")].sort_values("step")["energy_evals"]
    assert ev.tolist() == [BENCH["num_burn_in"] + (k + 1) * BENCH["thin"] + 1 for k in range(K)]
    pooled = df[df["chain"] == -1].set_index("metric")["value"]
    chains = samples.reshape(2, K, 9).numpy()
    assert pooled["num_samples"] == 2 * K
    assert pooled["min_ess"] == pytest.approx(min(ess(chains[:, :, d]) for d in range(9)))
    per_chain = df[df["metric"] == "acceptance_rate"]["value"]
    assert len(per_chain) == 2 and per_chain.between(0, 1).all()


def test_benchmark_shards_and_errors(data_env):
    shards = bench.shards(_config(), {})
    assert [s.chain for s in shards] == [0, 1] and all(s.thin == 5 and s.num_importance_samples == 20 for s in shards)
    assert all((s.start, s.initial_scale, s.target_acceptance) == ("zero", 1.0, 0.234) for s in shards)  # defaults
    with pytest.raises(ValueError, match="at least 4 kept samples"):
        bench.shards(_config(benchmark={**BENCH, "thin": 20}), {})


@pytest.mark.parametrize(("key", "value"), [("samplers", ["KMC", "HMC"]), ("history", "oracle"),
                                            ("start", "somewhere"), ("benchmark.start", "somewhere")])
def test_schema_rejects_unknown_enumerations(key, value):
    config = yaml.safe_load(open("config/smoke.yaml"))
    node = config["kmc_gpc"]
    *parents, last = key.split(".")
    for part in parents:
        node = node[part]
    node[last] = value
    with pytest.raises(ConfigError, match=f"kmc_gpc.{key}"):
        validate_config(copy.deepcopy(config))


def test_load_benchmark_rejects_missing_and_ill_shaped_files(benchmark_file, tmp_path):
    missing = tmp_path / "nope.parquet"
    with pytest.raises(FileNotFoundError, match=str(missing)):
        bench.load_benchmark(missing)
    df, prov = read_parquet(benchmark_file)
    cases = {"no_theta3": df[df["metric"] != "theta_3"],
             "uneven": df[~((df["chain"] == 1) & (df["step"] == 0) & df["metric"].str.startswith("theta_"))],
             "other": df.assign(experiment="kmc_gpc")}
    for name, bad in cases.items():
        path = write_parquet(bad.reset_index(drop=True), tmp_path / f"{name}.parquet", prov)
        with pytest.raises(ValueError, match=str(path)):
            bench.load_benchmark(path)


def test_kamh_proposal_hastings_term_matches_torch_distributions():
    g = torch.Generator().manual_seed(1)
    z = torch.randn(20, 3, generator=g, dtype=torch.float64)
    kamh = KAMH(z, sigma=1.5, gamma=0.3, nu=0.8)
    x = torch.randn(4, 3, generator=g, dtype=torch.float64)
    x_new, log_ratio = exp._KAMHProposal(kamh)(x, g)
    mvn = torch.distributions.MultivariateNormal
    want = mvn(x_new, kamh.covariance(x_new)).log_prob(x) - mvn(x, kamh.covariance(x)).log_prob(x_new)
    torch.testing.assert_close(log_ratio, want)


def test_sampling_shards_grid_and_errors(benchmark_file, data_env, tmp_path):
    inputs = {"benchmark": str(benchmark_file)}
    shards = exp.shards(_config(), inputs)
    assert [(s.sampler, s.run) for s in shards] == [(n, r) for n in ("KMC", "KAMH", "RW") for r in (0, 1)]
    assert all(s.kmc_sigmas == (10.0, 100.0) and s.num_importance_samples == 20 and s.mmd_every == 10 for s in shards)
    with pytest.raises(ValueError, match="pilot_iterations"):
        exp.shards(_config(history="pilot", pilot_iterations=0), inputs)
    with pytest.raises(ValueError, match="only 20 samples"):
        exp.shards(_config(num_history=21), inputs)
    with pytest.raises(FileNotFoundError, match="missing.parquet"):
        exp.shards(_config(), {"benchmark": str(tmp_path / "missing.parquet")})
    with pytest.raises(KeyError, match="benchmark"):
        exp.shards(_config(), {})


@pytest.fixture(scope="module")
def sampling_metrics(benchmark_file, shared):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GRADMC_DATA_DIR", str(shared))
        shards = exp.shards(_config(runs=[0]), {"benchmark": str(benchmark_file)})
    return collect("kmc_gpc", [exp.run(s) for s in shards])


def test_sampling_run_rows_and_costs(sampling_metrics):
    df = sampling_metrics
    validate_metrics(df)
    assert set(df["sampler"]) == {"KMC", "KAMH", "RW"}
    mmd = df[df["metric"] == "mmd2"]
    for _, s in mmd.groupby("sampler"):
        assert s["step"].tolist() == [10, 20, 25] and (s["energy_evals"] == s["step"] + 1).all()
        assert (s["value"] >= 0).all() and s["wall_time_s"].is_monotonic_increasing
    end = df[df["metric"] != "mmd2"]
    assert (end["step"] == 25).all()
    v = end.set_index(["sampler", "metric"])["value"]
    for name in ("KMC", "KAMH", "RW"):
        assert v[(name, "likelihood_estimates")] == 26 and v[(name, "benchmark_size")] == 20
        assert 0 <= v[(name, "acceptance_rate")] <= 1
    assert v[("KMC", "kmc_sigma")] in (10.0, 100.0) and v[("KMC", "kmc_lambda")] in (0.1, 1.0)


def test_sampling_run_is_deterministic_and_pilot_history(sampling_metrics, benchmark_file, data_env):
    shard = next(s for s in exp.shards(_config(runs=[0]), {"benchmark": str(benchmark_file)}) if s.sampler == "KAMH")
    again = exp.run(shard).drop(columns="wall_time_s").reset_index(drop=True)
    first = sampling_metrics[sampling_metrics["sampler"] == "KAMH"].drop(columns="wall_time_s")
    pd.testing.assert_frame_equal(first.sort_values(["metric", "step"]).reset_index(drop=True),
                                  again.sort_values(["metric", "step"]).reset_index(drop=True))
    pilot = exp.shards(_config(runs=[0], samplers=["KMC"], history="pilot", pilot_iterations=12, num_history=8),
                       {"benchmark": str(benchmark_file)})[0]
    v = exp.run(pilot).set_index("metric")["value"]
    assert v["likelihood_estimates"] == 26 + 13  # the pilot chain's 12 steps + its initial estimate count


def test_figure_and_claims_on_the_smoke_run(sampling_metrics, tmp_path):
    metrics = write_parquet(sampling_metrics, tmp_path / "metrics.parquet", provenance({"name": "test"}))
    paths = figure(metrics, tmp_path / "fig" / "fig4", tmp_path / "tab" / "fig4", config_name="test")
    assert sorted(p.name for p in paths) == ["fig4.csv", "fig4.md", "fig4.pdf", "fig4.png"]
    table = pd.read_csv(tmp_path / "tab" / "fig4.csv")
    kmc = table[(table["sampler"] == "KMC") & (table["metric"] == "mmd2")]
    assert kmc["step"].tolist() == [10, 20, 25] and (kmc["runs"] == 1).all()
    assert table[(table["sampler"] == "RW") & (table["metric"] == "min_ess")]["paper"].item() == 25.0
    samplers = set(sampling_metrics.loc[sampling_metrics["metric"] == "min_ess", "sampler"])
    others = len(samplers & {"RW", "KAMH"})
    # ESS and ratio per other sampler, absolute and plateau (not run: no MMD at 3,000) per sampler; the smoke
    # run ends before iteration 500, so no MMD comparison.
    out = claims(sampling_metrics)
    assert len(out) == 2 * others + 2 * (1 + others)
    assert [c.status for c in out if c.quote == QUOTES["plateau"]] == ["NOT RUN"] * (1 + others)


_NOISE = {"KMC": [0.05, -0.1, 0.0, 0.15, -0.05], "KAMH": [-0.05, 0.0, 0.1, 0.05, 0.0],
          "RW": [0.0, 0.1, -0.05, 0.05, 0.025]}
_W = [1.0, -1.0, 0.0, 2.0, -2.0]


def _synthetic(kmc_ess: float, kmc_mmd: float, runs: int = 5, iterations: int = 6000) -> pd.DataFrame:
    """Run i of sampler s: min ESS and final MMD^2 = base * exp(noise[s][i]); MMD^2 1,000x at step 100, 2x at
    steps 500 and 1,000, and x exp(0.02 w_i) at step 3,000 (when the run reaches it; w_i the same for all samplers).
    """
    rows = []
    for name, e, m in (("KMC", kmc_ess, kmc_mmd), ("KAMH", 35.0, 50.0), ("RW", 25.0, 80.0)):
        for seed in range(runs):
            f = math.exp(_NOISE[name][seed])
            early = {100: 1e3 * m, 500: 2 * m * f, 1000: 2 * m * f, 3000: m * f * math.exp(0.02 * _W[seed])}
            rows += [("kmc_gpc", "gpc_glass", name, seed, 0, step, "mmd2", v, step + 1, 0, 1.0)
                     for step, v in early.items() if step < iterations]
            rows += [("kmc_gpc", "gpc_glass", name, seed, 0, iterations, "mmd2", m * f, iterations + 1, 0, 2.0),
                     ("kmc_gpc", "gpc_glass", name, seed, 0, iterations, "min_ess", e * f, iterations + 1, 0, 2.0)]
    return pd.DataFrame(rows, columns=["experiment", "target", "sampler", "seed", "chain", "step", "metric", "value",
                                       "energy_evals", "grad_evals", "wall_time_s"])


def _gpc_config(iterations: int = 6000, history: int = 1000, runs: int = 5) -> dict:
    return {"kmc_gpc": {"num_iterations": iterations, "num_history": history, "runs": list(range(runs))}}


def test_claims_pass_fail_inconclusive_on_synthetic_metrics():
    good = claims(_synthetic(415.0, 10.0))
    assert [c.status for c in good] == ["PASS"] * 12, [c.row() for c in good]
    assert [c.direction for c in good] == [1, 1, -1, -1] + [0] * 8
    # geometric means over runs: 415 exp(mean noise_KMC) and 25 exp(mean noise_RW)
    kmc, rw = 415.0 * math.exp(np.mean(_NOISE["KMC"])), 25.0 * math.exp(np.mean(_NOISE["RW"]))
    assert f"KMC {kmc:.1f} vs RW {rw:.1f}" in good[0].measured and "paper: KMC ~415" in good[0].measured
    bad = claims(_synthetic(10.0, 200.0, iterations=2000))
    assert [c.status for c in bad] == ["FAIL"] * 4 + ["NOT RUN"] * 3 + ["FAIL"] * 3 + ["PASS"] * 2
    assert "2000 iterations per run (paper 6000)" in bad[0].note and "0.33x" in bad[9].note
    assert "no MMD^2 of KMC at and after iteration 3000" in bad[4].row()["note"]
    few = claims(_synthetic(415.0, 10.0, runs=3))
    assert [c.status for c in few] == ["INCONCLUSIVE"] * 12
    assert claims(_synthetic(415.0, 10.0).query("sampler != 'KMC'")) == []


def test_claims_quote_the_paper_and_name_their_test():
    good = claims(_synthetic(415.0, 10.0))
    assert [c.quote for c in good] == ([QUOTES["ess"]] * 2 + [QUOTES["mmd"]] * 2 + [QUOTES["plateau"]] * 3
                                       + [QUOTES["ess"]] * 5)
    assert [c.test for c in good] == (["superiority"] * 4 + ["equivalence"] * 3 + ["agreement"] * 5)
    assert all(c.source == "KMC" and c.paper == "KMC Fig. 4 left" for c in good)
    assert all(c.margin_why for c in good if c.test != "superiority")
    assert good[4].tolerance == pytest.approx(math.log(2) / 2) and "log 2" in good[4].margin_why
    assert "iterations per chain >= 6,000" in good[0].row()["needs"] and "unchecked" in good[0].row()["needs"]
    assert "history" not in good[5].row()["needs"]  # RW's plateau needs no history


def test_claims_the_config_cannot_decide_are_not_decidable():
    """Runs below the paper's sizes (2,000 iterations, 300 history points) cannot decide any claim; the paper's
    sizes can, and a FAIL stays a FAIL."""
    small = claims(_synthetic(415.0, 10.0), _gpc_config(2000, 300))
    assert {c.status for c in small} == {NOT_DECIDABLE_SCALE}
    assert "kmc_gpc.num_iterations = 2,000: unmet" in small[0].row()["note"]
    assert "kmc_gpc.num_history = 300: unmet" in small[0].row()["note"]
    assert claims(_synthetic(415.0, 10.0), _gpc_config(6000, 1000, runs=3))[0].status == NOT_DECIDABLE_SCALE
    full = claims(_synthetic(415.0, 10.0), _gpc_config())
    assert [c.status for c in full] == ["PASS"] * 12
    bad = claims(_synthetic(10.0, 200.0), _gpc_config())
    assert [c.status for c in bad][:4] == ["FAIL"] * 4
    short = claims(_synthetic(415.0, 10.0, iterations=2000), _gpc_config(2000, 1000))
    assert [c.status for c in short[4:7]] == [NOT_DECIDABLE_SCALE] * 3  # no MMD at 3,000, and the config says why


def test_claims_effects_by_hand():
    good = claims(_synthetic(415.0, 10.0))
    # the KMC / RW ratio agreement: mean over runs of log(KMC / RW) - log(415 / 25) = mean(noise_KMC - noise_RW).
    # The t interval (t union bootstrap-t) over 5 runs, recomputed in tests/_t_bounds.py.
    d = np.array(_NOISE["KMC"]) - np.array(_NOISE["RW"])
    iv = good[7].interval
    np.testing.assert_allclose([iv.effect, iv.low, iv.high], [d.mean(), *t_bounds(d)])
    assert good[7].tolerance == pytest.approx(math.log(2)) and good[7].paper_value == pytest.approx(math.log(16.6))
    # MMD^2 vs RW from iteration 500 on: every recorded step >= 500 has log(10 / 80) + the noise difference (the
    # step-100 rows are before 500; the step-3,000 factor is common to both samplers).
    np.testing.assert_allclose(good[2].interval.effect, math.log(10 / 80) + d.mean())
    # KMC's plateau: per run log MMD^2(6,000) - log MMD^2(3,000) = -0.02 w_i.
    x = -0.02 * np.array(_W)
    iv = good[4].interval
    np.testing.assert_allclose([iv.effect, iv.low, iv.high], [x.mean(), *t_bounds(x)], atol=1e-12)
