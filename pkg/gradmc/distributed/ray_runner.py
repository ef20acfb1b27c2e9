"""Run independent shards (:func:`run_shards`) on Ray, as tasks or a ``ray.util.ActorPool`` of actors with one
``ray.wait`` loop on the driver (docs/DESIGN.md "Scale"), or one after another in this process where one worker
on this machine is all there is (``inline``: no Ray start-up, about 10 s a sweep).

A shard that raises is not retried (shards are deterministic: it would fail again). One that runs out of memory
inside raises :class:`ShardOutOfMemoryError` naming its sizes and the fix; one the kernel's OOM killer or Ray's
memory monitor kills is a worker death, described on the driver with the same fix.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import socket
import time
from collections.abc import Callable, Sequence
from typing import Any

import ray
import torch
from ray.util import ActorPool

from gradmc.distributed.memory_split import ShardPart
from gradmc.distributed.session import ensure_ray
from gradmc.errors import ClusterResourceError, InputError, UserError

__all__ = ["DEFAULT_EXECUTOR", "EXECUTORS", "EXECUTOR_ENV_VAR", "INLINE", "PER_SHARD_LINES", "RAY_EXECUTORS",
           "ShardOutOfMemoryError", "is_out_of_memory", "resolve_executor", "run_guarded", "run_shards", "shard_sizes"]

RAY_EXECUTORS = ("tasks", "actors")
INLINE = "inline"
EXECUTORS = (*RAY_EXECUTORS, INLINE)
EXECUTOR_ENV_VAR = "GRADMC_SHARD_EXECUTOR"
DEFAULT_EXECUTOR = "tasks"
PER_SHARD_LINES = 200
"""Up to this many shards, every finished shard gets its own progress line; beyond, only percentages."""

_OOM_HINT = ("lower the chains per shard (e.g. num_chains, or trials/seeds per shard) or the problem size in the "
             "config, or split the work over more, smaller shards; on a GPU also give each shard a larger share of "
             "the device (a larger gpus_per_shard, so fewer shards share one GPU)")


class ShardOutOfMemoryError(MemoryError):
    """A shard ran out of host or GPU memory; the message names its sizes and how to lower them."""


def is_out_of_memory(err: BaseException) -> bool:
    """True for torch.OutOfMemoryError, MemoryError, and torch's CPU-allocator RuntimeError."""
    if isinstance(err, (MemoryError, torch.OutOfMemoryError)):
        return True
    messages = ("can't allocate memory", "not enough memory", "out of memory")
    return isinstance(err, RuntimeError) and any(text in str(err) for text in messages)


def shard_sizes(shard: Any) -> str:
    """The shard's scalar fields as ``name=value, ...`` (ints, floats, bools, strings up to 40 characters, no
    ``*_path``; a field holding a dataclass contributes its own), or its repr."""
    if not dataclasses.is_dataclass(shard) or isinstance(shard, type):
        return repr(shard)
    parts = []
    for field in dataclasses.fields(shard):
        value = getattr(shard, field.name)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            parts.append(shard_sizes(value))
        elif isinstance(value, (int, float)) or (isinstance(value, str) and len(value) <= 40
                                                and not field.name.endswith("_path")):
            parts.append(f"{field.name}={value!r}")
    return ", ".join(parts) or repr(shard)


def run_guarded(fn: Callable[[Any], Any], shard: Any) -> Any:
    """``fn(shard)``, with out-of-memory errors re-raised as :class:`ShardOutOfMemoryError`.

    Raises:
        ShardOutOfMemoryError: if fn runs out of memory (:func:`is_out_of_memory`); the message names fn, the
            host, the shard's sizes, the original error (also chained as ``__cause__``) and the fix. GPU
            caches are emptied first so the worker can run its next shard.
        Exception: any other error of fn, unchanged.
    """
    try:
        return fn(shard)
    except (MemoryError, RuntimeError) as err:
        if not is_out_of_memory(err):
            raise
        text = str(err).strip()
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            torch.cuda.empty_cache()
        raise ShardOutOfMemoryError(
            f"out of memory in {getattr(fn, '__qualname__', repr(fn))} on {socket.gethostname()} "
            f"({type(err).__name__}: {text.splitlines()[0] if text else ''}) with shard sizes "
            f"{shard_sizes(shard)}: {_OOM_HINT}") from err


def _setup_worker(threads: int) -> None:
    """Fix torch's intra-op threads (OMP_NUM_THREADS from Snakemake leaks into workers and would oversubscribe
    cores): ``threads`` at most, by the thread policy of :mod:`gradmc.threads`; and the malloc thresholds
    (:mod:`gradmc.tuning`)."""
    from gradmc.threads import apply_thread_policy
    from gradmc.tuning import tune_allocator

    apply_thread_policy(threads)
    tune_allocator()


@ray.remote
def _run_shard(fn: Callable[[Any], Any], shard: Any, threads: int) -> Any:
    _setup_worker(threads)
    return run_guarded(fn, shard)


class _ShardActor:
    """An actor of the pool: it holds its threads (and GPU share) for the whole sweep and keeps what its shards
    load through :func:`gradmc.distributed.shared.load_once` across shards."""

    def __init__(self, threads: int):
        _setup_worker(threads)

    def run(self, fn: Callable[[Any], Any], shard: Any) -> Any:
        return run_guarded(fn, shard)


def _on_a_cluster() -> bool:
    address = os.environ.get("RAY_ADDRESS", "").strip().lower()
    return bool(address) and address != "local"


def resolve_executor(executor: str | None = None, *, num_workers: int | None = None,
                     num_gpus_per_shard: float = 0.0) -> str:
    """The executor to use: ``executor`` if given, else ``$GRADMC_SHARD_EXECUTOR``, else :data:`INLINE` for
    one worker with no GPU and no Ray in sight (RAY_ADDRESS unset or ``local``, Ray not initialised in this
    process), else :data:`DEFAULT_EXECUTOR`.

    Raises:
        gradmc.errors.InputError: the name (or the environment variable) is not one of :data:`EXECUTORS`.
    """
    if executor is not None and executor not in EXECUTORS:
        raise InputError(f"shard executor {executor!r} is not one of {', '.join(EXECUTORS)}")
    env = os.environ.get(EXECUTOR_ENV_VAR, "")
    if executor is None and env and env not in EXECUTORS:
        raise InputError(f"{EXECUTOR_ENV_VAR}={env!r} is not one of {', '.join(EXECUTORS)} (unset it for the "
                         f"default: {INLINE} for one worker on this machine, else {DEFAULT_EXECUTOR})")
    if executor or env:
        return executor or env
    alone = num_workers == 1 and num_gpus_per_shard == 0 and not _on_a_cluster() and not ray.is_initialized()
    return INLINE if alone else DEFAULT_EXECUTOR


def _check_feasible(num_cpus: float, num_gpus: float) -> None:
    """Fail fast where Ray would wait forever: no alive node offers the resources of one shard.

    Raises:
        gradmc.errors.ClusterResourceError: (a RuntimeError) naming what one shard asks for, what the nodes
            offer and how to fix it.
    """
    offered = [{kind: node.get("Resources", {}).get(kind, 0.0) for kind in ("CPU", "GPU")}
               for node in ray.nodes() if node.get("Alive")]
    if any(res["CPU"] >= num_cpus and res["GPU"] >= num_gpus for res in offered):
        return
    if num_gpus > 0 and not any(res["GPU"] for res in offered):
        raise ClusterResourceError(
            f"shards ask for {num_gpus:g} GPU each but the Ray cluster has no GPUs: set device: cpu "
            "(or gpus_per_shard: 0) in the config, or point RAY_ADDRESS at a cluster with GPU nodes "
            "(calling run_shards directly: pass num_gpus_per_shard=0)")
    raise ClusterResourceError(f"no Ray node can run a shard needing {num_cpus:g} CPU and {num_gpus:g} GPU "
                               f"(nodes offer {offered}): lower threads_per_worker / num_gpus_per_shard")


def _room(num_cpus: float, num_gpus: float) -> int:
    """How many shards of ``num_cpus`` CPUs and ``num_gpus`` GPUs the Ray cluster's resources hold at once now
    (at least 1: :func:`_check_feasible` has passed)."""
    resources = ray.cluster_resources()
    room = int(resources.get("CPU", 0.0) // num_cpus)
    if num_gpus > 0:
        room = min(room, int(resources.get("GPU", 0.0) // num_gpus))
    return max(1, room)


def _label(shard: Any) -> str:
    """Short description of a shard for progress lines: its first 6 scalar fields (no ``*_path``); for a
    :class:`~gradmc.distributed.memory_split.ShardPart`, its shard's and its chains."""
    if isinstance(shard, ShardPart):
        whole = _label(shard.shard)
        return f"({whole[1:-1]}{'; ' if whole else ''}chains {shard.start}..{shard.stop - 1})"
    if not dataclasses.is_dataclass(shard) or isinstance(shard, type):
        return ""
    parts = [f"{f.name}={getattr(shard, f.name)}" for f in dataclasses.fields(shard)
             if isinstance(getattr(shard, f.name), (int, float, str)) and not f.name.endswith("_path")]
    return "(" + ", ".join(parts[:6]) + ")"


def _describe_failure(name: str, shard: Any, fn: Callable, err: BaseException, max_retries: int) -> str:
    """One line naming the shard (``name`` and repr), fn, and what went wrong (with the fix where known)."""
    cause = getattr(err, "cause", None)
    text = str(err).strip()
    first_line = text.splitlines()[0] if text else ""
    if not isinstance(err, ray.exceptions.RayError):  # raised in this process (the inline executor)
        what = f"{type(err).__name__}: {text}"
    elif isinstance(err, ray.exceptions.RayTaskError) and isinstance(cause, BaseException):
        what = f"{type(cause).__name__}: {cause}"
    elif isinstance(err, ray.exceptions.RayTaskError):
        what = text.splitlines()[-1] if text else type(err).__name__
    elif isinstance(err, ray.exceptions.OutOfMemoryError):  # Ray's memory monitor killed the worker
        what = f"OutOfMemoryError: Ray's memory monitor killed its worker ({first_line}); {_OOM_HINT}"
    else:  # the worker process or its node died, on the first attempt and on every retry
        what = (f"{type(err).__name__} after {max_retries} retries: its worker died on all {max_retries + 1} "
                f"attempts ({first_line}); a worker killed by a signal is often the kernel's out-of-memory "
                f"killer (see `dmesg`): if so, {_OOM_HINT}")
    return f"{name} {shard!r} failed in {getattr(fn, '__qualname__', repr(fn))}: {what}"


class _Progress:
    """The progress lines of one sweep (see :func:`run_shards`)."""

    def __init__(self, progress: Callable[[str], None] | None, desc: str, shards: list, names: list[str]):
        self.progress, self.desc, self.shards, self.names = progress, desc, shards, names
        self.done, self.last_percent, self.start = 0, -1, time.monotonic()

    def begin(self, noun: str, at_a_time: int, where: str = "") -> None:
        if self.progress is not None:
            self.progress(f"[{self.desc}] {len(self.shards)} {noun}, {at_a_time} at a time{where}")

    def finished(self, index: int, began: float) -> None:
        self.done += 1
        if self.progress is None:
            return
        total = len(self.shards)
        if total <= PER_SHARD_LINES:
            self.progress(f"[{self.desc}] {self.names[index]} {_label(self.shards[index])} finished in "
                          f"{time.monotonic() - began:.1f}s")
        if (percent := 100 * self.done // total) > self.last_percent:
            self.last_percent, elapsed = percent, time.monotonic() - self.start
            self.progress(f"[{self.desc}] {self.done}/{total} done ({percent}%), elapsed {elapsed:.1f}s, "
                          f"eta {elapsed / self.done * (total - self.done):.1f}s")


def _run_inline(fn: Callable[[Any], Any], shards: list, threads: int, names: list[str],
                on_result: Callable[[int, Any], None] | None, report: _Progress) -> list[Any]:
    """The shards one after another in this process, with a worker's thread policy and allocator settings
    (torch's thread count is restored afterwards); errors are described as :func:`run_shards` describes them."""
    before = torch.get_num_threads()
    _setup_worker(threads)
    results: list[Any] = []
    try:
        for index, shard in enumerate(shards):
            began = time.monotonic()
            try:
                results.append(run_guarded(fn, shard))
            except UserError as err:
                raise type(err)(f"{names[index]} {_label(shard)}: {err}") from err
            except Exception as err:
                raise RuntimeError(_describe_failure(names[index], shard, fn, err, 0)) from err
            if on_result is not None:
                on_result(index, results[index])
            report.finished(index, began)
    finally:
        torch.set_num_threads(before)
    return results


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
    """Run ``fn(shard)`` for every shard on Ray (through :func:`~gradmc.distributed.session.ensure_ray`) with at
    most ``num_workers`` in flight, or one after another in this process (``executor="inline"``), and return the
    results in the order of ``shards``. A private Ray instance started here gets ``num_workers *
    threads_per_worker`` CPUs (all it detects when num_workers is None); the caller's
    :func:`~gradmc.distributed.session.shutdown_ray` ends it.

    Args:
        fn: module-level function (workers import it by name); usually returns a tidy pandas DataFrame.
        shards: picklable objects (typically frozen dataclasses) whose repr names them.
        num_workers: most shards in flight at once; default: as many as the cluster's CPUs (and GPUs, for GPU
            shards) hold at once (>= 1).
        num_gpus_per_shard: GPUs reserved per shard (fractions pack several shards on a GPU).
        threads_per_worker: CPUs reserved per shard and ``torch.set_num_threads`` inside it.
        max_retries: re-runs of a shard whose worker process, actor or node died.
        progress: receives a line per finished shard (``[shards] shard 3 (sampler=GWG, ...) finished in 12.3s``,
            up to :data:`PER_SHARD_LINES` shards) and at most about 100 lines ``[shards] 3/12 done (25%),
            elapsed 4.1s, eta 12.3s``; None for silence.
        desc: label in the progress lines and the Ray task names (``<desc>[3]``, ``<desc>[3 part 2/4]``).
        on_result: ``on_result(i, result)`` on the driver the moment shard i finishes (the shard cache); an
            exception it raises stops the sweep like a failed shard.
        executor: ``"tasks"`` (a Ray task per shard), ``"actors"`` (``num_workers`` actors, each holding its
            threads / GPU share and what its shards load through :func:`gradmc.distributed.shared.load_once`; no
            more than the cluster's resources hold at the start, since an actor beyond would never start) or
            ``"inline"`` (this process, one shard at a time: no Ray, no retries of a dead worker); None:
            :func:`resolve_executor` (inline for ``num_workers=1`` with no GPU and no Ray running or addressed).
            Results are the same either way.
        names: each shard's name in progress lines, task names and errors (``shard 3 part 2/4``,
            :func:`gradmc.distributed.memory_split.unit_names`); default ``shard 0``, ``shard 1``, ...
        noun: what the shards are called in counts (``12 parts, 2 at a time``).

    Returns:
        ``results[i] = fn(shards[i])``, independent of completion order and of num_workers.

    Raises:
        RuntimeError: naming the shard and the original error, if a shard raises, runs out of memory or its
            worker dies more than max_retries times (the shards in flight are cancelled). A
            :class:`gradmc.errors.UserError` raised in a shard keeps its type, prefixed with the shard's name.
        gradmc.errors.ClusterResourceError: (a RuntimeError) if no Ray node has the CPUs/GPUs one shard asks for.
        ValueError: num_workers or threads_per_worker < 1, num_gpus_per_shard < 0, or len(names) != len(shards).
        gradmc.errors.ClusterError / InputError: from ``ensure_ray`` and :func:`resolve_executor`.
    """
    shards = list(shards)
    if threads_per_worker < 1:
        raise ValueError(f"threads_per_worker must be >= 1, got {threads_per_worker}")
    if num_gpus_per_shard < 0:
        raise ValueError(f"num_gpus_per_shard must be >= 0, got {num_gpus_per_shard}")
    if num_workers is not None and num_workers < 1:
        raise ValueError(f"num_workers must be >= 1, got {num_workers}")
    executor = resolve_executor(executor, num_workers=num_workers, num_gpus_per_shard=num_gpus_per_shard)
    name_of = list(names) if names is not None else [f"shard {i}" for i in range(len(shards))]
    if len(name_of) != len(shards):
        raise ValueError(f"names has {len(name_of)} entries for {len(shards)} shards")
    if not shards:
        return []
    report = _Progress(progress, desc, shards, name_of)
    if executor == INLINE:
        report.begin(noun, 1, " in this process")
        return _run_inline(fn, shards, threads_per_worker, name_of, on_result, report)
    ensure_ray(num_cpus=None if num_workers is None else num_workers * threads_per_worker)
    _check_feasible(threads_per_worker, num_gpus_per_shard)
    if num_workers is None:
        num_workers = _room(threads_per_worker, num_gpus_per_shard)

    total = len(shards)
    resources = {"num_cpus": threads_per_worker, "num_gpus": num_gpus_per_shard}
    actors: list[Any] = []
    if executor == "actors" and num_workers > (room := _room(threads_per_worker, num_gpus_per_shard)):
        # an actor holds its CPUs for life, so one beyond the room would never start, nor its shards finish
        if progress is not None:
            progress(f"[{desc}] Ray holds {room} actor{'' if room == 1 else 's'} of {threads_per_worker} "
                     f"CPU{'' if threads_per_worker == 1 else 's'} at once: a pool of {room}, not {num_workers}")
        num_workers = room
    if executor == "actors":  # a restarted actor (max_restarts) redoes the shard it was running (max_task_retries)
        actor_cls = ray.remote(_ShardActor).options(**resources, max_restarts=max_retries, max_task_retries=max_retries)
        actors = [actor_cls.remote(threads_per_worker) for _ in range(min(num_workers, total))]
    pool = ActorPool(actors)
    task_options = {**resources, "max_retries": max_retries, "retry_exceptions": False}
    results: list[Any] = [None] * total
    pending: dict[ray.ObjectRef, tuple[int, Any, float]] = {}  # ref -> (shard index, its actor or None, start)
    next_index = 0
    report.begin(noun, min(num_workers, total))
    try:
        while report.done < total:
            while next_index < total and len(pending) < num_workers:
                name = f"{desc}[{name_of[next_index].removeprefix('shard ')}]"  # ising_sampling[3], [3 part 2/4]
                shard = shards[next_index]
                actor = pool.pop_idle() if actors else None  # never None with actors: at most len(actors) in flight
                if actor is not None:
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
            report.finished(index, began)
    finally:
        for ref in pending:
            with contextlib.suppress(Exception):
                ray.cancel(ref)
        for actor in actors:
            with contextlib.suppress(Exception):
                ray.kill(actor, no_restart=True)
    return results
