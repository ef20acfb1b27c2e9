"""Run independent shards on Ray, on a private local instance or the cluster at RAY_ADDRESS.

``run_shards(fn, shards)`` maps a module-level ``fn`` over picklable shards with at most ``num_workers`` in
flight (one ``ray.wait`` loop on the driver, which also prints the progress lines), hands each result to
``on_result`` as it arrives (the shard cache) and returns the results in the order of ``shards``. Shards are
idempotent (seeded from their identity), so a retried shard returns the same rows.

Two executors, same results: Ray *tasks* (default; ``max_retries`` re-runs a shard whose worker died) and a
``ray.util.ActorPool`` of actors, each holding its threads / GPU share and what its shards load through
:func:`gradmc.distributed.shared.load_once` (``max_restarts`` / ``max_task_retries`` redo a dead actor's
shard). Neither is faster for a whole job (``make bench``, executors.json; docs/DESIGN.md "Scale").
A shard that raises is not retried (it would fail again); one out of memory fails naming its sizes and the fix.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Sequence
from typing import Any

import ray
import torch
from ray.util import ActorPool

from gradmc.distributed.memory import oom_hint, run_guarded
from gradmc.distributed.memory_split import ShardPart
from gradmc.distributed.session import ensure_ray
from gradmc.errors import ClusterResourceError, InputError, UserError

__all__ = ["DEFAULT_EXECUTOR", "EXECUTORS", "EXECUTOR_ENV_VAR", "PER_SHARD_LINES", "resolve_executor", "run_shards"]


def _setup_worker(threads: int) -> None:
    """Fix torch's intra-op threads (OMP_NUM_THREADS from Snakemake leaks into workers and would oversubscribe
    cores) and the malloc thresholds (:mod:`gradmc.tuning`)."""
    from gradmc.tuning import tune_allocator

    torch.set_num_threads(threads)
    tune_allocator()


@ray.remote
def _run_shard(fn: Callable[[Any], Any], shard: Any, threads: int) -> Any:
    """Ray task body: one shard (out of memory: a clear error)."""
    _setup_worker(threads)
    return run_guarded(fn, shard)


class _ShardActor:
    """An actor of the pool: it holds its threads (and GPU share) for the whole sweep and keeps what its shards
    load through :func:`gradmc.distributed.shared.load_once` across shards."""

    def __init__(self, threads: int):
        _setup_worker(threads)

    def run(self, fn: Callable[[Any], Any], shard: Any) -> Any:
        return run_guarded(fn, shard)


EXECUTORS = ("tasks", "actors")
EXECUTOR_ENV_VAR = "GRADMC_SHARD_EXECUTOR"
DEFAULT_EXECUTOR = "tasks"
"""How :func:`run_shards` runs shards unless told otherwise (docs/DESIGN.md "Scale" gives the measurement)."""


def resolve_executor(executor: str | None = None) -> str:
    """The executor to use: ``executor`` if given, else ``$GRADMC_SHARD_EXECUTOR``, else :data:`DEFAULT_EXECUTOR`.

    Raises:
        gradmc.errors.InputError: the name (or the environment variable) is not one of :data:`EXECUTORS`.
    """
    if executor is not None and executor not in EXECUTORS:
        raise InputError(f"shard executor {executor!r} is not one of {', '.join(EXECUTORS)}")
    env = os.environ.get(EXECUTOR_ENV_VAR) or DEFAULT_EXECUTOR
    if executor is None and env not in EXECUTORS:
        raise InputError(f"{EXECUTOR_ENV_VAR}={env!r} is not one of {', '.join(EXECUTORS)} (unset it for the "
                         f"default, {DEFAULT_EXECUTOR})")
    return executor or env


def _check_feasible(num_cpus: float, num_gpus: float) -> None:
    """Fail fast where Ray would wait forever: no alive node offers the resources of one shard.

    Raises:
        gradmc.errors.ClusterResourceError: (a RuntimeError) naming what one shard asks for, what the
            nodes offer and how to fix it.
    """
    nodes = [node for node in ray.nodes() if node.get("Alive", node.get("alive", False))]
    resources = [node.get("Resources", {}) for node in nodes]
    if any(res.get("CPU", 0.0) >= num_cpus and res.get("GPU", 0.0) >= num_gpus for res in resources):
        return
    total_gpus = sum(res.get("GPU", 0.0) for res in resources)
    if num_gpus > 0 and total_gpus == 0:
        raise ClusterResourceError(
            f"shards ask for {num_gpus:g} GPU each but the Ray cluster has no GPUs: set device: cpu "
            "(or gpus_per_shard: 0) in the config, or point RAY_ADDRESS at a cluster with GPU nodes "
            "(calling run_shards directly: pass num_gpus_per_shard=0)"
        )
    offered = [{"CPU": res.get("CPU", 0.0), "GPU": res.get("GPU", 0.0)} for res in resources]
    raise ClusterResourceError(
        f"no Ray node can run a shard needing {num_cpus:g} CPU and {num_gpus:g} GPU "
        f"(nodes offer {offered}): lower threads_per_worker / num_gpus_per_shard"
    )


PER_SHARD_LINES = 200
"""Up to this many shards, every finished shard gets its own progress line; beyond, only percentages."""


def _label(shard: Any) -> str:
    """Short description of a shard for progress lines: its scalar fields (paths and tensors left out); for a
    part of a split shard (:class:`gradmc.distributed.memory_split.ShardPart`), its shard's and its chains."""
    if isinstance(shard, ShardPart):
        whole = _label(shard.shard)
        return f"({whole[1:-1]}{'; ' if whole else ''}chains {shard.start}..{shard.stop - 1})"
    fields = getattr(shard, "__dataclass_fields__", None)
    if not fields:
        return ""
    parts = [f"{name}={getattr(shard, name)}" for name in fields
             if isinstance(getattr(shard, name), (int, float, str)) and not str(name).endswith("_path")]
    return "(" + ", ".join(parts[:6]) + ")"


def _describe_failure(name: str, shard: Any, fn: Callable, err: BaseException, max_retries: int) -> str:
    """One line naming the shard (``name``, e.g. ``shard 3``, and repr), fn, and what went wrong (with the fix
    where known)."""
    cause = getattr(err, "cause", None)
    text = str(err).strip()
    first_line = text.splitlines()[0] if text else ""
    if isinstance(err, ray.exceptions.RayTaskError) and isinstance(cause, BaseException):
        what = f"{type(cause).__name__}: {cause}"
    elif isinstance(err, ray.exceptions.RayTaskError):
        what = text.splitlines()[-1] if text else type(err).__name__
    elif isinstance(err, ray.exceptions.OutOfMemoryError):  # Ray's memory monitor killed the worker
        what = f"OutOfMemoryError: Ray's memory monitor killed its worker ({first_line}); {oom_hint()}"
    else:  # the worker process or its node died, on the first attempt and on every retry
        what = (
            f"{type(err).__name__} after {max_retries} retries: its worker died on all "
            f"{max_retries + 1} attempts ({first_line}); a worker killed by a signal is often the "
            f"kernel's out-of-memory killer (see `dmesg`): if so, {oom_hint()}"
        )
    return f"{name} {shard!r} failed in {getattr(fn, '__qualname__', repr(fn))}: {what}"


def run_shards(
    fn: Callable[[Any], Any],
    shards: Sequence[Any],
    *,
    num_workers: int | None = None,
    num_gpus_per_shard: float = 0.0,
    threads_per_worker: int = 1,
    max_retries: int = 2,
    progress: Callable[[str], None] | None = print,
    desc: str = "shards",
    on_result: Callable[[int, Any], None] | None = None,
    executor: str | None = None,
    names: Sequence[str] | None = None,
    noun: str = "shards",
) -> list[Any]:
    """Run ``fn(shard)`` for every shard on Ray and return the results in the order of ``shards``.

    Starts a private local Ray instance (or connects to RAY_ADDRESS) through :func:`ensure_ray` if
    Ray is not initialised yet; call :func:`shutdown_ray` when done.

    Args:
        fn: module-level function (workers import it by name; lambdas and closures defined in
            ``__main__`` are pickled by value); usually returns a tidy pandas DataFrame.
        shards: picklable objects (typically frozen dataclasses) whose repr names them.
        num_workers: most shards in flight at once; default: the cluster's CPUs divided by
            threads_per_worker (at least 1).
        num_gpus_per_shard: GPUs reserved per shard (fractions allowed, e.g. 0.25 packs four shards
            on a GPU); Ray sets CUDA_VISIBLE_DEVICES in the worker.
        threads_per_worker: CPUs reserved per shard and ``torch.set_num_threads`` inside it.
        max_retries: re-runs of a shard whose worker process or node died (exceptions raised by fn
            are not retried: shards are deterministic).
        progress: called on the driver with a line per finished shard (``[shards] shard 3 (sampler=GWG,
            seed=1, ...) finished in 12.3s``, up to PER_SHARD_LINES shards) and overall lines like
            ``[shards] 3/12 done (25%), elapsed 4.1s, eta 12.3s`` (at most about 100); None for silence.
        desc: label in the progress lines and the Ray task names.
        on_result: called on the driver as ``on_result(i, result)`` the moment shard i finishes, before its
            progress line (e.g. to store it: :mod:`gradmc.distributed.shard_cache`); an exception it raises
            stops the sweep like a failed shard.
        executor: ``"tasks"`` (a Ray task per shard; Ray reuses its worker processes) or ``"actors"`` (a pool
            of ``num_workers`` actors, each holding its threads / GPU share and what its shards load through
            :func:`gradmc.distributed.shared.load_once`, fed one shard at a time; a dead actor is restarted
            and its shard redone, up to max_retries times); None: :data:`DEFAULT_EXECUTOR`, or the
            ``GRADMC_SHARD_EXECUTOR`` environment variable when set. Results are the same either way.
        names: how progress lines, task names and errors name each shard, e.g. ``shard 3 part 2/4`` for a part
            of a split shard (:func:`gradmc.distributed.memory_split.unit_names`), ``shard 7`` for shard 7 of the sweep
            when a rerun computes only the shards missing from the cache; default ``shard 0``, ``shard 1``, ...
            (task names drop the word ``shard``: ``<desc>[3]``, ``<desc>[3 part 2/4]``).
        noun: what the shards are called in counts (``12 parts, 2 at a time``); default ``shards``.

    Returns:
        list of fn's results, ``result[i] = fn(shards[i])``, independent of completion order and of
        num_workers.

    Raises:
        RuntimeError: naming the shard (index and repr) and the original error, if a shard raises,
            runs out of memory (then also its sizes and how to lower them, see
            :mod:`gradmc.distributed.memory`), or its worker dies more than max_retries times (the
            shards still in flight are cancelled): a bug or an oversized shard, not a user error.
        gradmc.errors.ClusterResourceError: (a RuntimeError) if no Ray node has the CPUs/GPUs one shard
            asks for (e.g. GPUs on a CPU-only cluster).
        ValueError: if num_workers or threads_per_worker < 1, or num_gpus_per_shard < 0 (a caller's bug).
        gradmc.errors.ClusterError / InputError: from :func:`ensure_ray`.
    """
    shards = list(shards)
    if threads_per_worker < 1:
        raise ValueError(f"threads_per_worker must be >= 1, got {threads_per_worker}")
    if num_gpus_per_shard < 0:
        raise ValueError(f"num_gpus_per_shard must be >= 0, got {num_gpus_per_shard}")
    if num_workers is not None and num_workers < 1:
        raise ValueError(f"num_workers must be >= 1, got {num_workers}")
    executor = resolve_executor(executor)
    name_of = list(names) if names is not None else [f"shard {i}" for i in range(len(shards))]
    if len(name_of) != len(shards):
        raise ValueError(f"names has {len(name_of)} entries for {len(shards)} shards")
    if not shards:
        return []
    ensure_ray()
    _check_feasible(threads_per_worker, num_gpus_per_shard)
    if num_workers is None:
        cpus = ray.cluster_resources().get("CPU", os.cpu_count() or 1)
        num_workers = max(1, int(cpus) // threads_per_worker)

    total = len(shards)
    resources = {"num_cpus": threads_per_worker, "num_gpus": num_gpus_per_shard}
    actors: list[Any] = []
    if executor == "actors":  # a restarted actor (max_restarts) redoes the shard it was running (max_task_retries)
        actor_cls = ray.remote(_ShardActor).options(**resources, max_restarts=max_retries, max_task_retries=max_retries)
        actors = [actor_cls.remote(threads_per_worker) for _ in range(min(num_workers, total))]
    pool = ActorPool(actors)
    task_options = {**resources, "max_retries": max_retries, "retry_exceptions": False}
    results: list[Any] = [None] * total
    pending: dict[ray.ObjectRef, tuple[int, Any, float]] = {}  # ref -> (shard index, its actor or None, start)
    next_index = done = 0
    last_percent, start = -1, time.monotonic()
    if progress is not None:
        progress(f"[{desc}] {total} {noun}, {min(num_workers, total)} at a time")
    try:
        while done < total:
            while next_index < total and len(pending) < num_workers:
                name = f"{desc}[{name_of[next_index].removeprefix('shard ')}]"  # ising_sampling[3], [3 part 2/4]
                shard, actor = shards[next_index], None
                if actors:
                    actor = pool.pop_idle()  # never None: at most len(actors) shards are in flight
                    ref = actor.run.options(name=name).remote(fn, shard)
                else:
                    ref = _run_shard.options(name=name, **task_options).remote(fn, shard, threads_per_worker)
                pending[ref] = (next_index, actor, time.monotonic())
                next_index += 1
            [ref], _ = ray.wait(list(pending), num_returns=1)
            index, actor, began = pending.pop(ref)
            if actor is not None:
                pool.push(actor)
            try:
                results[index] = ray.get(ref)
            except ray.exceptions.RayError as err:
                cause = getattr(err, "cause", None)
                if isinstance(cause, UserError):  # bad input met inside a shard: still a one-line user error
                    raise type(cause)(f"{name_of[index]} {_label(shards[index])}: {cause}") from err
                raise RuntimeError(_describe_failure(name_of[index], shards[index], fn, err, max_retries)) from err
            if on_result is not None:
                on_result(index, results[index])
            done += 1
            if progress is None:
                continue
            if total <= PER_SHARD_LINES:
                progress(f"[{desc}] {name_of[index]} {_label(shards[index])} finished in "
                         f"{time.monotonic() - began:.1f}s")
            if (percent := 100 * done // total) > last_percent:
                last_percent, elapsed = percent, time.monotonic() - start
                progress(f"[{desc}] {done}/{total} done ({percent}%), elapsed {elapsed:.1f}s, "
                         f"eta {elapsed / done * (total - done):.1f}s")
    finally:
        for ref in pending:
            with contextlib.suppress(Exception):
                ray.cancel(ref)
        for actor in actors:
            with contextlib.suppress(Exception):
                ray.kill(actor, no_restart=True)
    return results
