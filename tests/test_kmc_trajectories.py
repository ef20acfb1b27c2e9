"""KMC Fig. 2 (trajectory stability in growing dimension): shards, run, integrator, determinism, claims, figure."""

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
from gradmc.experiments import kmc_trajectories as exp
from gradmc.experiments.kmc_trajectories.claims import MARGIN, QUOTES, claims
from gradmc.experiments.kmc_trajectories.figure import figure
from gradmc.results import provenance, validate_metrics, write_parquet
from gradmc.targets import Gaussian


def _config(**over) -> dict:
    spec = {"dims": [2, 4], "num_samples": [50, 100], "num_trials": 5, "trials_per_shard": 2, "eps": 0.1,
            "L_min": 10, "L_max": 100, "lengthscale": "median", "shape": 1.0, "lam": 1e-3}
    spec.update(over)
    return fill_defaults({"name": "test", "device": "cpu", "kmc_trajectories": spec})


def test_shards_enumerate_d_n_chunks():
    shards = exp.shards(_config(), {})
    assert len(shards) == 2 * 2 * 3
    assert [(s.d, s.n, s.chunk) for s in shards[:3]] == [(2, 50, 0), (2, 50, 1), (2, 50, 2)]
    assert [(s.first_trial, s.num_trials) for s in shards[:3]] == [(0, 2), (2, 2), (4, 1)]
    with pytest.raises(ValueError, match="L_min"):
        exp.shards(_config(L_min=20, L_max=10), {})
    defaults = exp.shards(fill_defaults({"device": "cpu", "kmc_trajectories": {
        "dims": [2], "num_samples": [50], "num_trials": 1, "trials_per_shard": 1}}), {})[0]
    assert (defaults.eps, defaults.L_min, defaults.L_max, defaults.lengthscale, defaults.shape, defaults.lam) == (
        0.1, 10, 100, "median", 1.0, 1e-3)


def test_schema_rejects_a_lengthscale_other_than_a_number_or_median():
    config = yaml.safe_load(open("config/smoke.yaml"))
    config["kmc_trajectories"]["lengthscale"] = "mean"
    with pytest.raises(ConfigError, match="kmc_trajectories.lengthscale"):
        validate_config(copy.deepcopy(config))


def _shard(**over) -> exp.Shard:
    kw = {"d": 3, "n": 60, "chunk": 1, "first_trial": 2, "num_trials": 2, "L_min": 5, "L_max": 20}
    kw.update(over)
    return replace(exp.shards(_config(), {})[0], **kw)


def test_run_returns_tidy_rows():
    df = exp.run(_shard())
    validate_metrics(df)
    assert list(df["metric"]) == ["acceptance_kmc", "acceptance_hmc"] and list(df["sampler"]) == ["KMC", "HMC"]
    assert (df["chain"] == -1).all() and (df["seed"] == 1).all()
    assert (df["d"] == 3).all() and (df["n"] == 60).all() and (df["trials"] == 2).all()
    assert ((df["value"] >= 0) & (df["value"] <= 1)).all()
    assert (df["grad_evals"] >= 10).all()


def test_exact_score_as_surrogate_reproduces_hmc():
    shard = _shard()
    for t in range(2):

        def exact(x, _t=t):
            return exp.random_gamma_gaussian(shard.d, exp.make_generator(exp.seed_from(exp.EXPERIMENT, "target",
                                                                                         shard.d, _t))).grad(x)
        out = exp.trial(shard, t, surrogate_grad=exact)
        assert out["acc_kmc"] == pytest.approx(out["acc_hmc"], abs=1e-12)


def test_leapfrog_conserves_energy_on_standard_gaussian():
    g = Gaussian(torch.zeros(2, dtype=torch.float64), torch.eye(2, dtype=torch.float64))
    q, p = exp.leapfrog_trajectory(torch.tensor([1.0, 0.0], dtype=torch.float64),
                                   torch.tensor([0.0, 1.0], dtype=torch.float64), g.grad, 0.01, 100)
    assert q.shape == (101, 2)
    assert exp.trajectory_acceptance(g, q, p) > 0.999
    # exact flow for one unit of time is a rotation
    assert torch.allclose(q[-1], torch.tensor([math.cos(1.0), math.sin(1.0)], dtype=torch.float64), atol=1e-4)


def test_run_is_deterministic():
    a, b = exp.run(_shard()), exp.run(_shard())
    pd.testing.assert_frame_equal(a.drop(columns="wall_time_s"), b.drop(columns="wall_time_s"))


def test_hmc_does_not_depend_on_n():
    a, b = exp.run(_shard(n=40)), exp.run(_shard(n=80))
    assert a.loc[a["metric"] == "acceptance_hmc", "value"].item() == b.loc[b["metric"] == "acceptance_hmc",
                                                                           "value"].item()


def _synthetic(good: bool) -> pd.DataFrame:
    rows = []
    for d in (2, 8, 16):
        for n in (100, 1000):
            for chunk in (0, 1):
                hmc = 0.99
                kmc = (0.99 - 0.04 * (d - 2)) if good else (0.3 + 0.01 * d)
                for metric, sampler, value in (("acceptance_kmc", "KMC", kmc), ("acceptance_hmc", "HMC", hmc)):
                    rows.append(("kmc_trajectories", "gamma_gaussian", sampler, chunk, -1, 0, metric,
                                 value + 0.01 * chunk, 50, 50, 0.1, d, n, 5))
    df = pd.DataFrame(rows, columns=["experiment", "target", "sampler", "seed", "chain", "step", "metric", "value",
                                     "energy_evals", "grad_evals", "wall_time_s", "d", "n", "trials"])
    validate_metrics(df)
    return df


_W = [0.0, 1.0, -1.0, 2.0, -2.0]


def _shard_frame(good: bool, shards: int = 5) -> pd.DataFrame:
    """Per-shard acceptances: HMC 0.99 - 0.002 c (same along n and d); KMC a (d, n) level + 0.01 w_c (+-) along n."""
    rows = []
    for d in (2, 8, 16):
        for n in (100, 1000):
            for c in range(shards):
                if good:
                    level = 0.99 - 0.04 * (d - 2) - (0.15 if n == 100 else 0.0)
                else:
                    level = 0.3 + 0.01 * d + (0.1 if n == 100 else 0.0)
                kmc = level + 0.01 * _W[c] * (1 if n == 100 else -1)
                hmc = 0.99 - 0.002 * c
                for metric, sampler, value in (("acceptance_kmc", "KMC", kmc), ("acceptance_hmc", "HMC", hmc)):
                    rows.append(("kmc_trajectories", "gamma_gaussian", sampler, c, -1, 0, metric, value, 50, 50, 0.1,
                                 d, n, 4))
    df = pd.DataFrame(rows, columns=["experiment", "target", "sampler", "seed", "chain", "step", "metric", "value",
                                     "energy_evals", "grad_evals", "wall_time_s", "d", "n", "trials"])
    validate_metrics(df)
    return df


def test_claims_pass_fail_inconclusive():
    good = claims(_shard_frame(True))
    # comparable at d = 2 and d = 8 (KMC 0.24 below HMC there: FAIL), approach, degradation, gap, regular target
    assert [c.status for c in good] == ["PASS", "FAIL", "PASS", "PASS", "PASS", "NOT RUN"], [c.row() for c in good]
    assert "d = 2: KMC n = 100 0.840, n = 1000 0.990; HMC 0.986" in good[2].measured  # HMC 0.99 - 0.002 mean(c)
    bad = claims(_shard_frame(False))
    assert [c.status for c in bad] == ["FAIL"] * 5 + ["NOT RUN"]
    assert "20 trials per (d, n) (paper 100)" in bad[2].note and "shard of 4-4 trials" in bad[2].note
    few = claims(_shard_frame(True, shards=4))
    assert [c.status for c in few] == ["INCONCLUSIVE"] * 5 + ["NOT RUN"]
    assert claims(_shard_frame(True).query("metric != 'acceptance_kmc'")) == []


def test_claims_quote_the_paper_and_name_their_test():
    good = claims(_shard_frame(True))
    assert [c.quote for c in good] == [QUOTES["comparable"]] * 2 + [""] + [QUOTES["comparable"]] * 2 + [
        QUOTES["regular"]]
    assert [c.source for c in good] == ["KMC", "KMC", "other", "KMC", "KMC", "KMC"]
    assert [c.test for c in good] == ["equivalence"] * 2 + ["superiority"] * 4
    assert good[0].tolerance == MARGIN and "trial-to-trial spread" in good[0].margin_why
    assert "no sentence on the trend along n" in good[2].note and good[2].paper == "sanity check on KMC Fig. 2 data"
    assert "only the Gamma(1,1)-spectrum Gaussian" in good[-1].row()["note"]


def test_claims_the_config_cannot_decide_are_not_decidable():
    """The comparable claims need the paper's n = 5,000 slice and 100 trials; every claim 5 shards; a FAIL on a
    decidable claim stays."""
    small = {"kmc_trajectories": {"num_trials": 20, "trials_per_shard": 4, "num_samples": [100, 1000]}}
    assert [c.status for c in claims(_shard_frame(True), small)] == [NOT_DECIDABLE_SCALE] * 2 + ["PASS"] * 3 + [
        "NOT RUN"]
    assert "kmc_trajectories.num_samples = 1,000: unmet" in claims(_shard_frame(True), small)[0].row()["note"]
    few = {"kmc_trajectories": {"num_trials": 8, "trials_per_shard": 2, "num_samples": [100, 1000]}}
    assert [c.status for c in claims(_shard_frame(True), few)][:5] == [NOT_DECIDABLE_SCALE] * 5
    paper = {"kmc_trajectories": {"num_trials": 100, "trials_per_shard": 20, "num_samples": [100, 16000]}}
    assert [c.status for c in claims(_shard_frame(True), paper)] == ["PASS", "FAIL", "PASS", "PASS", "PASS",
                                                                     "NOT RUN"]


def test_claims_effects_by_hand():
    good = claims(_shard_frame(True))
    # gap shrink at d = 2: per shard, KMC(n = 1000) - KMC(n = 100) = 0.15 - 0.02 w_c (HMC cancels along n).
    # The t interval (t union bootstrap-t) over 5 shards, recomputed in tests/_t_bounds.py.
    x = 0.15 - 0.02 * np.array(_W)
    iv = good[2].interval
    np.testing.assert_allclose([iv.effect, iv.low, iv.high], [x.mean(), *t_bounds(x)])
    assert iv.unit == "shards" and iv.replicates == 5
    # degradation at n = 1000: 0.04 (16 - 2) = 0.56 in every shard (the noise cancels): a zero-width interval.
    np.testing.assert_allclose([good[3].interval.effect, good[3].interval.low, good[3].interval.high], [0.56] * 3)
    # comparable at d = 2, n = 1000: per shard KMC - HMC = -0.01 w_c + 0.002 c.
    y = -0.01 * np.array(_W) + 0.002 * np.arange(5)
    iv = good[0].interval
    np.testing.assert_allclose([iv.effect, iv.low, iv.high], [y.mean(), *t_bounds(y)])


def test_figure_writes_files(tmp_path):
    df = _synthetic(True)
    metrics = write_parquet(df, tmp_path / "metrics.parquet", provenance({"name": "test"}), validate=True)
    paths = figure(metrics, tmp_path / "fig" / "kmc_fig2", tmp_path / "tab" / "kmc_fig2", config_name="test")
    assert sorted(p.name for p in paths) == ["kmc_fig2.csv", "kmc_fig2.md", "kmc_fig2.pdf", "kmc_fig2.png"]
    assert all(p.stat().st_size > 0 for p in paths)
    table = pd.read_csv(tmp_path / "tab" / "kmc_fig2.csv")
    assert len(table) == 6 and (table["trials"] == 10).all()
    row = table[(table["d"] == 2) & (table["n"] == 1000)].iloc[0]
    assert np.isclose(row["acceptance_kmc"], 0.995) and np.isclose(row["acceptance_hmc"], 0.995)
