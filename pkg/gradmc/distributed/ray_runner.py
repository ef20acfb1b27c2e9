"""Run independent shards on Ray: a private local instance by default, a cluster when RAY_ADDRESS is set.

``run_shards(fn, shards)`` maps a module-level ``fn`` over picklable shards as Ray *tasks* (not
actors: tasks free their CPU when done, and ``max_retries`` re-runs a shard whose worker died), keeps
at most ``num_workers`` of them in flight with a ``ray.wait`` loop on the driver (which is also where
progress lines come from: tqdm in workers prints a line per refresh without a TTY), and returns the
results in the order of ``shards``. Shards are idempotent (seeded from their identity), so a retried
shard returns the same rows and the order of completion never shows in the output.

Platform notes (Ray 2.60, DESIGN.md): ``ray.init(address="local")`` starts a private instance and
ignores RAY_ADDRESS; ``ray.init`` on an address where nothing listens retries forever, so the address
(for ``auto``, the one recorded in ``/tmp/ray/ray_current_cluster``) is checked first
(:func:`gradmc.distributed.address.wait_for_address`); token authentication is on by default
(``~/.ray/auth_token``; a multi-node cluster must share it); every Ray head, even a private one
without the dashboard UI, probes cloud metadata servers over HTTP at start-up, which private
instances therefore start offline (their HTTP proxies point at a closed loopback port;
``GRADMC_RAY_OFFLINE=0`` turns this off).
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import ray
import torch

from gradmc.distributed.address import wait_for_address

__all__ = ["OFFLINE_ENV_VAR", "ensure_ray", "shutdown_ray", "run_shards"]

OFFLINE_ENV_VAR = "GRADMC_RAY_OFFLINE"
"""Private local Ray instances start offline unless this is 0/false (see :func:`ensure_ray`)."""

_QUIET_ENV = {"RAY_USAGE_STATS_ENABLED": "0"}
# A closed loopback port: the HTTP requests Ray's head makes at start-up (cloud metadata probes for
# its usage report, even with usage stats disabled) fail at once without leaving the machine. Ray's
# own gRPC ignores proxies (RAY_grpc_enable_http_proxy defaults to 0).
_OFFLINE_PROXY = "http://127.0.0.1:9"
_OFFLINE_ENV = {
    **{name: _OFFLINE_PROXY for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY")},
    "no_proxy": "",
    "NO_PROXY": "",
}

_owned_session = False  # True while the Ray session was started (or connected) by ensure_ray
_env_set_by_ray: dict[str, str | None] = {}  # variables ray.init set in os.environ -> previous values


@contextlib.contextmanager
def _temporary_env(updates: Mapping[str, str]) -> Iterator[None]:
    """Set environment variables for the duration of the block, then restore the previous values."""
    saved = {name: os.environ.get(name) for name in updates}
    os.environ.update(updates)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _env_flag(name: str, default: bool) -> bool:
    value = os.environ.get(name, "").strip().lower()
    if not value:
        return default
    return value in ("1", "true", "yes", "on")


def ensure_ray(
    num_cpus: int | None = None,
    *,
    connect_timeout_s: float = 30.0,
    log_to_driver: bool = False,
    offline: bool | None = None,
) -> bool:
    """Make sure this process is connected to Ray, starting a private local instance if needed.

    - Ray already initialised in this process: reuse it (nothing is checked or changed).
    - ``RAY_ADDRESS`` set and not ``"local"``: check that the address answers (TCP, up to
      connect_timeout_s; for ``"auto"`` the address the last ``ray start`` recorded in
      ``/tmp/ray/ray_current_cluster``, see :func:`gradmc.distributed.address.ray_address_file`),
      then ``ray.init(address=...)``.
      The cluster's nodes must have gradmc installed (same environment); with token authentication
      (Ray 2.60's default) set RAY_AUTH_MODE=token and share ``~/.ray/auth_token``. ``ray://``
      addresses need the ``ray[client]`` extra.
    - Otherwise: ``ray.init(address="local", num_cpus=num_cpus)``, a private instance with no
      dashboard UI and usage stats off (about 4 s to start on 2 cores, 0.6 GB).

    Args:
        num_cpus: CPUs of a private local instance (default: all Ray detects); ignored for a cluster.
        connect_timeout_s: seconds to wait for RAY_ADDRESS to answer.
        log_to_driver: forward workers' stdout/stderr to this process (off: shards report through
            their return value and exceptions; worker logs stay under /tmp/ray/session_latest/logs).
        offline: start a private local instance with HTTP(S) proxies pointed at a closed loopback
            port, so Ray's start-up cloud-metadata probes never leave the machine. Workers inherit
            these variables, so shards cannot use HTTP (gradmc downloads data before any shard runs).
            Default: on, unless the ``GRADMC_RAY_OFFLINE`` environment variable is 0/false/no/off
            (a private instance has no reason to reach the network). The driver's environment is
            restored after start-up.

    Returns:
        True if this call started the instance or connected to the cluster (then
        :func:`shutdown_ray` will end it), False if Ray was already initialised.

    Raises:
        ConnectionError: if RAY_ADDRESS does not answer within connect_timeout_s (for ``"auto"``:
            no cluster address recorded, or a stale one), or answers but
            refuses the connection (about 20 s; usually token authentication: Ray 2.60 only sends
            the local token to an explicit address when RAY_AUTH_MODE=token is set).
        ValueError: if RAY_ADDRESS cannot be parsed.
    """
    global _owned_session, _env_set_by_ray
    if ray.is_initialized():
        return False
    env_before = dict(os.environ)
    address = os.environ.get("RAY_ADDRESS", "").strip()
    common: dict[str, Any] = {
        "log_to_driver": log_to_driver,
        "logging_level": logging.WARNING,
        "ignore_reinit_error": True,
    }
    if address and address.lower() != "local":
        wait_for_address(address, timeout_s=connect_timeout_s)
        try:
            ray.init(address=address, **common)
        except ConnectionError as err:
            raise ConnectionError(_refused_message(address, err)) from err
    else:
        if offline is None:
            offline = _env_flag(OFFLINE_ENV_VAR, default=True)
        env = {name: value for name, value in _QUIET_ENV.items() if name not in os.environ}
        if offline:
            env.update(_OFFLINE_ENV)
        with _temporary_env(env):
            ray.init(address="local", num_cpus=num_cpus, include_dashboard=False, **common)
    _env_set_by_ray = {
        name: env_before.get(name) for name, value in os.environ.items() if env_before.get(name) != value
    }
    _owned_session = True
    return True


def _refused_message(address: str, err: BaseException) -> str:
    """Explain a cluster that answers TCP but refuses ``ray.init`` (usually token authentication)."""
    if os.environ.get("RAY_AUTH_MODE", "").lower() == "token":
        auth = (
            "RAY_AUTH_MODE=token is set: check that this machine has the cluster's token "
            "(~/.ray/auth_token, RAY_AUTH_TOKEN or RAY_AUTH_TOKEN_PATH) and that it matches the head's"
        )
    else:
        auth = (
            "if the cluster uses token authentication (Ray 2.60 enables it when the head node has "
            "~/.ray/auth_token), set RAY_AUTH_MODE=token here and give this machine the cluster's token "
            "(~/.ray/auth_token, RAY_AUTH_TOKEN or RAY_AUTH_TOKEN_PATH): Ray never sends a token to an "
            "explicit address on its own; on a trusted network the cluster may run with "
            "RAY_AUTH_MODE=disabled"
        )
    return f"Ray at RAY_ADDRESS={address!r} answers but refused this driver ({err}); {auth}."


def shutdown_ray() -> bool:
    """Shut Ray down if :func:`ensure_ray` started (or connected) the current session.

    Also restores the environment variables ``ray.init`` set in this process (Ray 2.60 sets
    ``RAY_AUTH_MODE=token`` and ``PYTHONBREAKPOINT``), so later subprocesses do not inherit them.

    Returns:
        True if a session was shut down; False if there was none or someone else owns it (e.g. a
        caller that ran ``ray.init`` itself), which is then left running.
    """
    global _owned_session, _env_set_by_ray
    if not (_owned_session and ray.is_initialized()):
        _owned_session = False
        return False
    ray.shutdown()
    for name, value in _env_set_by_ray.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    _owned_session, _env_set_by_ray = False, {}
    return True


@ray.remote
def _run_shard(fn: Callable[[Any], Any], shard: Any, threads: int) -> Any:
    """Ray task body: fix torch's intra-op threads (OMP_NUM_THREADS from Snakemake leaks into
    workers and would oversubscribe cores), then run one shard."""
    torch.set_num_threads(threads)
    return fn(shard)


def _check_feasible(num_cpus: float, num_gpus: float) -> None:
    """Fail fast where Ray would wait forever: no alive node offers the resources of one shard."""
    nodes = [node for node in ray.nodes() if node.get("Alive", node.get("alive", False))]
    resources = [node.get("Resources", {}) for node in nodes]
    if any(res.get("CPU", 0.0) >= num_cpus and res.get("GPU", 0.0) >= num_gpus for res in resources):
        return
    total_gpus = sum(res.get("GPU", 0.0) for res in resources)
    if num_gpus > 0 and total_gpus == 0:
        raise RuntimeError(
            f"shards ask for {num_gpus:g} GPU each but the Ray cluster has no GPUs: set device: cpu "
            "(or gpus_per_shard: 0) in the config, or point RAY_ADDRESS at a cluster with GPU nodes "
            "(calling run_shards directly: pass num_gpus_per_shard=0)"
        )
    offered = [{"CPU": res.get("CPU", 0.0), "GPU": res.get("GPU", 0.0)} for res in resources]
    raise RuntimeError(
        f"no Ray node can run a shard needing {num_cpus:g} CPU and {num_gpus:g} GPU "
        f"(nodes offer {offered}): lower threads_per_worker / num_gpus_per_shard"
    )


PER_SHARD_LINES = 200
"""Up to this many shards, every finished shard gets its own progress line; beyond, only percentages."""


def _label(shard: Any) -> str:
    """Short description of a shard for progress lines: its scalar fields (paths and tensors left out)."""
    fields = getattr(shard, "__dataclass_fields__", None)
    if not fields:
        return ""
    parts = [f"{name}={getattr(shard, name)}" for name in fields
             if isinstance(getattr(shard, name), (int, float, str)) and not str(name).endswith("_path")]
    return "(" + ", ".join(parts[:6]) + ")"


def _describe_failure(index: int, shard: Any, fn: Callable, err: BaseException, max_retries: int) -> str:
    cause = getattr(err, "cause", None)
    if isinstance(err, ray.exceptions.RayTaskError) and isinstance(cause, BaseException):
        what = f"{type(cause).__name__}: {cause}"
    elif isinstance(err, ray.exceptions.RayTaskError):
        what = str(err).strip().splitlines()[-1]
    else:  # the worker or its node died, also on every retry
        what = f"{type(err).__name__} after {max_retries} retries: {err}"
    name = getattr(fn, "__qualname__", repr(fn))
    return f"shard {index} {shard!r} failed in {name}: {what}"


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

    Returns:
        list of fn's results, ``result[i] = fn(shards[i])``, independent of completion order and of
        num_workers.

    Raises:
        RuntimeError: naming the shard (index and repr) and the original error, if a shard raises or
            its worker dies more than max_retries times (the shards still in flight are cancelled);
            or if no Ray node has the CPUs/GPUs one shard asks for (e.g. GPUs on a CPU-only cluster).
        ValueError: if num_workers or threads_per_worker < 1, or num_gpus_per_shard < 0.
        ConnectionError: from :func:`ensure_ray`.
    """
    shards = list(shards)
    if threads_per_worker < 1:
        raise ValueError(f"threads_per_worker must be >= 1, got {threads_per_worker}")
    if num_gpus_per_shard < 0:
        raise ValueError(f"num_gpus_per_shard must be >= 0, got {num_gpus_per_shard}")
    if num_workers is not None and num_workers < 1:
        raise ValueError(f"num_workers must be >= 1, got {num_workers}")
    if not shards:
        return []
    ensure_ray()
    _check_feasible(threads_per_worker, num_gpus_per_shard)
    if num_workers is None:
        cpus = ray.cluster_resources().get("CPU", os.cpu_count() or 1)
        num_workers = max(1, int(cpus) // threads_per_worker)

    options: dict[str, Any] = {
        "num_cpus": threads_per_worker,
        "num_gpus": num_gpus_per_shard,
        "max_retries": max_retries,
        "retry_exceptions": False,
    }
    total = len(shards)
    results: list[Any] = [None] * total
    pending: dict[ray.ObjectRef, int] = {}
    submitted: dict[int, float] = {}
    next_index = done = 0
    last_percent = -1
    start = time.monotonic()
    if progress is not None:
        progress(f"[{desc}] {total} shards, {min(num_workers, total)} at a time")
    try:
        while done < total:
            while next_index < total and len(pending) < num_workers:
                ref = _run_shard.options(name=f"{desc}[{next_index}]", **options).remote(
                    fn, shards[next_index], threads_per_worker
                )
                pending[ref] = next_index
                submitted[next_index] = time.monotonic()
                next_index += 1
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                index = pending.pop(ref)
                try:
                    results[index] = ray.get(ref)
                except ray.exceptions.RayError as err:
                    raise RuntimeError(_describe_failure(index, shards[index], fn, err, max_retries)) from err
                done += 1
                if progress is not None and total <= PER_SHARD_LINES:
                    progress(f"[{desc}] shard {index} {_label(shards[index])} finished in "
                             f"{time.monotonic() - submitted[index]:.1f}s")
            percent = 100 * done // total
            if progress is not None and (percent > last_percent or done == total):
                last_percent = percent
                elapsed = time.monotonic() - start
                eta = elapsed / done * (total - done)
                progress(f"[{desc}] {done}/{total} done ({percent}%), elapsed {elapsed:.1f}s, eta {eta:.1f}s")
    finally:
        for ref in pending:
            with contextlib.suppress(Exception):
                ray.cancel(ref)
    return results
