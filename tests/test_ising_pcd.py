"""GWG Fig. 6 / Fig. 11 (EXPERIMENTS.md A5): data stage (exactness of the chromatic Gibbs sampler), PCD
experiment shards/run/collect at smoke size, figure and claims."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import yaml
from _t_bounds import t_bounds

from gradmc.config import ConfigError, fill_defaults, validate_config
from gradmc.core.exact import enumerate_binary, exact_distribution
from gradmc.errors import InputError
from gradmc.experiments import ising_pcd as exp
from gradmc.experiments import ising_pcd_data as data_stage
from gradmc.experiments.ising_pcd.claims import claims
from gradmc.experiments.ising_pcd.figure import figure
from gradmc.experiments.standard import collect
from gradmc.results import provenance, validate_metrics, write_parquet
from gradmc.samplers.discrete import chromatic_gibbs as chromatic
from gradmc.targets import DenseIsing, LatticeIsing


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    """Tiny tensors: one intra-op thread (two are several times slower on a loaded 2-core machine)."""
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


def _config(**over) -> dict:
    spec = {"data": {"lattice_sides": [4], "thetas": [0.25], "num_samples": 64, "site_updates": 320,
                     "erdos_renyi": {"num_nodes": 10, "avg_degree": 2.0, "weight_std": 0.5}},
            "samplers": ["Gibbs-1", "GWG"], "steps": [2, 4], "seeds": [0], "num_iterations": 20, "batch_size": 16,
            "buffer_size": 16, "lr": 0.01, "l1": 0.01, "log_every": 5}
    spec.update(over)
    return fill_defaults({"name": "test", "device": "cpu", "ising_pcd": spec})


@pytest.fixture(scope="module")
def data_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("ising_pcd") / "data.npz"
    data_stage.write_data(_config(), path, progress=None)
    return path


def test_model_specs_and_true_couplings():
    specs = data_stage.model_specs({"lattice_sides": [10, 25], "thetas": [-0.1, 0.25],
                                    "erdos_renyi": {"num_nodes": 200, "avg_degree": 4, "weight_std": 0.5}})
    assert [s.key for s in specs] == ["lattice10_theta-0.1", "lattice10_theta0.25", "lattice25_theta-0.1",
                                      "lattice25_theta0.25", "er200_deg4_std0.5"]
    assert [s.dim for s in specs] == [100, 100, 625, 625, 200]
    with pytest.raises(ValueError, match="twice"):
        data_stage.model_specs({"lattice_sides": [4, 4], "thetas": [0.1], "erdos_renyi": None})
    small = LatticeIsing(5, 0.3)
    assert torch.equal(data_stage.dense_couplings(small), small.couplings_dense())
    big = data_stage.dense_couplings(LatticeIsing(25, 0.25))
    assert torch.equal(big, big.T) and torch.allclose(big.sum(1), torch.full((625,), 1.0))  # 4 neighbours x 0.25
    er = data_stage.true_target(specs[-1])
    assert not er.bias.any() and er.weight_std == 0.5  # b = 0: not the authors' scale-as-bias bug


@pytest.mark.parametrize("side", [3, 4, 25])
def test_greedy_colouring_is_proper(side):
    J = data_stage.dense_couplings(LatticeIsing(side, 0.2))
    classes = chromatic.greedy_colouring(J)
    assert sorted(torch.cat(classes).tolist()) == list(range(side * side))
    for c in classes:
        assert not J[c][:, c].any()  # no coupling inside a class
    if side % 2 == 0:
        assert len(classes) == 2


def _class_kernel(target, classes, states):
    """Exact transition matrix (S, S) of one chromatic sweep over all enumerated states."""
    total = torch.eye(len(states), dtype=torch.float64)
    index = {tuple(s.tolist()): i for i, s in enumerate(states.long())}
    for sites in classes:
        T = torch.zeros(len(states), len(states), dtype=torch.float64)
        p1 = torch.sigmoid(chromatic.colour_logits(target, states, sites))  # (S, |c|)
        for pattern in enumerate_binary(len(sites), torch.float64):
            new = states.clone()
            new[:, sites] = pattern
            prob = torch.where(pattern.bool(), p1, 1 - p1).prod(1)
            cols = torch.tensor([index[tuple(s.tolist())] for s in new.long()])
            T[torch.arange(len(states)), cols] += prob
        total = total @ T
    return total


@pytest.mark.parametrize("kind", ["lattice", "dense"])
def test_chromatic_gibbs_leaves_the_exact_distribution_invariant(kind):
    if kind == "lattice":
        target = LatticeIsing(3, 0.15, bias=torch.linspace(-0.5, 0.5, 9)).double()
        J = data_stage.dense_couplings(LatticeIsing(3, 0.15))
    else:
        g = torch.Generator().manual_seed(0)
        W = torch.triu(torch.randn(7, 7, generator=g, dtype=torch.float64) * 0.5, 1)
        W[torch.rand(7, 7, generator=g) < 0.5] = 0.0
        target = DenseIsing(W + W.T, torch.randn(7, generator=g, dtype=torch.float64))
        J = target.J
    classes = chromatic.greedy_colouring(J)
    states, probs = exact_distribution(target, target.num_dims)
    T = _class_kernel(target, classes, states)
    assert torch.allclose(T.sum(1), torch.ones(len(states), dtype=torch.float64))
    assert torch.allclose(probs @ T, probs, atol=1e-12)
    # and the sampler itself: 10,000 chains from random bits (150 sweeps: the dense model is bimodal and mixes
    # slowly); E[x] per site within 5 standard errors
    gen = torch.Generator().manual_seed(1)
    x0 = torch.bernoulli(torch.full((10000, target.num_dims), 0.5, dtype=torch.float64), generator=gen)
    x = chromatic.chromatic_gibbs(target, x0, classes, 30 if kind == "lattice" else 150, gen)
    exact_mean = probs @ states
    se = (exact_mean * (1 - exact_mean) / 10000).sqrt()
    assert ((x.mean(0) - exact_mean).abs() < 5 * se).all()


def test_write_and_read_data(data_file):
    with np.load(data_file) as npz:
        manifest = json.loads(str(npz["manifest"]))
    assert [m["key"] for m in manifest["models"]] == ["lattice4_theta0.25", "er10_deg2_std0.5"]
    assert manifest["models"][0]["sweeps"] == 20 and manifest["models"][1]["sweeps"] == 32
    lat = data_stage.read_model(data_file, "lattice4_theta0.25")
    assert lat["x"].shape == (64, 16) and lat["x"].dtype == torch.float32
    assert set(lat["x"].unique().tolist()) <= {0.0, 1.0}
    assert torch.equal(lat["J"], data_stage.dense_couplings(LatticeIsing(4, 0.25)))
    er = data_stage.read_model(data_file, "er10_deg2_std0.5")
    assert torch.equal(er["J"], data_stage.true_target(data_stage.model_specs(_config()["ising_pcd"]["data"])[1]).J)
    with pytest.raises(InputError, match="lattice9_theta0.25"):
        data_stage.read_model(data_file, "lattice9_theta0.25")


def test_shards_enumerate_and_check(data_file):
    shards = exp.shards(_config(seeds=[0, 1]), {"data": str(data_file)})
    assert len(shards) == 2 * 2 * 2 * 2
    assert [s.cost for s in shards] == sorted((s.cost for s in shards), reverse=True)
    assert {(s.target, s.sampler, s.K, s.seed) for s in shards} == {
        (t, n, k, r) for t in ("lattice4_theta0.25", "er10_deg2_std0.5") for n in ("Gibbs-1", "GWG")
        for k in (2, 4) for r in (0, 1)}
    bigger = _config()
    bigger["ising_pcd"]["data"]["thetas"] = [0.25, 0.5]
    with pytest.raises(ValueError, match="lattice4_theta0.5"):
        exp.shards(bigger, {"data": str(data_file)})


def test_schema_rejects_unknown_samplers():
    with open(Path(__file__).resolve().parents[1] / "config" / "smoke.yaml") as fh:
        config = yaml.safe_load(fh)
    config["ising_pcd"]["samplers"] = ["HB-10-1"]
    with pytest.raises(ConfigError, match="ising_pcd.samplers"):
        validate_config(config)


@pytest.fixture(scope="module")
def results(data_file):
    return collect("ising_pcd", [exp.run(s) for s in exp.shards(_config(), {"data": str(data_file)})])


def test_run_rows_follow_the_schema(results, data_file):
    validate_metrics(results)
    assert set(results["metric"]) == {"log_rmse", "rmse", "final_log_rmse", "train_time_s"}
    curve = results[(results["metric"] == "log_rmse") & (results["sampler"] == "GWG") & (results["K"] == 4)
                    & (results["target"] == "lattice4_theta0.25")]
    assert curve["step"].tolist() == [0, 5, 10, 15, 20]
    J = data_stage.read_model(data_file, "lattice4_theta0.25")["J"]
    assert curve["value"].iloc[0] == pytest.approx(math.log(float(J.pow(2).mean().sqrt())))  # J = 0 at the start
    rmse = results[results["metric"] == "rmse"]["value"].to_numpy()
    assert np.allclose(np.log(rmse), results[results["metric"] == "log_rmse"]["value"].to_numpy())
    last = results[(results["metric"] == "log_rmse") & (results["step"] == 20)]["value"].to_numpy()
    assert np.array_equal(last, results[results["metric"] == "final_log_rmse"]["value"].to_numpy())
    # per iteration, init's evaluation of the buffer rows, then 1 per cached step: GWG's proposal, Gibbs-1's
    # flipped value (the learned dense model's incremental evaluations)
    assert set(results["sampler"]) == {"GWG", "Gibbs-1"}
    assert (results["energy_evals"] == results["step"] * (results["K"] + 1)).all()


def test_run_is_deterministic_with_or_without_checkpoints(data_file, tmp_path):
    shard = exp.shards(_config(), {"data": str(data_file)})[-1]
    with_ckpt = exp.shards(_config(checkpoint_dir=str(tmp_path), checkpoint_every=10), {"data": str(data_file)})[-1]
    a, b = exp.run(shard), exp.run(with_ckpt)
    assert not list(tmp_path.iterdir())  # a finished shard removes its checkpoint
    keep = a["metric"] != "train_time_s"
    pd.testing.assert_frame_equal(a[keep].drop(columns="wall_time_s"), b[keep].drop(columns="wall_time_s"))


def test_figure_and_claims_on_results(results, tmp_path):
    metrics = write_parquet(results, tmp_path / "metrics.parquet", provenance({"name": "test"}), validate=True)
    paths = figure(metrics, tmp_path / "fig" / "fig6", tmp_path / "tab" / "fig6", config_name="test")
    assert sorted(p.name for p in paths) == ["fig6.csv", "fig6.md", "fig6.pdf", "fig6.png", "fig6_curves.csv",
                                             "fig6_curves.md", "fig6_vs_steps.pdf", "fig6_vs_steps.png"]
    table = pd.read_csv(tmp_path / "tab" / "fig6.csv")
    assert len(table) == 2 * 2 * 2 and (table["iterations"] == 20).all()
    out = claims(results)
    # 2 models x (K = 2, K = 4, cheap, training time at K = 2 and K = 4); 1 seed
    assert len(out) == 10 and all(c.status == "INCONCLUSIVE" for c in out)
    assert "GWG K = 2" in out[0].measured and out[0].interval.replicates == 1
    assert sum("less training time" in c.claim for c in out) == 4


MODELS = (("lattice25_theta0.25", "lattice", 25, 0.25), ("er200", "er", 0, math.nan))


def _synthetic(gap: float, ks=(5, 25), iterations: int = 10000, seeds=(0, 1, 2, 3, 4), models=MODELS,
               times: dict | None = None) -> pd.DataFrame:
    """final_log_rmse rows: GWG = Gibbs-1 - gap + a seed-dependent wiggle (so paired differences vary). With
    ``times`` (sampler -> (sampler seconds, total PCD seconds) of a run), also log_rmse curves at iterations 0,
    half and all (from -1 linearly to the final value; cumulative sampler time in wall_time_s, 0.1 s more per
    seed) and train_time_s rows."""
    rows = []
    for target, model, side, theta in models:
        for name in ("Gibbs-1", "GWG"):
            for k in ks:
                for seed in seeds:
                    value = -3.0 - 0.1 * k / 5 + 0.01 * seed - (gap + 0.004 * seed if name == "GWG" else 0.0)
                    rows.append(("ising_pcd", target, name, model, 625, side, theta, k, seed, -1, iterations,
                                 "final_log_rmse", value, iterations * k * 2, 0, 1.0))
                    if times is None:
                        continue
                    sampler_s, total_s = (v + 0.1 * seed for v in times[name])
                    for frac in (0.0, 0.5, 1.0):
                        rows.append(("ising_pcd", target, name, model, 625, side, theta, k, seed, -1,
                                     int(frac * iterations), "log_rmse", -1.0 + frac * (value + 1.0), 0, 0,
                                     frac * sampler_s))
                    rows.append(("ising_pcd", target, name, model, 625, side, theta, k, seed, -1, iterations,
                                 "train_time_s", total_s, 0, 0, sampler_s))
    return pd.DataFrame(rows, columns=["experiment", "target", "sampler", "model", "dim", "side", "theta", "K", "seed",
                                       "chain", "step", "metric", "value", "energy_evals", "grad_evals",
                                       "wall_time_s"])


def test_claims_pass_fail_inconclusive():
    good = claims(_synthetic(0.5))
    assert len(good) == 6 and [c.status for c in good] == ["PASS"] * 6  # per model: K = 5, K = 25, K_min vs K_max
    lattice = [c for c in good if "25x25 lattice, theta = 0.25" in c.claim]
    assert [c.paper for c in lattice] == ["GWG Fig. 11", "GWG Fig. 11", "GWG Fig. 6"]
    assert "GWG K = 5 -3.588 vs Gibbs-1 K = 5 -3.080" in lattice[0].measured
    # by hand: differences GWG - Gibbs-1 per seed = -(0.5 + 0.004 * seed), the t interval (t union bootstrap-t)
    d = -(0.5 + 0.004 * np.arange(5))
    iv = lattice[0].interval
    assert iv.effect == pytest.approx(d.mean()) and (iv.low, iv.high) == pytest.approx(t_bounds(d))
    assert iv.replicates == 5 and iv.unit == "seeds"
    # K_min GWG vs K_max Gibbs-1: -3.1 - gap - wiggle vs -3.5: difference 0.4 - 0.5 - wiggle
    assert lattice[2].interval.effect == pytest.approx(0.4 + d.mean())
    bad = claims(_synthetic(-0.5, iterations=500))
    assert [c.status for c in bad[:2]] == ["FAIL", "FAIL"] and "only 500 PCD iterations" in bad[0].note
    few = claims(_synthetic(0.5, seeds=(0, 1)))
    assert {c.status for c in few} == {"INCONCLUSIVE"} and "needs at least 5 seeds" in few[0].row()["note"]
    paper = claims(_synthetic(-0.5, ks=(5, 10, 25, 50, 100)))
    assert all("reduced sizes" not in c.note for c in paper)  # paper sizes: no excuse
    assert claims(_synthetic(0.5).query("sampler == 'GWG'")) == []


def _config_dict(device: str = "cpu", iterations: int = 10_000, seeds=(0, 1, 2, 3, 4), steps=(5, 10, 25, 50, 100),
                 sides=(10, 25, 40)) -> dict:
    return {"device": device, "ising_pcd": {"num_iterations": iterations, "seeds": list(seeds), "steps": list(steps),
                                            "data": {"lattice_sides": list(sides)}}}


def test_training_time_claim_from_the_curves():
    """Claim 3: log(time GWG needs to reach Gibbs-1's final log RMSE / Gibbs-1's total time), per seed: GWG
    reaches it at its last iteration, after its sampler time + PCD overhead (5 + 2 s, plus 0.1 s per seed both)
    against Gibbs-1's 12 s; a GWG run that never reaches it is censored (upper bound +inf): FAIL when even its
    full time exceeds Gibbs-1's, INCONCLUSIVE otherwise."""
    from gradmc.experiments.ising_pcd.claims import QUOTES

    fast = claims(_synthetic(0.5, times={"Gibbs-1": (10.0, 12.0), "GWG": (5.0, 7.0)}), _config_dict())
    speed = [c for c in fast if "less training time" in c.claim]
    assert len(speed) == 4 and all(c.paper == "GWG Fig. 6" and c.quote == QUOTES["faster"] for c in speed)
    seeds = np.arange(5)
    expected = np.log((7.0 + 0.1 * seeds) / (12.0 + 0.1 * seeds))
    assert speed[0].interval.effect == pytest.approx(expected.mean()) and speed[0].status == "PASS"
    slow = claims(_synthetic(-0.5, times={"Gibbs-1": (10.0, 12.0), "GWG": (15.0, 20.0)}), _config_dict())
    speed = [c for c in slow if "less training time" in c.claim]
    assert {c.status for c in speed} == {"FAIL"} and speed[0].interval.high == math.inf
    assert "censored" in speed[0].interval.method
    never = claims(_synthetic(-0.5, times={"Gibbs-1": (10.0, 12.0), "GWG": (5.0, 7.0)}), _config_dict())
    assert {c.status for c in never if "less training time" in c.claim} == {"INCONCLUSIVE"}


def test_fig6_claims_need_the_papers_settings():
    """Fig. 6's claims are made on the side-25 lattice at theta 0.25 and the ER graph only, and need the paper's
    K grid, a side >= 25, 10,000 iterations and 5 seeds; quick's 10x10 lattice, K = 5 and 25 and 250 iterations
    are NOT DECIDABLE AT THIS SCALE; a FAIL under the paper's settings stays a FAIL."""
    from gradmc.claims.base import NOT_DECIDABLE_SCALE
    from gradmc.experiments.ising_pcd.claims import QUOTES

    models = MODELS + (("lattice25_theta0.1", "lattice", 25, 0.1), ("lattice10_theta0.25", "lattice", 10, 0.25))
    ks = (5, 10, 25, 50, 100)
    times = {"Gibbs-1": (10.0, 12.0), "GWG": (5.0, 7.0)}
    out = claims(_synthetic(-0.5, ks=ks, models=models, times=times), _config_dict())
    fig6 = [c for c in out if c.paper == "GWG Fig. 6"]
    assert {c.claim.split("(")[-1] for c in fig6} == {"25x25 lattice, theta = 0.25)", "Erdos-Renyi graph, D = 625)"}
    assert len(fig6) == 2 * (1 + len(ks)) and len(out) - len(fig6) == len(models) * len(ks)
    cost = [c for c in fig6 if "fewest" in c.claim]
    assert {c.quote for c in cost} == {QUOTES["fig6_caption"]} and {c.status for c in cost} == {"FAIL"}
    assert {c.quote for c in out if c.paper == "GWG Fig. 11"} == {QUOTES["fig11"]}
    assert all(c.origin == "GWG" and c.kind == "superiority" for c in out)
    quick = _config_dict("cpu", 500, steps=(5, 25), sides=(10,))
    small = claims(_synthetic(0.5, ks=(5, 25), models=(("lattice10_theta0.25", "lattice", 10, 0.25),) + MODELS[1:],
                              times=times), quick)
    assert {c.status for c in small} == {NOT_DECIDABLE_SCALE}
    assert "measured on device cpu" in next(c for c in small if "less training time" in c.claim).note
    lattice = next(c for c in small if "fewest" in c.claim and "lattice" in c.claim).row()["needs"]
    assert "largest lattice side >= 25 (config ising_pcd.data.lattice_sides = 10: unmet" in lattice
    assert "of the paper's K {5, 10, 25, 50, 100} run >= 5 (config ising_pcd.steps = 2: unmet" in lattice
    assert "PCD training iterations >= 10,000 (config ising_pcd.num_iterations = 500: unmet" in lattice
    er = next(c for c in small if "fewest" in c.claim and "Erdos" in c.claim).row()["needs"]
    assert "lattice side" not in er and "ising_pcd.steps = 2: unmet" in er
    one_seed = claims(_synthetic(0.5, ks=ks), _config_dict(seeds=(0,)))
    assert {c.status for c in one_seed} == {NOT_DECIDABLE_SCALE}
