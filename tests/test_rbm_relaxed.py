"""GWG Fig. 2 experiment (EXPERIMENTS.md A2): shards, run(), determinism, best-setting figure, claims."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from _t_bounds import t_bounds

from gradmc.claims.base import NOT_DECIDABLE_SCALE
from gradmc.config import fill_defaults
from gradmc.experiments import rbm_relaxed as exp
from gradmc.experiments.rbm_relaxed.claims import NO_DEGRADE_MARGIN, QUOTES, best_settings, claims
from gradmc.experiments.rbm_relaxed.figure import figure
from gradmc.results import provenance, validate_metrics, write_parquet

SPEC = {"dims": [8, 16], "num_hidden": 6, "weight_variance": 0.05, "samplers": ["GWG", "R-MALA", "R-HMC", "D-SVGD"],
        "step_sizes": [0.1, 0.01], "learning_rates": [0.1], "temperatures": [1.0, 0.5], "num_leapfrog_steps": 5,
        "seeds": [0, 1], "num_chains": 20, "num_steps": 40, "record_every": 10,
        "reference": {"num_samples": 60, "num_steps": 30}}
CONFIG = fill_defaults({"device": "cpu", "rbm_relaxed": SPEC})

TINY = {"R-MALA": (("step_size", 0.1), ("temperature", 1.0)), "R-HMC": (("step_size", 0.1), ("temperature", 1.0)),
        "D-SVGD": (("learning_rate", 0.1), ("temperature", 1.0)), "GWG": ()}


def _tiny(sampler: str, seed: int = 0) -> exp.Shard:
    return exp.Shard(num_visible=12, sampler=sampler, hyper=TINY[sampler], seed=seed, num_hidden=6,
                     weight_variance=0.05, num_chains=30, num_steps=60, record_every=20, reference_samples=80,
                     reference_steps=30, num_leapfrog_steps=5, device="cpu")


def test_shards_expand_the_grid_uniquely():
    out = exp.shards(CONFIG, {})
    # per (D, seed): GWG 1 + R-MALA 2x2 + R-HMC 2x2 + D-SVGD 1x2 = 11 settings
    assert len(out) == 2 * 2 * 11
    keys = {(s.num_visible, s.sampler, s.setting, s.seed) for s in out}
    assert len(keys) == len(out)
    settings = {s.setting for s in out if s.sampler == "D-SVGD"}
    assert settings == {"learning_rate=0.1,temperature=1", "learning_rate=0.1,temperature=0.5"}
    assert {s.setting for s in out if s.sampler == "GWG"} == {"-"}
    with pytest.raises(ValueError, match="duplicate"):
        exp.shards(fill_defaults({"device": "cpu", "rbm_relaxed": {**SPEC, "seeds": [0, 0]}}), {})


def test_random_rbm_is_deterministic_with_normal_biases():
    a, b = exp.build_rbm(30, 100, 0.05, 3), exp.build_rbm(30, 100, 0.05, 3)
    assert all(np.array_equal(p.numpy(), q.numpy()) for p, q in zip(a.parameters(), b.parameters(), strict=True))
    assert abs(float(a.W.var()) - 0.05) < 0.01
    assert float(a.b.abs().mean()) > 0.3 and float(a.c.abs().mean()) > 0.3  # not the zero default
    assert not np.array_equal(a.W.numpy(), exp.build_rbm(30, 100, 0.05, 4).W.numpy())


@pytest.mark.parametrize("sampler", ["GWG", "R-MALA", "R-HMC", "D-SVGD"])
def test_run_returns_tidy_rows_and_improves(sampler):
    df = exp.run(_tiny(sampler))
    validate_metrics(df)
    mmd = df[(df["metric"] == "log_mmd") & (df["sampler"] == sampler)].sort_values("step")
    assert list(mmd["step"]) == [0, 20, 40, 60]
    assert np.isfinite(mmd["value"]).all()
    assert mmd["value"].iloc[-1] < mmd["value"].iloc[0]
    assert set(df["setting"][df["sampler"] == sampler]) == {exp.setting_label(dict(TINY[sampler]))}
    acc = df[df["metric"] == "acceptance_rate"]["value"]
    assert len(acc) == 1 and 0 < float(acc.iloc[0]) <= 1
    assert ("Target" in set(df["sampler"])) == (sampler == "GWG")


def test_run_is_deterministic():
    a, b = exp.run(_tiny("R-MALA", seed=1)), exp.run(_tiny("R-MALA", seed=1))
    pd.testing.assert_frame_equal(a.drop(columns="wall_time_s"), b.drop(columns="wall_time_s"))
    c = exp.run(_tiny("R-MALA", seed=2))
    assert not np.array_equal(a["value"].to_numpy(), c["value"].to_numpy())


def _synthetic(values: dict[tuple[str, int, str], list[float]], steps: int = 2000) -> pd.DataFrame:
    """Tidy frame with final log MMD ``values[(sampler, D, setting)]`` per seed, plus a step-0 row and Target."""
    rows = []
    for (sampler, dim, setting), per_seed in values.items():
        for seed, v in enumerate(per_seed):
            rows.append((sampler, dim, setting, seed, 0, "log_mmd", -1.0))
            rows.append((sampler, dim, setting, seed, steps, "log_mmd", v))
    num_seeds = max(len(v) for v in values.values())
    for dim in {k[1] for k in values}:
        for seed in range(num_seeds):
            rows.append(("Target", dim, "-", seed, steps, "log_mmd_target", -2.6))
    df = pd.DataFrame(rows, columns=["sampler", "num_visible", "setting", "seed", "step", "metric", "value"])
    df.insert(0, "target", [f"random_rbm_D{d}" for d in df["num_visible"]])
    df.insert(0, "experiment", "rbm_relaxed")
    df["chain"], df["energy_evals"], df["grad_evals"], df["wall_time_s"] = -1, 0, 0, 0.0
    return df.astype({"num_visible": "int64", "seed": "int64", "step": "int64", "chain": "int64",
                      "energy_evals": "int64", "grad_evals": "int64"})


GOOD = {("GWG", 25, "-"): [-2.5, -2.4], ("GWG", 1000, "-"): [-2.3, -2.2],
        ("R-MALA", 25, "a"): [-2.0, -2.2], ("R-MALA", 25, "b"): [-2.4, -2.3],
        ("R-MALA", 1000, "a"): [-1.0, -1.1], ("R-MALA", 1000, "b"): [-0.5, -0.6],
        ("R-HMC", 25, "a"): [-2.2, -2.2], ("R-HMC", 1000, "a"): [-1.2, -1.0],
        ("D-SVGD", 25, "a"): [-2.3, -2.1], ("D-SVGD", 1000, "a"): [-2.5, -2.5]}

#: Five seeds: R-MALA degrades clearly (PASS), D-SVGD improves and beats GWG (FAIL), R-HMC is noise (INCONCLUSIVE).
FIVE = {("GWG", 25, "-"): [-2.5, -2.4, -2.45, -2.5, -2.4], ("GWG", 1000, "-"): [-2.3, -2.2, -2.2, -2.35, -2.2],
        ("R-MALA", 25, "a"): [-2.0, -2.2, -2.1, -2.0, -2.1], ("R-MALA", 25, "b"): [-2.4, -2.3, -2.35, -2.3, -2.4],
        ("R-MALA", 1000, "a"): [-1.0, -1.1, -0.9, -1.0, -1.2], ("R-MALA", 1000, "b"): [-0.5, -0.6, -0.5, -0.4, -0.6],
        ("R-HMC", 25, "a"): [-2.2, -2.0, -2.4, -2.1, -2.3], ("R-HMC", 1000, "a"): [-2.4, -1.8, -2.0, -2.5, -2.2],
        ("D-SVGD", 25, "a"): [-2.3, -2.1, -2.2, -2.3, -2.2],
        ("D-SVGD", 1000, "a"): [-2.6, -2.65, -2.7, -2.6, -2.62]}


def test_best_setting_selection():
    best = best_settings(_synthetic(GOOD)).set_index(["sampler", "num_visible"])
    assert best.loc[("R-MALA", 25), "setting"] == "b"
    assert best.loc[("R-MALA", 1000), "setting"] == "a"
    assert math.isclose(best.loc[("R-MALA", 1000), "final_log_mmd"], -1.05)
    assert math.isclose(best.loc[("R-MALA", 1000), "sem"], np.std([-1.0, -1.1], ddof=1) / np.sqrt(2))
    assert best.loc[("R-MALA", 1000), "num_settings"] == 2
    assert "Target" not in best.index.get_level_values(0)


def test_claims_pass_fail_and_inconclusive():
    out = {c.claim: c for c in claims(_synthetic(FIVE))}
    status = {k: c.status for k, c in out.items()}
    assert status == {
        "GWG does not degrade with dimension": "FAIL",  # its gap to the flat target rises by 0.2 > the 0.12 margin
        "GWG degrades less with dimension than R-MALA": "PASS", "GWG degrades less with dimension than R-HMC":
        "INCONCLUSIVE", "GWG degrades less with dimension than D-SVGD": "FAIL",
        "R-MALA degrades with dimension": "PASS", "R-HMC degrades with dimension": "INCONCLUSIVE",
        "D-SVGD degrades with dimension": "FAIL", "GWG beats R-MALA at the largest D (best settings)": "PASS",
        "GWG beats R-HMC at the largest D (best settings)": "INCONCLUSIVE",
        "GWG beats D-SVGD at the largest D (best settings)": "FAIL"}
    # by hand: the t interval (t union bootstrap-t, tests/_t_bounds.py) over 5 seeds of GWG - R-MALA (best
    # setting "a") at D = 1000
    d = np.array(FIVE[("GWG", 1000, "-")]) - np.array(FIVE[("R-MALA", 1000, "a")])
    beats = out["GWG beats R-MALA at the largest D (best settings)"]
    iv = beats.interval
    assert iv.replicates == 5 and iv.unit == "seeds" and beats.direction == -1
    assert np.allclose([iv.effect, iv.low, iv.high], [d.mean(), *t_bounds(d)])
    # by hand: R-MALA's rise from its best setting at D = 25 ("b") to D = 1000 ("a"); Target is flat
    rise = np.array(FIVE[("R-MALA", 1000, "a")]) - np.array(FIVE[("R-MALA", 25, "b")])
    iv = out["R-MALA degrades with dimension"].interval
    assert math.isclose(iv.effect, rise.mean())
    assert np.allclose([iv.low, iv.high], t_bounds(rise))
    flat = out["GWG does not degrade with dimension"]
    assert flat.kind == "non-inferiority" and flat.tolerance == NO_DEGRADE_MARGIN and "0.115" in flat.margin_why
    gwg_rise = np.array(FIVE[("GWG", 1000, "-")]) - np.array(FIVE[("GWG", 25, "-")])
    assert math.isclose(flat.interval.effect, gwg_rise.mean()) and flat.direction == -1


def test_claims_quote_the_paper_and_name_their_tests():
    out = {c.claim: c for c in claims(_synthetic(FIVE))}
    for name, c in out.items():
        assert c.source == "GWG" and c.paper == "GWG Fig. 2"
        assert c.quote == QUOTES["not_competitive" if "beats" in name else "no_degrade"]
        assert c.kind == ("non-inferiority" if name.startswith("GWG does not") else "superiority")
        assert c.needs == tuple(n for n in c.needs if n.have is None)  # no config: unchecked


def _config(**over) -> dict:
    spec = {"num_steps": 2000, "dims": [25, 1000], "step_sizes": [0.1, 0.01, 0.001], "temperatures": [2.0, 1.0, 0.5],
            "learning_rates": [0.1, 0.01, 0.001], **over}
    return {"rbm_relaxed": spec}


def test_needs_come_from_the_config():
    """The paper's 2,000 steps, D up to 1000 (beyond 200 for "beats at the largest D") and its 3 x 3 grid for
    the relaxed samplers' claims; a FAIL the config can decide is kept."""
    df = _synthetic(FIVE)
    full = {c.claim: c.status for c in claims(df, _config())}
    assert full == {c.claim: c.status for c in claims(df)}  # the paper's sizes decide: same verdicts, FAILs kept
    short = {c.claim: c for c in claims(df, _config(num_steps=400))}
    assert {c.status for c in short.values()} == {NOT_DECIDABLE_SCALE}
    assert "sampler steps >= 2,000 (config rbm_relaxed.num_steps = 400: unmet" in short[
        "GWG does not degrade with dimension"].row()["note"]
    small = {c.claim: c.status for c in claims(df, _config(dims=[25, 400], learning_rates=[0.01]))}
    assert small["GWG beats R-MALA at the largest D (best settings)"] == "PASS"  # 400 > 200, full grid
    assert small["GWG beats D-SVGD at the largest D (best settings)"] == NOT_DECIDABLE_SCALE  # 1 learning rate
    assert small["R-MALA degrades with dimension"] == NOT_DECIDABLE_SCALE  # largest D 400 < 1000
    assert small["GWG does not degrade with dimension"] == NOT_DECIDABLE_SCALE
    assert claims(df, _config(dims=[25, 200]))[-1].status == NOT_DECIDABLE_SCALE  # D = 200 is not beyond 200


def test_claims_with_two_seeds_are_inconclusive():
    out = claims(_synthetic(GOOD))
    assert len(out) == 10 and all(c.status == "INCONCLUSIVE" for c in out)
    assert all("reduced sizes" in c.note and "2 seeds" in c.note for c in out)
    assert all(math.isinf(c.interval.low) for c in out)
    assert claims(_synthetic(GOOD).query("sampler != 'GWG'")) == []


def test_figure_writes_four_files(tmp_path):
    df = _synthetic(GOOD)
    path = write_parquet(df, tmp_path / "metrics.parquet", provenance(CONFIG), validate=True)
    paths = figure(path, tmp_path / "fig2", tmp_path / "tab2", config_name="test")
    assert sorted(p.name for p in paths) == ["fig2.pdf", "fig2.png", "tab2.csv", "tab2.md"]
    assert all(p.stat().st_size > 0 for p in paths)
    table = pd.read_csv(tmp_path / "tab2.csv")
    assert {"setting", "final_log_mmd", "sem"} <= set(table.columns) and "Target" in set(table["sampler"])
