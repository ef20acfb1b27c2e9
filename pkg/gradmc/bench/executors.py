"""Ray tasks against Ray actors for a sweep (``make bench``, ``executors.json``): per-shard overhead and throughput.

Each measurement is one whole :func:`gradmc.distributed.run_shards` call, as a job makes it, in a fresh private
Ray instance per (repeat, executor) as every ``gradmc run`` job starts its own (``ray.init`` itself is not
timed): the actor pool's start-up (a new process per actor, which imports torch) counts against actors, the
first use of Ray's prestarted task workers against tasks. Three sweeps, run in this order, on ``workers``
workers:

- ``noop``: shards that do nothing: the time per shard is all overhead (submit, schedule, run, return); the
  time to its first finished shard is the executor's start-up, the time per shard after it the steady-state
  cost of one more shard;
- ``busy``: shards of fixed pure-Python CPU work (:func:`gradmc.bench.scaling.busy_shard`): throughput;
- ``shared_input``: shards that each read the same ``shared_mib`` MiB file through
  :func:`gradmc.distributed.shared.load_once` (what a sweep's shards share: a model, a data set).

Every sweep runs ``repeats`` times per executor, the executors alternating, and the medians are reported;
timings on a shared machine vary by about 30%, so the load averages are recorded with them.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path

import ray

from gradmc.bench.scaling import BusyShard, _calibrate, _header, _write, busy_shard, noop_shard
from gradmc.distributed import ensure_ray, run_shards, shutdown_ray
from gradmc.distributed.ray_runner import EXECUTORS
from gradmc.distributed.selftest import SharedInputShard, shared_input_shard

__all__ = ["run_executors"]


def _timed_sweep(fn, shards: list, workers: int, executor: str) -> tuple[float, float, float]:
    """(wall seconds, seconds to the first finished shard, seconds per shard between the first and the last)."""
    done: list[float] = []
    start = time.perf_counter()
    run_shards(fn, shards, num_workers=workers, progress=None, desc="executors", executor=executor,
               on_result=lambda i, r: done.append(time.perf_counter()))
    wall = time.perf_counter() - start
    steady = (done[-1] - done[0]) / (len(done) - 1) if len(done) > 1 else float("nan")
    return wall, done[0] - start, steady


def run_executors(out_path: str | Path, *, workers: int = 2, repeats: int = 5, noop_shards: int = 64,
                  busy_shards: int = 16, work_s: float = 0.2, shared_shards: int = 16, shared_mib: int = 64,
                  progress=print) -> dict:
    """Time the three sweeps with each executor ``repeats`` times; write the JSON atomically.

    Args:
        out_path: JSON file.
        workers: shards in flight (and actors in the pool).
        repeats: runs of each sweep per executor (median reported; at least 1).
        noop_shards, busy_shards, shared_shards: shards per sweep.
        work_s: target seconds of CPU work per busy shard (calibrated here).
        shared_mib: size of the file every shared-input shard reads.
        progress: one line per measurement; None for silence.

    Returns:
        The JSON's content: settings, versions, load averages, and ``sweeps.<sweep>.<executor>``
        {"wall_s": [per repeat], "median_s", "per_shard_ms" (median wall / shards), "shards_per_s"};
        ``faster`` {sweep: executor with the lower median}; ``marginal_ms_per_shard`` {executor: ms} and
        ``startup_s`` {executor: s} from the no-op sweep (medians over the repeats).

    Raises:
        ValueError: a count below 1, or work_s <= 0.
    """
    if min(workers, repeats, noop_shards, busy_shards, shared_shards, shared_mib) < 1 or not work_s > 0:
        raise ValueError("workers, repeats, shard counts and shared_mib must be >= 1 and work_s > 0")
    say = progress or (lambda line: None)
    result = _header(workers=workers, repeats=repeats, noop_shards=noop_shards, busy_shards=busy_shards,
                     work_s=work_s, shared_shards=shared_shards, shared_mib=shared_mib)
    iterations, _ = _calibrate(work_s)
    if ray.is_initialized():
        raise RuntimeError("run_executors starts a fresh private Ray instance per measurement: shut Ray down first")
    with tempfile.TemporaryDirectory(prefix="gradmc-executors-") as tmp:
        shared = Path(tmp) / "shared.bin"
        shared.write_bytes(os.urandom(shared_mib * 2**20))
        sweeps = {
            "noop": (noop_shard, list(range(noop_shards))),
            "busy": (busy_shard, [BusyShard(i, iterations) for i in range(busy_shards)]),
            "shared_input": (shared_input_shard, [SharedInputShard(i, str(shared)) for i in range(shared_shards)]),
        }
        walls: dict[str, dict[str, list[float]]] = {name: {e: [] for e in EXECUTORS} for name in sweeps}
        first: dict[str, list[float]] = {e: [] for e in EXECUTORS}
        steady: dict[str, list[float]] = {e: [] for e in EXECUTORS}
        for r in range(repeats):
            for executor in (EXECUTORS if r % 2 == 0 else EXECUTORS[::-1]):
                ensure_ray(num_cpus=workers)  # fresh, as every `gradmc run` job starts its own
                try:
                    for name, (fn, shards) in sweeps.items():
                        wall, to_first, per_shard = _timed_sweep(fn, shards, workers, executor)
                        walls[name][executor].append(wall)
                        if name == "noop":  # the first sweep of this Ray instance: start-up included
                            first[executor].append(to_first)
                            steady[executor].append(per_shard)
                finally:
                    shutdown_ray()
            say(f"[bench] executors: repeat {r + 1}/{repeats} done")
    result["sweeps"], result["faster"] = {}, {}
    for name, (_, shards) in sweeps.items():
        rows = {}
        for executor, values in walls[name].items():
            median = statistics.median(values)
            rows[executor] = {"wall_s": values, "median_s": median, "per_shard_ms": 1000 * median / len(shards),
                              "shards_per_s": len(shards) / median}
            say(f"[bench] executors: {name} with {executor}: median {median:.2f}s for {len(shards)} shards "
                f"({rows[executor]['per_shard_ms']:.1f} ms/shard)")
        result["sweeps"][name] = rows
        result["faster"][name] = min(rows, key=lambda e: rows[e]["median_s"])
    # start-up (to the first finished no-op shard) and the steady-state cost of one more shard after it
    result["startup_s"] = {e: statistics.median(v) for e, v in first.items()}
    result["marginal_ms_per_shard"] = {e: 1000 * statistics.median(v) for e, v in steady.items()}
    say("[bench] executors: start-up " + ", ".join(f"{e} {v:.2f} s" for e, v in result["startup_s"].items())
        + "; then per shard " + ", ".join(f"{e} {v:.2f} ms" for e, v in result["marginal_ms_per_shard"].items()))
    return _write(out_path, result)
