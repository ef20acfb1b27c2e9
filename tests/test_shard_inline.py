"""The inline shard executor: one shard after another in this process, chosen by default for one worker on
this machine; the same results, progress lines and error messages as Ray's executors, and no Ray started."""

from __future__ import annotations

import os
import re

import pandas as pd
import pytest
import ray
import torch

from gradmc.distributed import ray_runner, run_shards
from gradmc.distributed.ray_runner import DEFAULT_EXECUTOR, EXECUTOR_ENV_VAR, INLINE, resolve_executor
from gradmc.distributed.selftest import ToyShard, toy_shard, worker_info
from gradmc.errors import InputError

SHARDS = [ToyShard(seed=i) for i in range(4)]


@pytest.fixture(autouse=True)
def no_ray_in_sight(monkeypatch):
    """No executor named in the environment, no cluster addressed; Ray is not running in this process."""
    monkeypatch.delenv(EXECUTOR_ENV_VAR, raising=False)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setattr(ray, "is_initialized", lambda: False)


def test_one_worker_alone_runs_inline_anything_else_on_ray(monkeypatch):
    assert resolve_executor(num_workers=1) == INLINE
    assert resolve_executor(num_workers=None) == DEFAULT_EXECUTOR  # all the cores Ray sees
    assert resolve_executor(num_workers=2) == DEFAULT_EXECUTOR
    assert resolve_executor(num_workers=1, num_gpus_per_shard=0.5) == DEFAULT_EXECUTOR
    assert resolve_executor("actors", num_workers=1) == "actors"
    monkeypatch.setenv("RAY_ADDRESS", "local")
    assert resolve_executor(num_workers=1) == INLINE
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.1:6379")
    assert resolve_executor(num_workers=1) == DEFAULT_EXECUTOR
    monkeypatch.delenv("RAY_ADDRESS")
    monkeypatch.setattr(ray, "is_initialized", lambda: True)
    assert resolve_executor(num_workers=1) == DEFAULT_EXECUTOR  # a running Ray costs nothing to use
    monkeypatch.setenv(EXECUTOR_ENV_VAR, "tasks")
    assert resolve_executor(num_workers=1) == "tasks"
    monkeypatch.setenv(EXECUTOR_ENV_VAR, "inline")
    assert resolve_executor(num_workers=4) == INLINE
    monkeypatch.setenv(EXECUTOR_ENV_VAR, "threads")
    with pytest.raises(InputError, match=r"GRADMC_SHARD_EXECUTOR='threads' is not one of tasks, actors, inline"):
        resolve_executor(num_workers=1)


class _Started(Exception):
    """Raised by a stand-in ensure_ray once it has recorded what it was asked for."""


@pytest.mark.parametrize(("workers", "threads", "cpus"), [(1, 1, 1), (2, 2, 4), (None, 1, None)])
def test_a_private_instance_started_for_ray_shards_gets_the_workers_cores(monkeypatch, workers, threads, cpus):
    asked: list[int | None] = []

    def record(num_cpus=None, **_):
        asked.append(num_cpus)
        raise _Started

    monkeypatch.setattr(ray_runner, "ensure_ray", record)
    with pytest.raises(_Started):
        run_shards(toy_shard, SHARDS, num_workers=workers, threads_per_worker=threads, executor="tasks",
                   progress=None)
    assert asked == [cpus]  # None: all the cores Ray detects


def test_inline_results_equal_the_shards_own_and_start_no_ray(monkeypatch):
    monkeypatch.setattr(ray_runner, "ensure_ray", lambda *a, **k: pytest.fail("inline started Ray"))
    seen: list[int] = []
    got = run_shards(toy_shard, SHARDS, num_workers=1, progress=None, on_result=lambda i, r: seen.append(i))
    assert seen == [0, 1, 2, 3]
    for result, shard in zip(got, SHARDS, strict=True):
        pd.testing.assert_frame_equal(result, toy_shard(shard))
    (info,) = run_shards(worker_info, ["a"], num_workers=1, progress=None)
    assert info["pid"] == os.getpid() and info["node_id"] is None


def test_inline_sets_the_workers_threads_and_restores_the_callers():
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        (info,) = run_shards(worker_info, ["a"], num_workers=1, threads_per_worker=1, progress=None)
        assert info["torch_threads"] == 1 and info["thread_choice"]["requested"] == 1
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_inline_progress_lines_match_rays():
    lines: list[str] = []
    run_shards(toy_shard, SHARDS, num_workers=1, progress=lines.append, desc="toy")
    assert lines[0] == "[toy] 4 shards, 1 at a time in this process"
    shard_lines = [line for line in lines[1:] if " finished in " in line]
    assert [line.split(" (")[0] for line in shard_lines] == [f"[toy] shard {i}" for i in range(4)]
    assert all(re.fullmatch(r"\[toy\] shard \d \(.*seed=\d+.*\) finished in \d+\.\d+s", line) for line in shard_lines)
    counts = [line.split(" done")[0] for line in lines[1:] if line not in shard_lines]
    assert counts == [f"[toy] {i}/4" for i in range(1, 5)]


def test_inline_errors_name_the_shard():
    shards = [ToyShard(seed=1), ToyShard(seed=7, fail=True), ToyShard(seed=2)]
    seen: list[int] = []
    with pytest.raises(RuntimeError) as info:
        run_shards(toy_shard, shards, num_workers=1, progress=None, on_result=lambda i, r: seen.append(i))
    message = str(info.value)
    assert message.startswith("shard 1 ToyShard(seed=7") and "fail=True" in message
    assert "failed in toy_shard: ValueError: toy failure in shard seed=7" in message
    assert isinstance(info.value.__cause__, ValueError) and seen == [0]  # the shard after it never ran
    with pytest.raises(InputError, match=r"^shard 0 \(seed=5, .*\): ") as user:
        run_shards(toy_shard, [ToyShard(seed=5, user_error=True)], num_workers=1, progress=None)
    assert isinstance(user.value.__cause__, InputError)


def test_a_one_worker_sweep_runs_inline(tmp_path, monkeypatch):
    """run_experiment with one worker: no Ray, and the rows of the shards run by hand."""
    import gradmc.distributed as distributed
    from gradmc.config import fill_defaults
    from gradmc.experiments import ising_sampling
    from gradmc.experiments.standard import collect, run_experiment

    monkeypatch.setattr(distributed, "ensure_ray", lambda *a, **k: pytest.fail("inline started Ray"))
    monkeypatch.setattr(ray_runner, "ensure_ray", lambda *a, **k: pytest.fail("inline started Ray"))
    config = fill_defaults({"name": "test", "device": "cpu", "ising_sampling": {
        "sides": [4], "thetas": [0.3], "samplers": ["GWG", "Gibbs-1"], "seeds": [0], "num_chains": 4,
        "num_steps": 20, "burn_in_fraction": 0.1, "chains_per_shard": 4, "chain_block": 2}})
    lines: list[str] = []
    df = run_experiment("ising_sampling", config, {}, workers=1, progress=lines.append, shard_cache=tmp_path / "c")
    assert "[ising_sampling] 2 shards, 1 at a time in this process" in lines

    def untimed(frame: pd.DataFrame) -> pd.DataFrame:
        return frame[frame["metric"] != "ess_per_second"].drop(columns="wall_time_s").reset_index(drop=True)

    by_hand = collect("ising_sampling", [ising_sampling.run(s) for s in ising_sampling.shards(config, {})])
    pd.testing.assert_frame_equal(untimed(df), untimed(by_hand))
