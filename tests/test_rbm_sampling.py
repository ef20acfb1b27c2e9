"""GWG Fig. 3 experiment module (EXPERIMENTS.md A1) as a standard experiment: shards from the config part the
registry selects and the stage inputs, run(), and finalize() adding the Target row (exact: the reference's
stored log MMD)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from gradmc.config import fill_defaults
from gradmc.experiments import rbm_sampling as exp
from gradmc.experiments.rbm_model import save_rbm
from gradmc.experiments.rbm_reference import reference_stage
from gradmc.experiments.standard import collect, job_config
from gradmc.registry import standard
from gradmc.results import validate_metrics
from gradmc.targets import RBM

SPEC = {"num_hidden": 4, "train": {"epochs": 1, "batch_size": 10, "lr": 1e-3, "cd_steps": 1},
        "reference": {"num_samples": 20, "num_steps": 5}, "samplers": ["Gibbs-1", "GWG"], "seeds": [0, 1],
        "num_chains": 6, "num_steps": 12, "mmd_every": 4, "burn_in_fraction": 0.1}


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("rbm_sampling")
    g = torch.Generator().manual_seed(0)
    rbm = RBM(16, 4, weight_std=0.5, generator=g)
    save_rbm(rbm, folder / "rbm.pt", {})
    train = torch.bernoulli(torch.full((40, 16), 0.4), generator=g).numpy().astype(np.uint8)
    np.savez(folder / "mnist.npz", train=train)
    paths = {"model": str(folder / "rbm.pt"), "reference": str(folder / "reference.npz"),
             "data": str(folder / "mnist.npz")}
    reference_stage(fill_defaults({"device": "cpu", "rbm_sampling": SPEC}), paths["model"], paths["data"],
                    paths["reference"], progress=None)
    return paths


def test_the_job_reads_only_its_declared_keys():
    entry = standard("rbm_sampling")
    assert set(entry.inputs) == {"model", "reference", "data"}
    config = fill_defaults({"name": "t", "device": "cpu", "rbm_sampling": SPEC})
    part = job_config("rbm_sampling", config)
    assert set(part["rbm_sampling"]) == {"samplers", "seeds", "num_chains", "num_steps", "mmd_every",
                                         "burn_in_fraction"}  # not train, reference or num_hidden
    assert entry.message.format(**part["rbm_sampling"]) == "Sampling the RBM: ['Gibbs-1', 'GWG'] x seeds [0, 1] on Ray"


def test_shards_run_and_finalize(inputs):
    config = job_config("rbm_sampling", fill_defaults({"name": "t", "device": "cpu", "rbm_sampling": SPEC}))
    shards = exp.shards(config, inputs)
    assert [(s.sampler, s.seed) for s in shards] == [("Gibbs-1", 0), ("Gibbs-1", 1), ("GWG", 0), ("GWG", 1)]
    assert all(s.model_path == inputs["model"] and s.num_chains == 6 for s in shards)
    df = collect("rbm_sampling", [exp.run(s) for s in shards], inputs)
    validate_metrics(df)
    target = df[df["sampler"] == "Target"]
    with np.load(inputs["reference"]) as npz:
        stored = float(npz["target_log_mmd"])
    assert target["metric"].tolist() == ["log_mmd_target"] and target["value"].iloc[0] == stored
    mmd = df[(df["metric"] == "log_mmd") & (df["sampler"] == "GWG") & (df["seed"] == 0)]
    assert mmd["step"].tolist() == [0, 4, 8, 12]
    assert list(df.index) == list(df.sort_values(list(standard("rbm_sampling").sort_by), kind="stable").index)


def test_smoke_config_gives_the_shards():
    with open(Path(__file__).resolve().parents[1] / "config" / "smoke.yaml") as fh:
        smoke = yaml.safe_load(fh)
    part = job_config("rbm_sampling", fill_defaults(smoke))
    shards = exp.shards(part, {"model": "m.pt", "reference": "r.npz", "data": "d.npz"})
    assert len(shards) == len(smoke["rbm_sampling"]["samplers"]) * len(smoke["rbm_sampling"]["seeds"])
