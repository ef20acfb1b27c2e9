"""KMC Fig. 3 (8-D banana): shards, run, determinism, claims, figure."""

from __future__ import annotations

import copy
import math
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
import yaml
from _t_bounds import t_bounds

from gradmc.claims.base import NOT_DECIDABLE_SCALE
from gradmc.config import ConfigError, fill_defaults, validate_config
from gradmc.experiments import kmc_banana as exp
from gradmc.experiments.kmc_banana.claims import CLOSE_MARGINS, QUOTES, claims
from gradmc.experiments.kmc_banana.figure import figure
from gradmc.results import provenance, validate_metrics, write_parquet


def _config(**over) -> dict:
    spec = {"samplers": ["HMC", "KMC", "RW"], "n": [20, 40], "runs": [0, 1], "num_burn_in": 10,
            "num_iterations": 20, "step_size_range": [0.6, 1.3], "num_steps_range": [5, 10], "lengthscale": 5.0,
            "lam": 1e-3, "history": "target", "adaptation": "none"}
    spec.update(over)
    return fill_defaults({"name": "test", "device": "cpu", "kmc_banana": spec})


def _shard(sampler: str, n: int, run: int, **over) -> exp.Shard:
    """A shard of the schema defaults (history "target", adaptation "none"), fields overridden by ``over``."""
    return replace(exp.shards(_config(samplers=["HMC"]), {})[0], sampler=sampler, n=n, run=run, **over)


def test_shards_enumerate_sampler_n_run():
    shards = exp.shards(_config(), {})
    assert [(s.sampler, s.n, s.run) for s in shards] == (
        [("HMC", 0, 0), ("HMC", 0, 1)] + [("KMC", n, r) for n in (20, 40) for r in (0, 1)]
        + [("RW", 0, 0), ("RW", 0, 1)])
    assert all(s.num_steps_range == (5, 10) and s.d == 8 and s.V == 100.0 and s.rw_initial_scale == 1.0
               and s.adaptation == "none" for s in shards)
    kamh = exp.shards(_config(samplers=["KMC", "KAMH"]), {})
    assert [(s.sampler, s.n) for s in kamh if s.run == 0] == [("KMC", 20), ("KMC", 40), ("KAMH", 20), ("KAMH", 40)]


@pytest.mark.parametrize(("key", "value"), [("adaptation", "always"), ("samplers", ["NUTS"]), ("history", "oracle")])
def test_schema_rejects_unknown_enumerations(key, value):
    config = yaml.safe_load(open("config/smoke.yaml"))
    config["kmc_banana"][key] = value
    with pytest.raises(ConfigError, match=f"kmc_banana.{key}"):
        validate_config(copy.deepcopy(config))


@pytest.mark.parametrize(("sampler", "n", "history"), [("HMC", 0, "target"), ("RW", 0, "target"),
                                                        ("KMC", 30, "target"), ("KMC", 30, "burn_in"),
                                                        ("KAMH", 30, "target"), ("KAMH", 30, "burn_in")])
def test_run_returns_tidy_rows(sampler, n, history):
    shard = _shard(sampler, n, 0, num_burn_in=20, num_iterations=40, num_steps_range=(5, 10), lengthscale=5.0,
                   history=history)
    df = exp.run(shard)
    validate_metrics(df)
    assert set(df["metric"]) == {"acceptance_rate", "mean_norm", "min_ess", "min_ess_per_second",
                                 "burn_in_acceptance", "adaptations"}
    assert (df["n"] == n).all() and (df["step"] == 60).all() and (df["chain"] == 0).all()
    v = df.set_index("metric")["value"]
    assert 0.0 <= v["acceptance_rate"] <= 1.0 and 0.0 <= v["burn_in_acceptance"] <= 1.0
    assert np.isfinite(v["mean_norm"]) and v["mean_norm"] >= 0
    if sampler == "HMC":
        assert np.isfinite(v["min_ess"]) and v["min_ess"] > 0


@pytest.mark.parametrize("sampler", ["KMC", "KAMH"])
def test_vanishing_adaptation_updates_the_history(sampler):
    """a_t = 1/sqrt(t+1): a_0 = 1 forces an adaptation at the first kept step; over 40 steps the count is
    random but at least 1 and far below 40 (E = sum a_t ~ 11.4); without adaptation it is exactly 0."""
    common = dict(num_burn_in=20, num_iterations=40, num_steps_range=(5, 10), lengthscale=5.0, history="burn_in")
    on = exp.run(_shard(sampler, 30, 0, adaptation="vanishing", **common)).set_index("metric")["value"]
    off = exp.run(_shard(sampler, 30, 0, **common)).set_index("metric")["value"]
    assert 1 <= on["adaptations"] < 30 and off["adaptations"] == 0
    assert 0.0 <= on["acceptance_rate"] <= 1.0


def test_adaptation_probability_schedule():
    import torch

    from gradmc.samplers.continuous import adaptation_probability, should_adapt

    assert adaptation_probability(0) == 1.0 and adaptation_probability(3) == 0.5
    assert adaptation_probability(8, decay=1.0) == pytest.approx(1 / 9)
    with pytest.raises(ValueError, match="decay"):
        adaptation_probability(1, decay=1.5)
    with pytest.raises(ValueError, match="step t"):
        adaptation_probability(-1)
    g = torch.Generator().manual_seed(0)
    draws = [should_adapt(99, g) for _ in range(4000)]  # a_99 = 0.1: binomial(4000, 0.1), sd 19
    assert abs(sum(draws) - 400) < 5 * 19


def test_run_is_deterministic():
    shard = _shard("KMC", 25, 3, num_burn_in=10, num_iterations=20, num_steps_range=(5, 8), lengthscale=5.0)
    a, b = exp.run(shard), exp.run(shard)
    cols = ["wall_time_s"]
    a = a.drop(columns=cols)
    b = b.drop(columns=cols)
    keep = a["metric"] != "min_ess_per_second"
    pd.testing.assert_frame_equal(a[keep], b[keep])


def _synthetic(kmc_good: bool) -> pd.DataFrame:
    rows = []
    kmc = {50: 5.0, 200: 20.0, 1000: 45.0} if kmc_good else {50: 5.0, 200: 3.0, 1000: 2.0}
    refs = {("HMC", 0): 50.0, ("RW", 0): 4.0, ("KAMH", 1000): 6.0}
    for (name, n), ess in [*(((("KMC", k), v)) for k, v in kmc.items()), *refs.items()]:
        for seed in range(3):
            for metric, value in (("min_ess", ess + seed), ("acceptance_rate", 0.5), ("mean_norm", 1.0 + seed)):
                rows.append(("kmc_banana", "banana", name, n, seed, 0, 2200, metric, value, 4400, 0, 1.0))
    df = pd.DataFrame(rows, columns=["experiment", "target", "sampler", "n", "seed", "chain", "step", "metric",
                                     "value", "energy_evals", "grad_evals", "wall_time_s"])
    validate_metrics(df)
    return df


def _runs(kmc: dict, runs: int = 5) -> pd.DataFrame:
    """min ESS rows: sampler s, run i has ESS base * exp(noise); KMC's noise is constant along n within a run."""
    noise = {"KMC": [0.1, -0.2, 0.0, 0.3, -0.1], "RW": [0.0, 0.2, -0.1, 0.1, 0.05],
             "KAMH": [-0.1, 0.0, 0.2, 0.1, 0.0], "HMC": [0.05, 0.0, -0.05, 0.1, 0.0]}
    base = [*((("KMC", n), v) for n, v in kmc.items()), (("HMC", 0), 50.0), (("RW", 0), 4.0), (("KAMH", 1000), 6.0)]
    rows = [("kmc_banana", "banana", name, n, seed, 0, 2200, "min_ess", ess * math.exp(noise[name][seed]), 4400, 0, 1.0)
            for (name, n), ess in base for seed in range(runs)]
    return pd.DataFrame(rows, columns=["experiment", "target", "sampler", "n", "seed", "chain", "step", "metric",
                                       "value", "energy_evals", "grad_evals", "wall_time_s"])


def test_claims_pass_fail_inconclusive():
    good = claims(_runs({50: 5.0, 200: 20.0, 1000: 45.0}))
    # ESS vs RW, vs KAMH, trend, gap to HMC, and close to HMC at the largest n (log(45 / 50) inside +-0.54)
    assert [c.status for c in good] == ["PASS"] * 5, [c.row() for c in good]
    bad = claims(_runs({50: 5.0, 200: 3.0, 1000: 2.0}))
    assert [c.status for c in bad] == ["FAIL"] * 5
    assert "30 runs" in bad[0].note and "n up to 1000" in bad[0].note
    few = claims(_runs({50: 5.0, 200: 20.0, 1000: 45.0}, runs=4))
    assert [c.status for c in few] == ["INCONCLUSIVE"] * 5
    assert claims(_runs({50: 5.0}).query("sampler != 'KMC'")) == []


_PANEL_NOISE = [0.05, -0.1, 0.0, 0.15, -0.05]


def _panels(kmc_good: bool, runs: int = 5) -> pd.DataFrame:
    """All three panels: acceptance (KMC rising to HMC's 0.8 or falling to 0.1), ||E_hat[x]|| (KMC falling to HMC's
    0.5 or stuck at 6, above RW's 3) and min ESS; run i's values carry exp(noise_i) (acceptance: + 0.01 noise_i)."""
    kmc = ({50: (0.2, 3.0, 5.0), 200: (0.6, 1.0, 20.0), 1000: (0.79, 0.5, 48.0)} if kmc_good else
           {50: (0.3, 6.0, 5.0), 200: (0.2, 6.0, 3.0), 1000: (0.1, 6.0, 2.0)})
    base = [*((("KMC", n), v) for n, v in kmc.items()), (("HMC", 0), (0.8, 0.5, 50.0)), (("RW", 0), (0.23, 3.0, 4.0)),
            (("KAMH", 1000), (0.23, 3.0, 6.0))]
    rows = []
    for (name, n), (acc, norm, ess) in base:
        for seed in range(runs):
            e = _PANEL_NOISE[seed] * (1 if name == "KMC" else -1)
            for metric, value in (("acceptance_rate", acc + 0.01 * e), ("mean_norm", norm * math.exp(e)),
                                  ("min_ess", ess * math.exp(e))):
                rows.append(("kmc_banana", "banana", name, n, seed, 0, 2200, metric, value, 4400, 0, 1.0))
    return pd.DataFrame(rows, columns=["experiment", "target", "sampler", "n", "seed", "chain", "step", "metric",
                                       "value", "energy_evals", "grad_evals", "wall_time_s"])


def test_claims_of_every_panel_quote_the_paper():
    good = claims(_panels(True))
    assert [c.claim.split(" ")[1] + " " + c.test for c in good] == [
        "minimum superiority", "minimum superiority", "minimum superiority", "gap superiority",
        "norm superiority", "norm superiority", "acceptance superiority", "acceptance equivalence",
        "||E_hat[x]|| equivalence", "minimum equivalence"]
    assert [c.status for c in good] == ["PASS"] * 10, [c.row() for c in good]
    assert [c.direction for c in good] == [1, 1, 1, 1, -1, -1, 1, 0, 0, 0]
    assert [c.quote for c in good] == ([QUOTES["outperforms"]] * 2 + [QUOTES["approaches"]] * 2
                                       + [QUOTES["outperforms"]] * 2 + [QUOTES["approaches"]]
                                       + [QUOTES["outperforms"]] * 3)
    assert all(c.source == "KMC" and c.paper == "KMC Fig. 3" for c in good)
    assert [c.tolerance for c in good[7:]] == [CLOSE_MARGINS[m] for m in ("acceptance_rate", "mean_norm", "min_ess")]
    assert all("80% band" in c.margin_why for c in good[7:])
    bad = claims(_panels(False))
    assert [c.status for c in bad] == ["FAIL"] * 10, [c.row() for c in bad]


def test_claims_the_config_cannot_decide_are_not_decidable():
    """'Eventually close to HMC' needs the paper's n = 2,000; every claim its 30 runs; a FAIL stays a FAIL."""
    quick = {"kmc_banana": {"runs": list(range(30)), "n": [50, 1000]}}
    assert [c.status for c in claims(_panels(True), quick)] == ["PASS"] * 7 + [NOT_DECIDABLE_SCALE] * 3
    assert "kmc_banana.n = 1,000: unmet" in claims(_panels(True), quick)[-1].row()["note"]
    one = {"kmc_banana": {"runs": [0], "n": [50, 2000]}}
    assert {c.status for c in claims(_panels(True), one)} == {NOT_DECIDABLE_SCALE}
    paper = {"kmc_banana": {"runs": list(range(30)), "n": [50, 2000]}}
    assert [c.status for c in claims(_panels(False), paper)] == ["FAIL"] * 10


def test_claims_effects_by_hand():
    good = claims(_runs({50: 5.0, 200: 20.0, 1000: 45.0}))
    # KMC vs RW: per-run log ratio log(45 / 4) + noise_KMC - noise_RW, t interval (t union bootstrap-t) over 5 runs.
    d = math.log(45.0 / 4.0) + np.array([0.1, -0.2, 0.0, 0.3, -0.1]) - np.array([0.0, 0.2, -0.1, 0.1, 0.05])
    iv = good[0].interval
    np.testing.assert_allclose([iv.effect, iv.low, iv.high], [d.mean(), *t_bounds(d)])
    assert iv.replicates == 5 and iv.unit == "runs" and good[0].direction == 1
    # trend: KMC's noise is constant along n, so every run has the same slope: a zero-width interval.
    slope = np.polyfit(np.log([50.0, 200.0, 1000.0]), np.log([5.0, 20.0, 45.0]), 1)[0]
    np.testing.assert_allclose([good[2].interval.effect, good[2].interval.low, good[2].interval.high], [slope] * 3)
    # the gap to HMC shrinks by log(45 / 5) in every run (HMC cancels within a run).
    np.testing.assert_allclose(good[3].interval.effect, math.log(9.0))
    assert "n = 200: 20.4" in good[2].measured  # geometric mean: 20 exp(mean noise 0.02)


def test_figure_writes_files(tmp_path):
    metrics = write_parquet(_synthetic(True), tmp_path / "metrics.parquet", provenance({"name": "test"}),
                            validate=True)
    paths = figure(metrics, tmp_path / "fig" / "fig3", tmp_path / "tab" / "fig3", config_name="test")
    assert sorted(p.name for p in paths) == ["fig3.csv", "fig3.md", "fig3.pdf", "fig3.png"]
    assert all(p.stat().st_size > 0 for p in paths)
    table = pd.read_csv(tmp_path / "tab" / "fig3.csv")
    row = table[(table["sampler"] == "KMC") & (table["n"] == 1000) & (table["metric"] == "min_ess")].iloc[0]
    assert row["median"] == 46.0 and row["runs"] == 3
