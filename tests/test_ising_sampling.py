"""GWG Fig. 4 experiment (EXPERIMENTS.md A3): shards, tidy rows, determinism, claims, figure."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest

from gradmc.claims.base import NOT_DECIDABLE_SCALE, NOT_RUN
from gradmc.config import fill_defaults
from gradmc.experiments import ising_sampling as exp
from gradmc.experiments.ising_sampling.claims import QUOTES, claims
from gradmc.experiments.ising_sampling.figure import figure
from gradmc.experiments.standard import collect
from gradmc.results import provenance, validate_metrics, write_parquet

SPEC = {"sides": [4, 6], "thetas": [-0.1, 0.3], "samplers": ["Gibbs-1", "GWG"], "seeds": [0, 1],
        "num_chains": 5, "num_steps": 30, "burn_in_fraction": 0.1, "chains_per_shard": 2,
        "chain_block": 1}


def _config(**over) -> dict:
    return fill_defaults({"name": "test", "device": "cpu", "ising_sampling": {**SPEC, **over}})


def test_shards_enumerate_and_chunk():
    shards = exp.shards(_config(), {})
    assert len(shards) == 2 * 2 * 2 * 2 * 3  # sides x thetas x samplers x seeds x ceil(5 / 2) chunks
    assert len(set(shards)) == len(shards)
    groups: dict[tuple, list[int]] = {}
    for s in shards:
        assert 1 <= s.num_chains <= 2 and s.total_chains == 5
        groups.setdefault((s.side, s.theta, s.sampler, s.seed), []).extend(
            range(s.chain_start, s.chain_start + s.num_chains))
    assert all(sorted(chains) == list(range(5)) for chains in groups.values())
    assert len(exp.shards(_config(chains_per_shard=8), {})) == 16


@pytest.fixture(scope="module")
def tiny_shard() -> exp.Shard:
    return exp.Shard(side=4, theta=0.3, sampler="GWG", seed=0, chain_start=2, num_chains=3, total_chains=3,
                     num_steps=40, burn_in_fraction=0.1, chain_block=1, device="cpu")


@pytest.fixture(scope="module")
def tiny_rows(tiny_shard) -> pd.DataFrame:
    return exp.run(tiny_shard)


def test_run_returns_tidy_rows(tiny_rows):
    validate_metrics(tiny_rows)
    ess = tiny_rows[tiny_rows["metric"] == "ess"]
    assert sorted(ess["chain"]) == [2, 3, 4]
    assert np.all(np.isfinite(ess["value"])) and np.all(ess["value"] > 0)
    pooled = tiny_rows[tiny_rows["metric"] == "ess_all_chains"]
    assert len(pooled) == 1 and int(pooled["chain"].iloc[0]) == -1 and pooled["value"].iloc[0] > 0
    assert set(tiny_rows["metric"]) == {"ess", "ess_per_second", "ess_per_energy_eval", "acceptance_rate",
                                        "ess_discs", "ess_all_chains"}
    assert (tiny_rows["side"] == 4).all() and (tiny_rows["theta"] == 0.3).all()
    # 40 cached GWG steps: 1 evaluation each, plus init's evaluation (counted by the first step)
    assert (tiny_rows["energy_evals"] == 40 + 1).all() and (tiny_rows["wall_time_s"] > 0).all()


def test_chunked_shard_writes_chunk_pooled_ess(tiny_shard):
    rows = exp.run(dataclasses.replace(tiny_shard, total_chains=6, num_steps=20))
    assert "ess_chunk_chains" in set(rows["metric"]) and "ess_all_chains" not in set(rows["metric"])


def test_run_is_deterministic(tiny_shard, tiny_rows):
    again = exp.run(tiny_shard)
    time_cols = [c for c in tiny_rows.columns if c == "wall_time_s"]
    timed = tiny_rows["metric"].isin(["ess_per_second"])
    pd.testing.assert_frame_equal(tiny_rows[~timed].drop(columns=time_cols).reset_index(drop=True),
                                  again[~timed].drop(columns=time_cols).reset_index(drop=True))


def test_reference_configuration_is_per_lattice_and_theta():
    a = exp.reference_configuration(4, 0.3)
    assert a.shape == (16,) and bool(((a == 0) | (a == 1)).all())
    assert (a == exp.reference_configuration(4, 0.3)).all()
    assert not (a == exp.reference_configuration(4, 0.5)).all()


def _synthetic(gwg_gain: dict[float, float], sides=(10, 40), spread: float = 0.1,
               baselines: dict[str, float] | None = None) -> pd.DataFrame:
    """Tidy rows with ESS = 10 (1 + spread * seed) for Gibbs-1 and gain[theta] times that for GWG (and base times
    that for each other baseline of ``baselines``), 2 seeds x 3 chains."""
    rows = []
    for side in sides:
        for theta, gain in gwg_gain.items():
            for sampler, ess in (("Gibbs-1", 10.0), ("GWG", 10.0 * gain),
                                 *((b, 10.0 * f) for b, f in (baselines or {}).items())):
                for seed in (0, 1):
                    for chain in (0, 1, 2):
                        value = ess * (1.0 + spread * seed)
                        for metric, v in (("ess", value), ("ess_per_second", value / 2), ("ess_per_energy_eval",
                                          value / 100), ("acceptance_rate", 0.9)):
                            rows.append(("ising_sampling", f"lattice_ising_{side}x{side}", sampler, seed, chain,
                                         100, metric, v, 100, 0, 2.0, side, theta, 0))
    df = pd.DataFrame(rows, columns=["experiment", "target", "sampler", "seed", "chain", "step", "metric",
                                     "value", "energy_evals", "grad_evals", "wall_time_s", "side", "theta",
                                     "chunk"])
    return df


def test_collect_sorts_stably():
    df = _synthetic({0.0: 1.0, 0.5: 2.0})
    shuffled = [part for _, part in df.sample(frac=1.0, random_state=0).groupby("seed")]
    a = collect("ising_sampling", shuffled)
    b = collect("ising_sampling", shuffled[::-1])
    pd.testing.assert_frame_equal(a, b)
    assert list(a.sort_values(exp.META["sort_by"], kind="stable").index) == list(a.index)


def _decided(out) -> dict:
    return {c.claim: c for c in out if c.status != NOT_RUN}


def test_claims_pass_fail_and_inconclusive():
    good = _decided(claims(_synthetic({-0.1: 1.0, 0.3: 3.0, 0.5: 5.0})))
    assert sorted(good) == [f"GWG ESS > Gibbs-1 ESS on the {s}x{s} lattice at theta {t}" for s in (10, 40)
                            for t in (0.3, 0.5)] + [
                            "GWG's ESS advantage over Gibbs-1 grows with theta (10x10 lattice)",
                            "GWG's ESS advantage over Gibbs-1 grows with theta (40x40 lattice)"]
    assert all(c.status == "PASS" for c in good.values())
    c = good["GWG ESS > Gibbs-1 ESS on the 40x40 lattice at theta 0.3"]
    assert c.interval.unit == "chains" and c.interval.replicates == 6  # 2 seeds x 3 chains pooled
    # chains' ESS lie in [10, 11] (x gain): the bootstrap log ratio cannot leave log(gain) +- log(1.1)
    assert math.isclose(c.interval.effect, math.log(3.0))
    assert math.log(3.0 / 1.1) - 1e-12 <= c.interval.low <= c.interval.high <= math.log(3.3) + 1e-12
    bad = {c.claim: c.status for c in _decided(claims(_synthetic({-0.1: 2.0, 0.3: 0.5, 0.5: 0.8}))).values()}
    assert set(bad.values()) == {"FAIL"}
    flat = {c.claim: c.status for c in _decided(claims(_synthetic({-0.1: 1.0, 0.3: 1.0}))).values()}
    assert set(flat.values()) == {"INCONCLUSIVE"}  # effect 0: the interval straddles the null
    assert claims(_synthetic({0.5: 2.0})[lambda d: d["sampler"] == "Gibbs-1"]) == []


def test_claims_quote_the_paper_and_declare_the_baselines_that_did_not_run():
    """Every GWG claim quotes Fig. 4 / App. F.1 and is a superiority test; Gibbs-2 and HB-10-1 (the paper's other
    baselines) are tested on both lattices where they ran, and are NOT RUN rows naming the config key where not."""
    out = claims(_synthetic({-0.1: 1.0, 0.5: 4.0}, baselines={"Gibbs-2": 2.0}))
    assert all(c.source == "GWG" and c.kind == "superiority" and c.quote in QUOTES.values() for c in out)
    by = {c.claim: c for c in out}
    assert by["GWG ESS > Gibbs-2 ESS on the 10x10 lattice at theta 0.5"].status == "PASS"
    assert np.isclose(by["GWG ESS > Gibbs-2 ESS on the 10x10 lattice at theta 0.5"].interval.effect, math.log(2.0))
    assert by["GWG ESS > Gibbs-2 ESS on the 40x40 lattice at theta 0.5"].quote == QUOTES["both_sizes"]
    assert by["GWG's ESS advantage over Gibbs-1 grows with theta (10x10 lattice)"].quote == QUOTES["connectivity"]
    missing = [c for c in out if c.status == NOT_RUN]
    assert [c.claim for c in missing] == [f"GWG ESS > HB-10-1 ESS on the {s}x{s} lattice at strong coupling "
                                          "(theta >= 0.3)" for s in (10, 40)]
    assert all("ising_sampling.samplers" in c.row()["note"] and math.isnan(c.interval.effect) for c in missing)


def test_needs_the_papers_100000_steps():
    df = _synthetic({-0.1: 2.0, 0.3: 0.5, 0.5: 0.8})
    quick = {"ising_sampling": {"num_steps": 1000}}
    out = [c for c in claims(df, quick) if c.status != NOT_RUN]
    assert out and {c.status for c in out} == {NOT_DECIDABLE_SCALE}
    assert "steps per chain >= 100,000 (config ising_sampling.num_steps = 1,000: unmet" in out[0].row()["note"]
    paper = {c.claim: c.status for c in claims(df, {"ising_sampling": {"num_steps": 100_000}}) if c.status != NOT_RUN}
    assert set(paper.values()) == {"FAIL"}  # decidable at the paper's length: the FAILs stay


def test_claims_closed_form_without_spread():
    """Identical chains: every bootstrap resample gives the full-sample statistic, so the interval is a point."""
    out = {c.claim: c for c in claims(_synthetic({-0.1: 2.0, 0.5: 6.0}, spread=0.0))}
    grow = out["GWG's ESS advantage over Gibbs-1 grows with theta (40x40 lattice)"]
    assert grow.status == "PASS" and grow.direction == 1
    assert np.allclose([grow.interval.effect, grow.interval.low, grow.interval.high], math.log(6.0) - math.log(2.0))
    assert "ESS ratio GWG / Gibbs-1: 6 at theta 0.5 vs 2 at theta -0.1" in grow.measured
    strong = out["GWG ESS > Gibbs-1 ESS on the 40x40 lattice at theta 0.5"]
    assert np.allclose([strong.interval.low, strong.interval.high], math.log(6.0))


def test_figure_writes_four_files(tmp_path):
    df = _synthetic({-0.1: 1.0, 0.2: 2.0, 0.5: 4.0})
    path = write_parquet(df, tmp_path / "metrics.parquet", provenance({"name": "test"}), validate=True)
    paths = figure(path, tmp_path / "fig" / "fig4", tmp_path / "tab" / "fig4", config_name="test")
    assert sorted(p.suffix for p in paths) == [".csv", ".md", ".pdf", ".png"]
    assert all(p.is_file() and p.stat().st_size > 0 for p in paths)
    table = pd.read_csv(tmp_path / "tab" / "fig4.csv")
    assert len(table) == 2 * 3 * 2 and {"log10_ess_mean", "log10_ess_se"} <= set(table.columns)
    assert "ArviZ" in (tmp_path / "tab" / "fig4.md").read_text()
