"""Sampler cost timing: samplers timed in alternation, each process a replicate."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from gradmc.evaluation.timing import time_interleaved
from gradmc.experiments.rbm_model import save_rbm
from gradmc.experiments.sampler_cost import run_cost
from gradmc.targets.rbm import RBM


class _Counting:
    """A kernel that records the global order of its timed steps."""

    calls: list = []

    def __init__(self, name):
        self.name = name

    def init(self, x, log_prob):
        return x

    def step(self, state, log_prob, generator):
        _Counting.calls.append(self.name)
        info = type("Info", (), {"energy_evals": 1, "grad_evals": 0, "acceptance_prob": torch.ones(2)})()
        return state, info


def test_time_interleaved_rotates_the_order_each_run():
    _Counting.calls = []
    out = time_interleaved({n: _Counting(n) for n in "abc"}, None, torch.zeros(2, 3), torch.Generator(), steps=2,
                           repeats=4, warmup=1)
    timed = _Counting.calls[3:]  # after one warm-up step each
    blocks = ["".join(timed[i:i + 2 * 3:2]) for i in range(0, len(timed), 6)]
    assert blocks == ["abc", "bca", "cab", "abc"]
    assert all(len(v["ms_per_step_runs"]) == 4 and v["acceptance_rate"] == 1.0 for v in out.values())
    with pytest.raises(ValueError, match="repeats >= 1"):
        time_interleaved({"a": _Counting("a")}, None, torch.zeros(2, 3), torch.Generator(), repeats=0)


def test_run_cost_times_each_process_separately(tmp_path):
    torch.manual_seed(0)
    save_rbm(RBM(16, 8), tmp_path / "rbm.pt", {})
    np.savez(tmp_path / "data.npz", train=(np.random.default_rng(0).random((20, 16)) < 0.5).astype(np.uint8))
    config = {"device": "cpu", "sampler_cost": {"samplers": ["Gibbs-1", "GWG"], "rbm_chains": 4,
                                                "ising": {"side": 3, "theta": 0.25, "chains": 4}, "steps": 2,
                                                "repeats": 3, "processes": 2, "threads": 1}}
    df = run_cost(config, tmp_path / "rbm.pt", tmp_path / "data.npz", progress=None)
    runs = df[df["metric"] == "ms_per_step_run"]
    assert set(runs["target"]) == {"mnist_rbm", "ising_3x3"} and sorted(runs["seed"].unique()) == [0, 1]
    assert runs.groupby(["target", "sampler", "seed"]).size().eq(3).all() and (runs["value"] > 0).all()
    rel = df[df["metric"] == "relative_cost"].set_index(["target", "sampler"])["value"]
    assert rel[("mnist_rbm", "Gibbs-1")] == 1.0
    med = runs.groupby(["target", "sampler", "seed"])["value"].median().groupby(["target", "sampler"]).median()
    ms = df[df["metric"] == "ms_per_step"].set_index(["target", "sampler"])["value"]
    pd.testing.assert_series_equal(ms.sort_index(), med.sort_index(), check_names=False)
