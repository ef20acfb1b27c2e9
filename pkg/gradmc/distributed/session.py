"""Connect this process to Ray: a private local instance by default, the cluster at RAY_ADDRESS if set.

Platform notes (Ray 2.60, DESIGN.md):
- ``ray.init(address="local")`` starts a private instance and ignores RAY_ADDRESS.
- ``ray.init`` on an address where no Ray head answers retries forever, so the address is checked
  first (:func:`gradmc.distributed.address.wait_for_address`, TCP and HTTP/2, 30 s by default).
- Ray replaces a loopback host (``127.0.0.1``, ``localhost``) in the address, and in the node IP of
  a private instance, by this machine's outward IP (``ray._private.services.resolve_ip_for_localhost``),
  so a cluster whose nodes listen on 127.0.0.1 only was unreachable (``ray.init`` retried forever)
  and private instances listened on the outward interface. :func:`ensure_ray` keeps loopback hosts
  loopback during ``ray.init`` (Ray's own switch for it, ``ray_constants.ENABLE_RAY_CLUSTER``,
  normally set from ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER`` at import).
- Token authentication is on by default (``~/.ray/auth_token``; a multi-node cluster must share it).
- Every Ray head, even a private one without the dashboard UI, probes cloud metadata servers over
  HTTP at start-up; private instances therefore start offline (HTTP proxies pointed at a closed
  loopback port; ``GRADMC_RAY_OFFLINE=0`` turns this off).
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator, Mapping
from typing import Any

import ray

from gradmc.distributed.address import parse_address, wait_for_address
from gradmc.errors import ClusterError, InputError

__all__ = ["CONNECT_TIMEOUT_ENV_VAR", "OFFLINE_ENV", "OFFLINE_ENV_VAR", "ensure_ray", "shutdown_ray",
           "temporary_env"]

OFFLINE_ENV_VAR = "GRADMC_RAY_OFFLINE"
"""Private local Ray instances start offline unless this is 0/false (see :func:`ensure_ray`)."""

CONNECT_TIMEOUT_ENV_VAR = "GRADMC_RAY_CONNECT_TIMEOUT_S"
"""Seconds :func:`ensure_ray` waits for RAY_ADDRESS to answer when not told (default 30)."""

DEFAULT_CONNECT_TIMEOUT_S = 30.0

_QUIET_ENV = {"RAY_USAGE_STATS_ENABLED": "0"}
# A closed loopback port: the HTTP requests Ray's head makes at start-up (cloud metadata probes for
# its usage report, even with usage stats disabled) fail at once without leaving the machine. Ray's
# own gRPC ignores proxies (RAY_grpc_enable_http_proxy defaults to 0).
_OFFLINE_PROXY = "http://127.0.0.1:9"
OFFLINE_ENV = {
    **{name: _OFFLINE_PROXY for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY")},
    "no_proxy": "",
    "NO_PROXY": "",
}
"""Environment under which Ray processes start offline (their HTTP requests go to a closed port)."""

_owned_session = False  # True while the Ray session was started (or connected) by ensure_ray
_env_set_by_ray: dict[str, str | None] = {}  # variables ray.init set in os.environ -> previous values


@contextlib.contextmanager
def temporary_env(updates: Mapping[str, str]) -> Iterator[None]:
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


@contextlib.contextmanager
def loopback_stays_loopback() -> Iterator[None]:
    """Inside the block, Ray leaves 127.0.0.1/localhost as they are (see the module notes)."""
    from ray._private import ray_constants

    saved = ray_constants.ENABLE_RAY_CLUSTER
    ray_constants.ENABLE_RAY_CLUSTER = False
    try:
        yield
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = saved


def _env_flag(name: str, default: bool) -> bool:
    value = os.environ.get(name, "").strip().lower()
    if not value:
        return default
    return value in ("1", "true", "yes", "on")


def _connect_timeout(value: float | None) -> float:
    if value is not None:
        return value
    text = os.environ.get(CONNECT_TIMEOUT_ENV_VAR, "").strip()
    if not text:
        return DEFAULT_CONNECT_TIMEOUT_S
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not seconds > 0:
        raise InputError(f"{CONNECT_TIMEOUT_ENV_VAR}={text!r}: expected a positive number of seconds")
    return seconds


def ensure_ray(
    num_cpus: int | None = None,
    *,
    connect_timeout_s: float | None = None,
    log_to_driver: bool = False,
    offline: bool | None = None,
) -> bool:
    """Make sure this process is connected to Ray, starting a private local instance if needed.

    - Ray already initialised in this process: reuse it (nothing is checked or changed).
    - ``RAY_ADDRESS`` set and not ``"local"``: check that a Ray head answers there (TCP and HTTP/2,
      up to connect_timeout_s; for ``"auto"`` the address the last ``ray start`` recorded in
      ``/tmp/ray/ray_current_cluster``, see :func:`gradmc.distributed.address.ray_address_file`),
      then ``ray.init(address=...)``; a loopback address (``127.0.0.1:6379``) is dialled as given.
      The cluster's nodes must have gradmc installed (same environment); with token authentication
      (Ray 2.60's default) set RAY_AUTH_MODE=token and share ``~/.ray/auth_token``. ``ray://``
      addresses need the ``ray[client]`` extra.
    - Otherwise: ``ray.init(address="local", num_cpus=num_cpus)``, a private instance on 127.0.0.1
      with no dashboard UI and usage stats off (about 4 s to start on 2 cores, 0.6 GB).

    Args:
        num_cpus: CPUs of a private local instance (default: all Ray detects); ignored for a cluster.
        connect_timeout_s: seconds to wait for RAY_ADDRESS to answer; default: the
            ``GRADMC_RAY_CONNECT_TIMEOUT_S`` environment variable, else 30.
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
        gradmc.errors.ClusterError: (a ConnectionError) if no Ray head answers at RAY_ADDRESS within the
            connect timeout (nothing listens, something else listens, for ``"auto"``: no cluster address
            recorded or a stale one), or the head answers but refuses the connection (about 20 s; usually token
            authentication: Ray 2.60 only sends the local token to an explicit address when
            RAY_AUTH_MODE=token is set).
        gradmc.errors.InputError: (a ValueError) if RAY_ADDRESS cannot be parsed, or
            GRADMC_RAY_CONNECT_TIMEOUT_S is not a positive number.
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
        parse_address(address)  # InputError before any waiting
        wait_for_address(address, timeout_s=_connect_timeout(connect_timeout_s))
        try:
            with loopback_stays_loopback():
                ray.init(address=address, **common)
        except ConnectionError as err:
            raise ClusterError(_refused_message(address, err)) from err
    else:
        if offline is None:
            offline = _env_flag(OFFLINE_ENV_VAR, default=True)
        env = {name: value for name, value in _QUIET_ENV.items() if name not in os.environ}
        if offline:
            env.update(OFFLINE_ENV)
        with temporary_env(env), loopback_stays_loopback():
            ray.init(address="local", num_cpus=num_cpus, include_dashboard=False, **common)
    _env_set_by_ray = {
        name: env_before.get(name) for name, value in os.environ.items() if env_before.get(name) != value
    }
    _owned_session = True
    return True


def _refused_message(address: str, err: BaseException) -> str:
    """Explain a cluster that answers but refuses ``ray.init`` (usually token authentication)."""
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

