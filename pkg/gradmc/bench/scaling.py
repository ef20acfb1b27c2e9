"""Scaling of a sweep over Ray workers (``make bench``): speedup of 1 -> N workers and Ray's cost per shard.

Fixed work: ``num_shards`` shards of the same pure-Python spin loop (no NumPy/torch threads, so one
shard keeps exactly one core busy), its length calibrated in this process to ``work_s`` seconds. The
sweep runs through :func:`gradmc.distributed.run_shards` on a private local Ray instance with
``max(workers)`` CPUs, once per worker count, after a warm-up that starts the worker processes (Ray
start-up and worker start-up are reported, not counted). Ray's overhead is measured with no-op
shards: sweep time / number of shards, at one shard in flight (the driver's round trip per shard)
and at ``max(workers)``. Timings on a shared machine are noisy: the load average before and after is
recorded with them.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import time
import timeit
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import ray

from gradmc import __version__
from gradmc.atomic import atomic_path
from gradmc.distributed import ensure_ray, run_shards, shutdown_ray

__all__ = ["BusyShard", "busy_shard", "run_scaling"]


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


def _sweep(shards: list, fn, workers: int) -> tuple[float, list]:
    start = time.perf_counter()
    results = run_shards(fn, shards, num_workers=workers, progress=None, desc="scaling")
    return time.perf_counter() - start, results


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
        result["warmup_s"] = _sweep(list(range(max(workers))), noop_shard, max(workers))[0]
        shards = [BusyShard(i, iterations) for i in range(num_shards)]
        result["sweeps"], result["noop"] = {}, {}
        for count in workers:
            wall, rows = _sweep(shards, busy_shard, count)
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
            wall, _ = _sweep(list(range(noop_shards)), noop_shard, count)
            result["noop"][str(count)] = {"wall_s": wall, "per_shard_s": wall / noop_shards}
            say(f"[bench] scaling: Ray overhead {1000 * wall / noop_shards:.1f} ms/shard at {count} in flight")
    finally:
        if started:
            shutdown_ray()
    return _write(out_path, result)


if __name__ == "__main__":
    import sys

    run_scaling(sys.argv[1] if len(sys.argv) > 1 else "results/bench/scaling.json")
