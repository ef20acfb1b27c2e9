"""Toy shards for checking a Ray setup and for the distributed tests (in the package, since Ray workers import
a task's function by module name and ``tests/`` is not on their ``sys.path``)::

    from gradmc.distributed import run_shards
    from gradmc.distributed.selftest import ToyShard, toy_shard, worker_info
    run_shards(worker_info, [ToyShard(seed=i) for i in range(8)], num_gpus_per_shard=0.5)
"""

from __future__ import annotations

import dataclasses
import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import ray
import torch

import gradmc
from gradmc import threads
from gradmc.seeding import make_generator, seed_from

__all__ = ["SharedInputShard", "ToyShard", "shared_input_shard", "toy_shard", "worker_info"]


@dataclass(frozen=True)
class ToyShard:
    """Identity and behaviour of one toy shard.

    Attributes:
        seed: replicate index; the random stream is seeded from ("toy", seed, num_chains, num_steps).
        num_chains: C, chains per shard.
        num_steps: T, recorded steps per chain.
        sleep_s: seconds to sleep before returning (to reorder completions).
        fail: raise ValueError instead of returning.
        user_error: raise :class:`gradmc.errors.InputError` (a user error) instead of returning.
        crash_marker: if set, a file counting this shard's deaths: the first ``crashes`` attempts add one
            and kill their worker process (``os._exit``), a later retry succeeds.
        crashes: attempts that die (with crash_marker).
        pid_file: if set, each attempt appends "<process id> <Ray node id>" before sleeping, so a test can
            kill the worker (or its node) from outside and count the attempts.
        scratch_gib: GiB of NumPy scratch memory allocated first (too much raises MemoryError).
    """

    seed: int
    num_chains: int = 3
    num_steps: int = 4
    sleep_s: float = 0.0
    fail: bool = False
    user_error: bool = False
    crash_marker: str | None = None
    crashes: int = 1
    pid_file: str | None = None
    scratch_gib: float = 0.0


def toy_shard(shard: ToyShard) -> pd.DataFrame:
    """A Gaussian random walk per chain, returned as a tidy metrics table.

    Returns:
        DataFrame following :data:`gradmc.results.METRICS_COLUMNS`: one row per (chain, step) with
        metric ``"x"`` (the walk's position), and one row per step with chain -1 and metric
        ``"x_mean"`` (mean over chains). Depends only on the shard, never on the worker.

    Raises:
        ValueError: if ``shard.fail``; InputError: if ``shard.user_error``.
        MemoryError: if ``shard.scratch_gib`` GiB cannot be allocated.
        RuntimeError: torch's CPU allocator, if the (T, C) walk does not fit in memory.
    """
    if shard.crash_marker is not None:
        marker = Path(shard.crash_marker)
        deaths = int(marker.read_text() or 0) if marker.exists() else 0
        if deaths < shard.crashes:
            marker.write_text(str(deaths + 1))
            os._exit(17)
    if shard.pid_file is not None:
        node = ray.get_runtime_context().get_node_id() if ray.is_initialized() else "-"
        with open(shard.pid_file, "a") as fh:
            fh.write(f"{os.getpid()} {node}\n")
    if shard.scratch_gib > 0:
        np.empty(int(shard.scratch_gib * 2**30), dtype=np.uint8)  # only whether it fits matters
    if shard.sleep_s > 0:
        time.sleep(shard.sleep_s)
    if shard.fail:
        raise ValueError(f"toy failure in shard seed={shard.seed}")
    if shard.user_error:
        from gradmc.errors import InputError

        raise InputError(f"toy user error in shard seed={shard.seed}")
    steps, chains = shard.num_steps, shard.num_chains
    gen = make_generator(seed_from("toy", shard.seed, chains, steps))
    walk = torch.randn(steps, chains, generator=gen, dtype=torch.float64).cumsum(0)  # (T, C)
    per_chain = pd.DataFrame({"chain": np.tile(np.arange(chains), steps), "step": np.repeat(np.arange(steps), chains),
                              "metric": "x", "value": walk.reshape(-1).numpy()})  # (T * C) rows
    pooled = pd.DataFrame({"chain": -1, "step": np.arange(steps), "metric": "x_mean", "value": walk.mean(1).numpy()})
    df = pd.concat([per_chain, pooled], ignore_index=True)
    df.insert(0, "experiment", "toy")
    df.insert(1, "target", "gaussian_walk")
    df.insert(2, "sampler", "random_walk")
    df.insert(3, "seed", shard.seed)
    df["energy_evals"] = df["step"] + 1
    df["grad_evals"] = 0
    df["wall_time_s"] = 0.0  # a real experiment measures it; constant here so reruns compare equal
    ints = ["seed", "chain", "step", "energy_evals", "grad_evals"]
    return df.astype(dict.fromkeys(ints, "int64"))


def worker_info(shard: object) -> dict[str, object]:
    """Where and how a shard ran: Ray node id (hex; None outside Ray), host, pid, scheduling niceness, torch
    threads (and the thread policy's last choice in that process, :data:`gradmc.threads.last_choice`, as a dict),
    visible GPUs, gradmc/torch versions. ``shard`` is only echoed (its repr); a ToyShard's sleep_s is
    slept first, so that shards overlap in time and spread over the nodes."""
    if isinstance(shard, ToyShard) and shard.sleep_s > 0:
        time.sleep(shard.sleep_s)
    return {
        "shard": repr(shard),
        "node_id": ray.get_runtime_context().get_node_id() if ray.is_initialized() else None,
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "niceness": os.nice(0),
        "torch_threads": torch.get_num_threads(),
        "thread_choice": None if threads.last_choice is None else dataclasses.asdict(threads.last_choice),
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "gradmc_version": gradmc.__version__,
        "torch_version": torch.__version__,
    }


@dataclass(frozen=True)
class SharedInputShard:
    """A shard that reads one file every shard of its sweep shares (``path``), through ``load_once``."""

    index: int
    path: str
    sleep_s: float = 0.0


def _read_bytes(path: str) -> bytes:
    return Path(path).read_bytes()


def shared_input_shard(shard: SharedInputShard) -> dict[str, object]:
    """Read ``shard.path`` through :func:`gradmc.distributed.shared.load_once`; returns its index, the pid, the
    bytes read ("size") and the loader calls so far in this process ("loads")."""
    from gradmc.distributed.shared import load_once, loads

    data = load_once(_read_bytes, shard.path)
    if shard.sleep_s > 0:
        time.sleep(shard.sleep_s)
    return {"index": shard.index, "pid": os.getpid(), "size": len(data), "loads": loads()}
