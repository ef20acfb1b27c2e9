"""The Ray benchmarks of ``make bench``: scaling of a sweep over workers (scaling.json) and Ray tasks against
Ray actors (executors.json).

Fixed work is a pure-Python spin loop (no NumPy/torch threads, so one shard keeps exactly one core busy)
calibrated here to ``work_s`` seconds; no-op shards measure Ray's own cost. Every sample is one whole
:func:`gradmc.distributed.run_shards` call. Timings on a shared machine are noisy: the load averages before
and after are recorded with them.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import tempfile
import time
import timeit
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import ray

from gradmc import __version__
from gradmc.atomic import atomic_path
from gradmc.distributed import ensure_ray, run_shards, shutdown_ray
from gradmc.distributed.ray_runner import RAY_EXECUTORS
from gradmc.distributed.selftest import SharedInputShard, shared_input_shard

__all__ = ["BusyShard", "busy_shard", "noop_shard", "run_scaling", "run_executors"]


@dataclass(frozen=True)
class BusyShard:
    """One shard of fixed CPU work: ``iterations`` steps of a 31-bit linear congruential generator."""

    index: int
    iterations: int


def _spin(iterations: int) -> int:
    x = 1
    for _ in range(iterations):
        x = (x * 1103515245 + 12345) & 0x7FFFFFFF
    return x


def busy_shard(shard: BusyShard) -> dict:
    """Run the shard's work; returns {"index", "start", "end" (time.monotonic, s), "seconds" (wall),
    "cpu_s" (this process's CPU time: below "seconds" when the shard waited for a core), "checksum"}."""
    start, cpu = time.monotonic(), time.process_time()
    checksum = _spin(shard.iterations)
    end = time.monotonic()
    return {"index": shard.index, "start": start, "end": end, "seconds": end - start,
            "cpu_s": time.process_time() - cpu, "checksum": checksum}


def noop_shard(shard: int) -> int:
    """No work: what is left of a sweep's time is Ray's (submit, schedule, run, return, ray.wait)."""
    return shard


def _calibrate(work_s: float) -> tuple[int, float]:
    """Iterations of :func:`_spin` that take about work_s here, and the measured time of one such shard
    (``timeit.repeat``, 3 runs each)."""
    probe = 200_000
    rate = probe / min(timeit.repeat(lambda: _spin(probe), number=1, repeat=3))  # fastest: least disturbed
    iterations = max(1, int(rate * work_s))
    return iterations, statistics.median(timeit.repeat(lambda: _spin(iterations), number=1, repeat=3))


def _header(**settings) -> dict:
    """The start of a Ray benchmark's JSON: when, versions, CPUs, load average before, then ``settings``."""
    return {"created_utc": datetime.now(UTC).isoformat(timespec="seconds"), "gradmc_version": __version__,
            "ray_version": ray.__version__, "python": platform.python_version(), "cpu_count": os.cpu_count(),
            "loadavg_before": list(os.getloadavg()), **settings}


def _write(out_path: str | Path, result: dict) -> dict:
    """Add the load average after, write ``result`` as JSON atomically, return it."""
    result["loadavg_after"] = list(os.getloadavg())
    with atomic_path(out_path) as tmp:
        tmp.write_text(json.dumps(result, indent=2) + "\n")
    return result


def _sweep(fn, shards: list, workers: int, executor: str | None = None) -> tuple[float, list, list[float]]:
    """(wall seconds, results, seconds from the start to each finished shard) of one run_shards call."""
    done: list[float] = []
    start = time.perf_counter()
    results = run_shards(fn, shards, num_workers=workers, progress=None, desc="bench", executor=executor,
                         on_result=lambda i, r: done.append(time.perf_counter() - start))
    return time.perf_counter() - start, results, done


def run_scaling(out_path: str | Path, *, num_shards: int = 16, work_s: float = 0.3, noop_shards: int = 64,
                workers: tuple[int, ...] = (1, 2), progress=print) -> dict:
    """Time a fixed sweep on each worker count and Ray's per-shard overhead; write JSON atomically.

    Args:
        out_path: JSON file (written through :func:`gradmc.atomic.atomic_path`).
        num_shards: shards of the timed sweep (default 16).
        work_s: target seconds of CPU work per shard (calibrated here; default 0.3).
        noop_shards: shards of the no-op sweeps that measure the overhead (default 64).
        workers: worker counts to compare; the first is the baseline of the speedup (default (1, 2)).
        progress: called with one line per measurement; None for silence.

    Returns:
        The JSON's content: settings, ``ray_start_s``, ``warmup_s``, ``serial_shard_s`` (one shard in
        this process), ``sweeps`` {str(workers): {"wall_s", "shard_s_mean", "shard_s", "shard_cpu_s_mean",
        "core_share" (CPU / wall time of a shard: below 1 when other processes took its core), "speedup"
        (wall of workers[0] / wall), "efficiency" (speedup * workers[0] / workers),
        "overhead_per_shard_s" (wall * workers / num_shards - shard_s_mean)}}, ``noop``
        {str(workers): {"wall_s", "per_shard_s"}}, load averages, versions.

    Raises:
        ValueError: if num_shards, noop_shards or a worker count is < 1, or work_s <= 0.
        RuntimeError: if the shards' checksums differ (they must all do the same work).
    """
    if num_shards < 1 or noop_shards < 1 or not workers or min(workers) < 1 or not work_s > 0:
        raise ValueError(f"need num_shards, noop_shards, workers >= 1 and work_s > 0; got {num_shards}, "
                         f"{noop_shards}, {workers}, {work_s}")
    say = progress or (lambda line: None)
    result = _header(num_shards=num_shards, work_s=work_s, noop_shards=noop_shards, workers=list(workers))
    iterations, result["serial_shard_s"] = _calibrate(work_s)
    result["iterations_per_shard"] = iterations
    start = time.perf_counter()
    started = ensure_ray(num_cpus=max(workers))
    result["ray_start_s"] = time.perf_counter() - start
    result["ray_instance"] = "private" if started else "already running"
    try:
        result["warmup_s"] = _sweep(noop_shard, list(range(max(workers))), max(workers))[0]
        shards = [BusyShard(i, iterations) for i in range(num_shards)]
        result["sweeps"], result["noop"] = {}, {}
        for count in workers:
            wall, rows, _ = _sweep(busy_shard, shards, count)
            if len({row["checksum"] for row in rows}) != 1:
                raise RuntimeError("busy shards disagree on their checksum: they did not all do the same work")
            mean = statistics.fmean(row["seconds"] for row in rows)
            cpu = statistics.fmean(row["cpu_s"] for row in rows)
            result["sweeps"][str(count)] = {"wall_s": wall, "shard_s_mean": mean, "shard_cpu_s_mean": cpu,
                                            "core_share": cpu / mean, "shard_s": [row["seconds"] for row in rows],
                                            "overhead_per_shard_s": wall * count / num_shards - mean}
            say(f"[bench] scaling: {num_shards} shards x {mean:.3f}s ({cpu:.3f}s CPU) on {count} worker(s): "
                f"{wall:.2f}s")
        base = result["sweeps"][str(workers[0])]["wall_s"]
        for count in workers:
            row = result["sweeps"][str(count)]
            row["speedup"] = base / row["wall_s"]  # relative to the first worker count
            row["efficiency"] = row["speedup"] * workers[0] / count
        for count in sorted({1, max(workers)}):
            wall = _sweep(noop_shard, list(range(noop_shards)), count)[0]
            result["noop"][str(count)] = {"wall_s": wall, "per_shard_s": wall / noop_shards}
            say(f"[bench] scaling: Ray overhead {1000 * wall / noop_shards:.1f} ms/shard at {count} in flight")
    finally:
        if started:
            shutdown_ray()
    return _write(out_path, result)


def run_executors(out_path: str | Path, *, workers: int = 2, repeats: int = 5, noop_shards: int = 64,
                  busy_shards: int = 16, work_s: float = 0.2, shared_shards: int = 16, shared_mib: int = 64,
                  progress=print) -> dict:
    """Ray tasks against Ray actors: three sweeps per executor, ``repeats`` times, medians written as JSON.

    Each sample is a fresh private Ray instance (as every ``gradmc run`` job starts its own; ``ray.init`` is
    not timed), so the actor pool's start-up counts against actors, the first use of Ray's prestarted task
    workers against tasks. The executors alternate between repeats. Sweeps: ``noop`` (all overhead; the
    time to its first finished shard is the start-up, the time per shard after it the marginal cost),
    ``busy`` (fixed CPU work: throughput), ``shared_input`` (every shard reads the same ``shared_mib`` MiB
    file through :func:`gradmc.distributed.shared.load_once`).

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
        walls: dict[str, dict[str, list[float]]] = {name: {e: [] for e in RAY_EXECUTORS} for name in sweeps}
        first: dict[str, list[float]] = {e: [] for e in RAY_EXECUTORS}
        steady: dict[str, list[float]] = {e: [] for e in RAY_EXECUTORS}
        for r in range(repeats):
            for executor in (RAY_EXECUTORS if r % 2 == 0 else RAY_EXECUTORS[::-1]):
                ensure_ray(num_cpus=workers)  # fresh, as every `gradmc run` job starts its own
                try:
                    for name, (fn, shards) in sweeps.items():
                        wall, _, done = _sweep(fn, shards, workers, executor)
                        walls[name][executor].append(wall)
                        if name == "noop":  # the first sweep of this Ray instance: start-up included
                            first[executor].append(done[0])
                            steady[executor].append((done[-1] - done[0]) / (len(done) - 1) if len(done) > 1
                                                    else float("nan"))
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
