"""The deep-EBM training samplers (gradmc.specs.ebm_samplers): the feasibility rule and its errors, tiny
PCD runs with DMALA (binary and categorical, equal wall-clock with GWG) and ACS (binary, its cycle over training
iterations; why the chain-level ACS cannot train is checked against its real behaviour in a PCD iteration), and
the later samplers in Table 2, the claims and the plan."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from _ebm_data import prepared_images

from gradmc.config import load_config, validate_config
from gradmc.errors import ConfigError, InputError
from gradmc.specs.ebm_samplers import SAMPLERS, feasible

REPO = Path(__file__).resolve().parents[1]
SPEC = {"channels": 4, "num_blocks": 2, "num_strided": 2, "embed_dim": 2, "base": "data"}


@pytest.mark.parametrize("data", [2, "static_mnist", "dynamic_mnist", "omniglot", "caltech"])
def test_every_training_sampler_trains_binary_data(data):
    assert [feasible(s, data) for s in SAMPLERS] == [True, True, True, True]
    assert SAMPLERS == ("GWG", "Gibbs-1", "DMALA", "ACS")


@pytest.mark.parametrize("data", [256, 4, "frey", "histopathology"])
def test_categorical_data_train_with_gwg_and_dmala_but_not_gibbs_or_acs(data):
    assert feasible("GWG", data) and feasible("DMALA", data)
    assert feasible("Gibbs-1", data) is False  # infeasible, reported "not run" as in the paper
    assert feasible("ACS", data) is False  # no categorical form here


@pytest.mark.parametrize(("sampler", "data", "expected"), [
    ("Foo", 2, ["unknown sampler 'Foo'", "GWG, Gibbs-1, DMALA, ACS"]),
    ("DULA", "static_mnist", ["unknown sampler 'DULA'", "GWG, Gibbs-1, DMALA, ACS"]),
    ("GWG", "frei", ["unknown data set 'frei'", "static_mnist", "histopathology"]),
    ("GWG", 1, ["levels must be an int >= 2", "got 1"]),
    ("DMALA", True, ["levels must be an int >= 2", "got True"]),
])
def test_feasibility_errors_are_named(sampler, data, expected):
    with pytest.raises(InputError) as err:
        feasible(sampler, data)
    for fragment in expected:
        assert fragment in str(err.value)


def test_the_chain_level_acs_in_a_pcd_iteration_never_leaves_its_burn_in():
    """Why PCD trains with ACSOverIterations and not the chain-level ACS, as ACS behaves: PCD restarts the
    sampler (init) every iteration and runs num_steps steps (paper 40, under ACS's 200-step burn-in), so the
    state would still be tuning at the end, and a second iteration's init starts the tuning over."""
    from gradmc.samplers.discrete.registry import make_sampler
    acs = make_sampler("ACS")
    b = torch.linspace(-1.0, 1.0, 6, dtype=torch.float64)
    g = torch.Generator().manual_seed(0)
    for _iteration in range(2):
        x = torch.bernoulli(torch.full((8, 6), 0.5, dtype=torch.float64), generator=g)
        state = acs.init(x, lambda z: z @ b)
        for _ in range(40):
            state, _info = acs.step(state, lambda z: z @ b, g)
        assert state.num_steps == 40 and not state.frozen and state.tuning is not None
    assert acs.burn_in == 200 > 40


def _config(iterations=3):
    return {"device": "cpu", "ebm": {
        "model": SPEC,
        "train": {"iterations": iterations, "eval_every": 0, "num_steps": 2, "batch_size": 8, "buffer_size": 16,
                  "buffer_sizes": {}, "lr": 1e-3, "warmup": 2, "ema_decay": 0.9, "energy_l2": 0.01,
                  "checkpoint_every": 0, "log_every": 1},
        "ais": {"num_chains": 4, "validation_examples": 10, "validation_intermediate": 2, "num_intermediate": 3,
                "test_examples": 20, "convergence": [3], "bound_search_steps": 0, "bound_search_chains": 4,
                "bound_search_temperature": 0.1}}}


@pytest.mark.parametrize(("levels", "name", "kernel"), [(2, "static_mnist", "DMALA("),
                                                        (4, "frey", "DMALACategorical(")])
def test_a_tiny_training_run_with_dmala_and_its_ais(tmp_path, levels, name, kernel):
    from gradmc.experiments.ebm import ais_stage, read_checkpoint, train_stage
    path = prepared_images(tmp_path, levels, name, shape=(6, 5) if levels == 2 else (4, 3))
    out = tmp_path / "model.pt"
    summary = train_stage(_config(), name, "DMALA", str(path), str(out), progress=None)
    state = read_checkpoint(out)
    assert summary["iterations"] == state["iteration"] == 3
    assert state["settings"]["sampler"].startswith(kernel) and "step_size=0.2" in state["settings"]["sampler"]
    assert all(0.0 <= h["acceptance_rate"] <= 1.0 for h in state["history"])
    df = ais_stage(_config(), name, "DMALA", str(out), str(path), progress=None)
    assert set(df["sampler"]) == {"DMALA"} and np.isfinite(df[df["metric"] == "test_log_likelihood"]["value"]).all()


def test_dmala_gets_the_gwg_runs_training_time_with_equal_time(tmp_path):
    from gradmc.experiments.ebm import read_checkpoint, train_stage
    path = prepared_images(tmp_path)
    gwg, dmala = tmp_path / "gwg.pt", tmp_path / "dmala.pt"
    train_stage(_config(iterations=4), "static_mnist", "GWG", str(path), str(gwg), progress=None)
    budget = read_checkpoint(gwg)["seconds"]
    train_stage(_config(iterations=4), "static_mnist", "DMALA", str(path), str(dmala), budget_from=str(gwg),
                progress=None)
    state = read_checkpoint(dmala)
    # the run stops on time (cap 100 x iterations), not at the configured 4 iterations
    assert state["seconds"] >= budget and (state["iteration"] == 400 or state["seconds"] - budget
                                           <= state["history"][-1]["seconds"] - state["history"][-2]["seconds"])


def test_equal_time_run_trains_with_the_budget_runs_thread_count(tmp_path):
    """Equal wall-clock means equal compute: a GWG run on 1 thread hands its seconds to a run that then trains on
    1 thread too, whatever this process chose; the count is recorded in the checkpoint."""
    import torch

    from gradmc.experiments.ebm import read_checkpoint, train_stage
    path = prepared_images(tmp_path)
    gwg, dmala = tmp_path / "gwg.pt", tmp_path / "dmala.pt"
    before = torch.get_num_threads()
    lines = []
    try:
        torch.set_num_threads(1)
        train_stage(_config(iterations=2), "static_mnist", "GWG", str(path), str(gwg), progress=None)
        torch.set_num_threads(2)
        train_stage(_config(iterations=2), "static_mnist", "DMALA", str(path), str(dmala), budget_from=str(gwg),
                    progress=lines.append)
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)
    assert read_checkpoint(gwg)["threads"] == read_checkpoint(dmala)["threads"] == 1
    assert any("training on 1 intra-op thread(s) (this process chose 2)" in line for line in lines), lines


def test_a_tiny_training_run_with_acs_and_its_ais(tmp_path):
    """ACS trains through ACSOverIterations (its schedule and resume: tests/test_acs_pcd.py): the range tuned
    at iteration 0 is in the checkpoint, inside ACS's initial bounds."""
    from gradmc.experiments.ebm import ais_stage, read_checkpoint, train_stage
    from gradmc.samplers.discrete.acs import ACS
    path = prepared_images(tmp_path)
    out = tmp_path / "model.pt"
    train_stage(_config(iterations=4), "static_mnist", "ACS", str(path), str(out), progress=None)
    state = read_checkpoint(out)
    assert state["settings"]["sampler"] == f"ACSOverIterations(acs={ACS()!r}, retune_every=1)"
    tuned = state["sampler_state"]
    assert tuned["tunings"] == 1 and ACS().alpha_min <= tuned["alpha_min"] <= tuned["alpha_max"] <= ACS().alpha_max
    assert state["iteration"] == 4 and all(0.0 <= h["acceptance_rate"] <= 1.0 for h in state["history"])
    df = ais_stage(_config(iterations=4), "static_mnist", "ACS", str(out), str(path), progress=None)
    assert set(df["sampler"]) == {"ACS"} and np.isfinite(df[df["metric"] == "test_log_likelihood"]["value"]).all()


@pytest.mark.parametrize(("sampler", "levels", "name", "expected"), [
    ("ACS", 4, "frey", "ACS on 4-level data is infeasible (ACS has no categorical form here)"),
    ("Gibbs-1", 4, "frey", "Gibbs-1 on 4-level data is infeasible (4 evaluations per pixel"),
])
def test_train_stage_refuses_what_cannot_train_before_writing_anything(tmp_path, sampler, levels, name, expected):
    from gradmc.experiments.ebm import train_stage
    path = prepared_images(tmp_path, levels, name, shape=(6, 5) if levels == 2 else (4, 3))
    with pytest.raises(InputError, match=re.escape(expected)):
        train_stage(_config(), name, sampler, str(path), str(tmp_path / "model.pt"), progress=None)
    assert list(tmp_path.glob("model*")) == []


def test_config_accepts_dmala_and_acs_and_refuses_other_samplers():
    config = copy.deepcopy(load_config(REPO / "config" / "smoke.yaml"))
    config["ebm"]["samplers"] = ["GWG", "Gibbs-1", "DMALA", "ACS"]
    validate_config(config)
    config["ebm"]["samplers"] = ["GWG", "DULA"]
    with pytest.raises(ConfigError, match="ebm.samplers"):
        validate_config(config)


def test_config_refuses_equal_time_without_the_gwg_run_it_times_against():
    config = copy.deepcopy(load_config(REPO / "config" / "smoke.yaml"))
    config["ebm"].update(samplers=["DMALA"], equal_time=True)
    with pytest.raises(ConfigError, match="GWG is not listed"):
        validate_config(config)
    config["ebm"]["equal_time"] = False
    validate_config(config)


def test_the_workflow_trains_the_feasible_runs():
    """workflow/rules/ebm.smk's runs (gradmc plan reads them from Snakemake's DAG: tests/test_plan.py)."""
    from gradmc.specs.ebm_samplers import feasible

    runs = [(d, s) for d in ("static_mnist", "frey") for s in ("GWG", "Gibbs-1", "DMALA", "ACS") if feasible(s, d)]
    assert runs == [("static_mnist", "GWG"), ("static_mnist", "Gibbs-1"), ("static_mnist", "DMALA"),
                    ("static_mnist", "ACS"), ("frey", "GWG"), ("frey", "DMALA")]
    with pytest.raises(InputError, match="unknown sampler 'DULA'"):
        feasible("DULA", "static_mnist")


def _metrics(values: dict) -> pd.DataFrame:
    rows = [(s, m, v) for s, (ll, se) in values.items()
            for m, v in (("test_log_likelihood", ll), ("log_z_se", se), ("ais_weights_ess", 50.0),
                         ("train_iterations", 50_000))]
    return pd.DataFrame(rows, columns=["sampler", "metric", "value"]).assign(
        experiment="ebm", target="static_mnist", seed=0, chain=0, step=300)


def test_dmala_paper_value_claim_only_with_a_dmala_run():
    from gradmc.experiments.ebm.claims import TOLERANCE_NATS, claims
    without = claims(_metrics({"GWG": (-81.0, 0.3), "Gibbs-1": (-118.0, 0.4)}))
    assert not any("DMALA" in c.claim for c in without)
    out = claims(_metrics({"GWG": (-81.0, 0.3), "Gibbs-1": (-118.0, 0.4), "DMALA": (-90.0, 0.5)}))
    (c,) = [c for c in out if "DMALA" in c.claim]
    assert c.claim == "our EBM(DMALA) test log-likelihood on static_mnist agrees with the paper's -79.46 nats"
    assert c.paper == c.paper_source == "DMALA paper (Zhang et al. 2022)" and c.paper_value == -79.46
    assert c.tolerance == TOLERANCE_NATS == 5.0 and c.direction == 0
    assert c.source == "other" and c.kind == "agreement" and "not stored here" in c.quote  # a later paper's claim
    assert c.interval.effect == pytest.approx(-90.0 + 79.46) and c.status == "FAIL"  # 10.5 nats below, SE 0.5
    near = [c for c in claims(_metrics({"DMALA": (-80.0, 0.5)})) if "DMALA" in c.claim]
    assert [c.status for c in near] == ["PASS"]
    # the GWG claims are unchanged by the extra run
    assert {c.claim for c in without} <= {c.claim for c in out}
    assert not [c for c in claims(_metrics({"DMALA": (-80.0, 0.5)}).assign(target="omniglot")) if c.direction == 0]


def test_table2_lists_dmala_with_its_papers_number():
    from gradmc.experiments.ebm.figure import table
    tab = table(_metrics({"GWG": (-81.0, 0.3), "DMALA": (-85.0, 0.5)}))
    rows = tab[tab["model"] == "EBM (DMALA)"][["source", "value"]].values.tolist()
    assert rows == [["this run", -85.0], ["paper (Zhang et al. 2022)", -79.46]]
    assert tab[tab["model"] == "EBM (GWG)"]["source"].tolist() == ["this run", "paper"]


def test_new_samplers_have_their_own_colours():
    from gradmc.figures.style import _COLORS, UNASSIGNED_COLOR, sampler_color
    colours = [sampler_color(s) for s in ("DMALA", "ACS")]
    assert UNASSIGNED_COLOR not in colours and len(set(_COLORS.values())) == len(_COLORS)
