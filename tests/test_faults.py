"""Faults while shards run on Ray: dead workers, shards that never survive, out of memory, bad clusters.

A killed worker's shard is re-run and the sweep's rows equal a fault-free run (no row lost, none
twice); a shard that keeps dying, or runs out of memory, stops the sweep with an error naming it; a
RAY_ADDRESS where no Ray head answers stops `gradmc run` within its connect timeout. The toy shards
live in gradmc.distributed.selftest (Ray workers import functions by module name).
"""

from __future__ import annotations

import dataclasses
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import ray
import torch
from _killer import kill_first_attempt

from gradmc.distributed import CONNECT_TIMEOUT_ENV_VAR, ShardOutOfMemoryError, ensure_ray, run_shards
from gradmc.distributed.ray_runner import is_out_of_memory, run_guarded, shard_sizes
from gradmc.distributed.selftest import ToyShard, toy_shard
from gradmc.errors import InputError
from gradmc.results import validate_metrics

ROOT = Path(__file__).resolve().parents[1]
GRADMC = str(Path(sys.executable).with_name("gradmc"))  # the console script: the real entry point
KEY = ["seed", "chain", "step", "metric"]



def fault_free(seeds) -> pd.DataFrame:
    return pd.concat([toy_shard(ToyShard(seed=s)) for s in seeds], ignore_index=True)


def assert_complete(df: pd.DataFrame, seeds) -> None:
    """Every shard's rows once: no shard lost, no row twice, same values as a run without faults."""
    validate_metrics(df)
    assert not df.duplicated(KEY).any()
    assert sorted(df["seed"].unique()) == sorted(seeds)
    pd.testing.assert_frame_equal(df, fault_free(seeds))


# --- dead workers ----------------------------------------------------------------------------------


@pytest.mark.slow
def test_worker_killed_from_outside_mid_sweep(ray_session, tmp_path):
    """SIGKILL the worker of shard 3 while it runs; Ray re-runs that shard once, the sweep completes."""
    pid_file = tmp_path / "pids"
    shards = [ToyShard(seed=i, sleep_s=0.05) for i in range(6)]
    shards[3] = ToyShard(seed=3, sleep_s=1.0, pid_file=str(pid_file))
    killer, killed = kill_first_attempt(pid_file)
    results = run_shards(toy_shard, shards, num_workers=2, max_retries=2, progress=None)
    killer.join(timeout=60)
    attempts = [int(line.split()[0]) for line in pid_file.read_text().splitlines()]
    assert len(killed) == 1 and attempts[0] == killed[0]
    assert len(attempts) == 2 and attempts[1] != killed[0]  # exactly one retry, in a new process
    assert_complete(pd.concat(results, ignore_index=True), range(6))


@pytest.mark.slow
def test_worker_that_dies_on_its_first_attempt(ray_session, tmp_path):
    marker = tmp_path / "deaths"
    shards = [ToyShard(seed=i) for i in range(6)]
    shards[4] = ToyShard(seed=4, crash_marker=str(marker))  # os._exit on the first attempt
    results = run_shards(toy_shard, shards, num_workers=2, max_retries=1, progress=None)
    assert marker.read_text() == "1"
    assert_complete(pd.concat(results, ignore_index=True), range(6))


@pytest.mark.slow
def test_shard_that_always_dies_is_named_after_max_retries(ray_session, tmp_path):
    marker = tmp_path / "deaths"
    shards = [ToyShard(seed=0, sleep_s=0.5), ToyShard(seed=9, crash_marker=str(marker), crashes=99)]
    with pytest.raises(RuntimeError) as info:
        run_shards(toy_shard, shards, num_workers=2, max_retries=1, progress=None)
    assert marker.read_text() == "2"  # the first attempt and max_retries = 1 retry, no more
    message = str(info.value)
    assert message.startswith("shard 1 ToyShard(seed=9,") and "crashes=99" in message
    assert "failed in toy_shard" in message and "after 1 retries" in message
    assert "its worker died on all 2 attempts" in message and "out-of-memory killer" in message


# --- out of memory ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shard", "original", "sizes"),
    [
        # Sizes beyond the 2^47-byte address space fail at once, whatever the overcommit policy.
        # NumPy cannot allocate 2^30 GiB of scratch: MemoryError
        (ToyShard(seed=5, num_chains=7, scratch_gib=2.0**30), "MemoryError: Unable to allocate",
         "num_chains=7, num_steps=4"),
        # torch's CPU allocator cannot hold the (T, C) float64 walk of 2^50 chains (2^55 bytes): RuntimeError
        (ToyShard(seed=6, num_chains=2**50), "RuntimeError: [enforce fail", f"num_chains={2**50}, num_steps=4"),
    ],
)
def test_out_of_memory_names_the_shard_and_its_sizes(ray_session, tmp_path, shard, original, sizes):
    pid_file = tmp_path / "pids"
    shard = dataclasses.replace(shard, pid_file=str(pid_file))
    with pytest.raises(RuntimeError) as info:
        run_shards(toy_shard, [ToyShard(seed=1), shard], num_workers=2, progress=None)
    message = str(info.value)
    assert message.startswith(f"shard 1 ToyShard(seed={shard.seed},")
    assert "ShardOutOfMemoryError: out of memory in toy_shard" in message and original in message
    assert f"with shard sizes seed={shard.seed}, {sizes}" in message
    assert "lower the chains per shard" in message and "more, smaller shards" in message
    assert len(pid_file.read_text().splitlines()) == 1  # not retried: it would run out of memory again


def test_run_guarded_in_process():
    shard = ToyShard(seed=2, num_chains=64)

    def cuda_oom(s):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB")

    with pytest.raises(ShardOutOfMemoryError) as info:
        run_guarded(cuda_oom, shard)
    assert "OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 GiB" in str(info.value)
    assert "num_chains=64" in str(info.value) and "gpus_per_shard" in str(info.value)
    assert isinstance(info.value.__cause__, torch.OutOfMemoryError)

    def other(s):
        raise RuntimeError("shape mismatch")

    with pytest.raises(RuntimeError, match="^shape mismatch$"):  # not an OOM: unchanged
        run_guarded(other, shard)
    assert not is_out_of_memory(ValueError("out of memory"))
    assert run_guarded(toy_shard, ToyShard(seed=2)).equals(toy_shard(ToyShard(seed=2)))
    assert shard_sizes(("a", 3)) == "('a', 3)"  # not a dataclass: its repr


# --- unreachable or wrong cluster, through `gradmc run` ---------------------------------------------


def run_cli(tmp_path: Path, address: str, timeout_s: str | None) -> tuple[subprocess.CompletedProcess, float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_", "GRADMC_RAY"))}
    env["RAY_ADDRESS"] = address
    if timeout_s is not None:
        env[CONNECT_TIMEOUT_ENV_VAR] = timeout_s
    out = tmp_path / "metrics.parquet"
    start = time.monotonic()
    proc = subprocess.run(
        [GRADMC, "run", "kmc_trajectories", "--config", "config/smoke.yaml", "--workers", "2", "--out", str(out)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )
    elapsed = time.monotonic() - start
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert not out.exists()
    return proc, elapsed


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.slow
def test_cli_with_nothing_at_ray_address(tmp_path):
    port = closed_port()
    proc, elapsed = run_cli(tmp_path, f"127.0.0.1:{port}", "2")
    assert 2 <= elapsed < 30
    assert f"gradmc: error: no Ray cluster answers at RAY_ADDRESS='127.0.0.1:{port}'" in proc.stderr
    assert "after 2 s" in proc.stderr and f"ray start --head --port={port}" in proc.stderr
    assert "unset RAY_ADDRESS" in proc.stderr


@pytest.mark.slow
def test_cli_with_a_silent_server_at_ray_address(tmp_path):
    """Something listens but is not Ray: before the HTTP/2 check, ray.init waited there forever."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()  # the kernel completes TCP handshakes; nothing ever answers
        port = server.getsockname()[1]
        proc, elapsed = run_cli(tmp_path, f"127.0.0.1:{port}", "2")
    assert 2 <= elapsed < 30
    assert f"127.0.0.1:{port}) but it is not a Ray head: it sent nothing" in proc.stderr
    assert "Check the port" in proc.stderr


def test_malformed_ray_address_fails_before_any_wait(monkeypatch):
    monkeypatch.setenv("RAY_ADDRESS", "http://head:8265")
    monkeypatch.setattr(ray, "is_initialized", lambda: False)  # as in a fresh driver process
    start = time.monotonic()
    with pytest.raises(InputError, match="Ray address 'http://head:8265': unsupported scheme 'http'"):
        ensure_ray()
    assert time.monotonic() - start < 1


@pytest.mark.slow
def test_cli_default_connect_timeout_is_30_s(tmp_path):
    port = closed_port()
    proc, elapsed = run_cli(tmp_path, f"127.0.0.1:{port}", None)
    assert 30 <= elapsed < 45
    assert "after 30 s" in proc.stderr
