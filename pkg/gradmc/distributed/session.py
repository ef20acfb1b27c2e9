"""Connect this process to Ray: a private local instance by default, the cluster at RAY_ADDRESS if set.

Platform notes (Ray 2.60, DESIGN.md):
- ``ray.init(address="local")`` starts a private instance and ignores RAY_ADDRESS.
- ``ray.init`` on an address where no Ray head answers, or where something else listens (the GCS client
  waits for an HTTP/2 server that never talks), retries forever and ignores SIGTERM, so
  :func:`wait_for_address` checks the address first (TCP and HTTP/2, 30 s by default). ``"auto"`` means
  the address the last ``ray start`` wrote to :func:`ray_address_file`, which stays behind when that head
  dies, so it is checked the same way.
- Ray replaces a loopback host (``127.0.0.1``, ``localhost``) in the address, and in the node IP of a
  private instance, by this machine's outward IP, so a cluster listening on 127.0.0.1 only was
  unreachable. :func:`ensure_ray` turns off Ray's own switch for it (``ray_constants.ENABLE_RAY_CLUSTER``)
  during ``ray.init``.
- Token authentication is on by default (``~/.ray/auth_token``; a multi-node cluster must share it).
- Every Ray head probes cloud metadata servers over HTTP at start-up; private instances therefore start
  offline (HTTP proxies pointed at a closed loopback port; ``GRADMC_RAY_OFFLINE=0`` turns this off).
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from unittest import mock

import ray

from gradmc.errors import ClusterError, InputError

__all__ = ["CONNECT_TIMEOUT_ENV_VAR", "OFFLINE_ENV", "OFFLINE_ENV_VAR", "PRIVATE_DEFAULTS", "ensure_ray",
           "parse_address", "ray_address_file", "shutdown_ray", "temporary_env", "wait_for_address"]

OFFLINE_ENV_VAR = "GRADMC_RAY_OFFLINE"  # 0/false: private instances start online (see ensure_ray)
CONNECT_TIMEOUT_ENV_VAR = "GRADMC_RAY_CONNECT_TIMEOUT_S"  # seconds ensure_ray waits for RAY_ADDRESS (default 30)
_GCS_PORT, _CLIENT_PORT = 6379, 10001  # Ray's defaults: the head's GCS, the Ray Client server (ray://)
_TRUE = ("1", "true", "yes", "on")
_LOCAL_FIX = "unset RAY_ADDRESS (or set it to 'local') to run on a private local Ray instance"

# A closed loopback port: the HTTP requests Ray's head makes at start-up fail at once without leaving the
# machine. Ray's own gRPC ignores proxies (RAY_grpc_enable_http_proxy defaults to 0).
OFFLINE_ENV = {**dict.fromkeys(("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY"), "http://127.0.0.1:9"),
               "no_proxy": "", "NO_PROXY": ""}
"""Environment under which Ray processes start offline (their HTTP requests go to a closed port)."""

PRIVATE_DEFAULTS = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_worker_niceness": "0"}
"""Settings of a private local instance unless the environment sets them: no usage stats, and workers at
nice 0 like the driver. Ray's own default (15) gives a worker a scheduler weight of 36 against 1024 for any
other process, so on a core shared with other work a shard gets almost no CPU (27-37x slower measured)."""

_owned_session = False  # True while the Ray session was started (or connected) by ensure_ray
_env_set_by_ray: dict[str, str | None] = {}  # variables ray.init set in os.environ -> previous values


def parse_address(address: str) -> tuple[str, int] | None:
    """Split a Ray address into (host, port).

    Accepted forms: ``"auto"`` (returns None: the local cluster, see :func:`ray_address_file`), ``"host:port"``,
    ``"host"`` (port 6379), ``"ray://host:port"``, ``"ray://host"`` (port 10001), and IPv6 hosts in
    brackets (``"[::1]:6379"``).

    Raises:
        gradmc.errors.InputError: (a ValueError) if the address is empty, has another scheme, or its port
            is not an int in [1, 65535].
    """
    text = address.strip()
    if not text:
        raise InputError("empty Ray address")
    if text.lower() == "auto":
        return None
    default_port = _GCS_PORT
    if "://" in text:
        scheme, _, text = text.partition("://")
        if scheme.lower() != "ray":
            raise InputError(f"Ray address {address!r}: unsupported scheme {scheme!r} (use host:port or ray://)")
        default_port = _CLIENT_PORT
    text = text.rstrip("/")
    if text.startswith("["):  # [IPv6]:port
        host, _, rest = text[1:].partition("]")
        port_text = rest[1:] if rest.startswith(":") else ""
    elif text.count(":") == 1:
        host, _, port_text = text.partition(":")
    else:  # bare host name or bare IPv6 address
        host, port_text = text, ""
    if not host:
        raise InputError(f"Ray address {address!r} has no host")
    if not port_text:
        return host, default_port
    try:
        port = int(port_text)
    except ValueError:
        port = -1
    if not 1 <= port <= 65535:
        raise InputError(f"Ray address {address!r}: port {port_text!r} is not an int in [1, 65535]")
    return host, port


def ray_address_file() -> Path:
    """Where ``ray start`` records the GCS address that ``RAY_ADDRESS=auto`` connects to: Ray's own
    ``get_ray_address_file`` (``$RAY_TMPDIR/ray/ray_current_cluster``, on Linux by default
    ``/tmp/ray/ray_current_cluster``)."""
    from ray._common.utils import get_ray_address_file

    return Path(get_ray_address_file(None))


def _resolve_auto() -> tuple[str, int, str]:
    """(host, port, description) of the cluster ``RAY_ADDRESS=auto`` means.

    Raises:
        gradmc.errors.ClusterError: if :func:`ray_address_file` is missing, unreadable or holds no address.
    """
    path = ray_address_file()
    fix = f"start one with `ray start --head`, or {_LOCAL_FIX}"
    try:
        recorded = path.read_text().strip()
    except FileNotFoundError:
        raise ClusterError(
            f"RAY_ADDRESS='auto' but no local Ray cluster is running ({path} does not exist): {fix}.") from None
    except OSError as err:
        raise ClusterError(f"RAY_ADDRESS='auto': cannot read {path} ({err}): {fix}.") from err
    with contextlib.suppress(ValueError):
        if (host_port := parse_address(recorded)) is not None:
            return *host_port, f"RAY_ADDRESS='auto' (address {recorded!r} from {path}, left by the last `ray start`)"
    raise ClusterError(f"RAY_ADDRESS='auto': {path} holds no valid Ray address ({recorded!r}); delete it and {fix}.")


# RFC 9113 section 3.4: the client connection preface, then an empty SETTINGS frame (length 0, type 4, flags 0,
# stream 0). An HTTP/2 server (every gRPC server, Ray's among them) first sends its own SETTINGS frame on stream 0.
_HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"


def _http2_problem(host: str, port: int, timeout_s: float) -> str | None:
    """None if an HTTP/2 (gRPC) server answers the connection preface at host:port, else what it did instead.

    Raises:
        OSError: if the TCP connection cannot be opened (refused, unreachable, timed out).
    """
    with socket.create_connection((host, port), timeout=timeout_s) as sock:
        try:
            sock.sendall(_HTTP2_PREFACE)
            head = b""
            while len(head) < 9:  # a frame header
                chunk = sock.recv(9 - len(head))
                if not chunk:
                    return f"it closed the connection after {len(head)} bytes"
                head += chunk
        except TimeoutError:
            return f"it sent nothing within {timeout_s:.1f} s"
        except OSError as err:
            return f"it dropped the connection ({err})"
    if head[3] != 4 or int.from_bytes(head[5:9], "big") & 0x7FFFFFFF:  # type SETTINGS, stream 0
        return f"it answered {head!r}, not with an HTTP/2 SETTINGS frame"
    return None


def wait_for_address(address: str, timeout_s: float = 30.0) -> None:
    """Return once a Ray head answers at the address; retry until ``timeout_s`` has passed.

    Checks that a server accepts TCP connections on the port (the head's GCS, or the Ray Client server for
    ``ray://``) and speaks HTTP/2 there, as Ray's gRPC servers do (TCP only when ``RAY_USE_TLS`` is on). It
    does not check that the cluster accepts this driver (token authentication, Ray version). ``"auto"`` is
    checked at the address recorded in :func:`ray_address_file`.

    Raises:
        gradmc.errors.InputError: (a ValueError) if the address cannot be parsed (see :func:`parse_address`).
        gradmc.errors.ClusterError: (a ConnectionError) if no Ray head answers within timeout_s (nothing
            listens, or what listens does not speak HTTP/2), or (``"auto"``) no cluster address is
            recorded; the message names the address (and for ``"auto"`` the file) and how to fix it.
    """
    host_port = parse_address(address)
    if host_port is None:
        host, port, what = _resolve_auto()
    else:
        (host, port), what = host_port, f"RAY_ADDRESS={address!r}"
    check_http2 = os.environ.get("RAY_USE_TLS", "0").strip().lower() not in _TRUE
    deadline = time.monotonic() + timeout_s
    while True:
        wait = max(0.1, min(3.0, deadline - time.monotonic()))
        try:
            if not check_http2:
                socket.create_connection((host, port), timeout=wait).close()
                return
            if (problem := _http2_problem(host, port, wait)) is None:
                return
        except OSError as err:
            last_error, problem = err, None
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        time.sleep(min(0.5, remaining))
    if problem is not None:
        raise ClusterError(
            f"something answers at {what} ({host}:{port}) but it is not a Ray head: {problem} "
            f"(checked for {timeout_s:g} s). Check the port: RAY_ADDRESS takes the head's GCS port "
            f"(`ray start --head --port=...`, default {_GCS_PORT}; ray:// takes the Ray Client port, default "
            f"{_CLIENT_PORT}), or {_LOCAL_FIX}.")
    flag = "--ray-client-server-port" if "://" in address else "--port"
    stale = " (the file is stale if that head has stopped)" if host_port is None else ""
    raise ClusterError(
        f"no Ray cluster answers at {what}{stale} ({host}:{port}: {last_error}) after {timeout_s:g} s. Start one "
        f"on the head node with `ray start --head {flag}={port}` (and `ray start --address=<head>:<port>` on the "
        f"other nodes), or {_LOCAL_FIX}.")


def _restore(saved: Mapping[str, str | None]) -> None:
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@contextlib.contextmanager
def temporary_env(updates: Mapping[str, str]) -> Iterator[None]:
    """Set environment variables for the duration of the block, then restore the previous values."""
    saved = {name: os.environ.get(name) for name in updates}
    os.environ.update(updates)
    try:
        yield
    finally:
        _restore(saved)


def _connect_timeout() -> float:
    text = os.environ.get(CONNECT_TIMEOUT_ENV_VAR, "").strip()
    if not text:
        return 30.0
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not seconds > 0:
        raise InputError(f"{CONNECT_TIMEOUT_ENV_VAR}={text!r}: expected a positive number of seconds")
    return seconds


def ensure_ray(num_cpus: int | None = None, *, connect_timeout_s: float | None = None,
               offline: bool | None = None) -> bool:
    """Make sure this process is connected to Ray, starting a private local instance if needed.

    - Ray already initialised in this process: reuse it (nothing is checked or changed).
    - ``RAY_ADDRESS`` set and not ``"local"``: :func:`wait_for_address`, then ``ray.init(address=...)``; a
      loopback address is dialled as given. The cluster's nodes must have gradmc installed; with token
      authentication set RAY_AUTH_MODE=token and share ``~/.ray/auth_token``. ``ray://`` needs ``ray[client]``.
    - Otherwise: ``ray.init(address="local", num_cpus=num_cpus)``, a private instance on 127.0.0.1 with no
      dashboard, usage stats off and workers at nice 0 (:data:`PRIVATE_DEFAULTS`). Workers' output is not
      forwarded to the driver in either case.

    Args:
        num_cpus: CPUs of a private local instance (default: all Ray detects); ignored for a cluster.
        connect_timeout_s: seconds to wait for RAY_ADDRESS to answer; default ``$GRADMC_RAY_CONNECT_TIMEOUT_S``,
            else 30.
        offline: start a private instance under :data:`OFFLINE_ENV` (workers inherit it, so shards cannot use
            HTTP); default on unless ``$GRADMC_RAY_OFFLINE`` is 0/false/no/off. The driver's environment is
            restored after start-up.

    Returns:
        True if this call started the instance or connected to the cluster (then :func:`shutdown_ray` ends
        it), False if Ray was already initialised.

    Raises:
        gradmc.errors.ClusterError: (a ConnectionError) if no Ray head answers at RAY_ADDRESS in time (see
            :func:`wait_for_address`), or it answers but refuses this driver (usually token authentication).
        gradmc.errors.InputError: (a ValueError) if RAY_ADDRESS cannot be parsed, or
            GRADMC_RAY_CONNECT_TIMEOUT_S is not a positive number.
    """
    global _owned_session, _env_set_by_ray
    if ray.is_initialized():
        return False
    from ray._private import ray_constants

    env_before = dict(os.environ)
    address = os.environ.get("RAY_ADDRESS", "").strip()
    common = {"log_to_driver": False, "logging_level": logging.WARNING, "ignore_reinit_error": True}
    loopback_stays = mock.patch.object(ray_constants, "ENABLE_RAY_CLUSTER", False)
    if address and address.lower() != "local":
        wait_for_address(address, timeout_s=_connect_timeout() if connect_timeout_s is None else connect_timeout_s)
        try:
            with loopback_stays:
                ray.init(address=address, **common)
        except ConnectionError as err:
            raise ClusterError(_refused_message(address, err)) from err
    else:
        env = {name: value for name, value in PRIVATE_DEFAULTS.items() if name not in os.environ}
        if offline is None:
            offline = (os.environ.get(OFFLINE_ENV_VAR, "").strip().lower() or "1") in _TRUE
        if offline:
            env.update(OFFLINE_ENV)
        with temporary_env(env), loopback_stays:
            ray.init(address="local", num_cpus=num_cpus, include_dashboard=False, **common)
    _env_set_by_ray = {name: env_before.get(name) for name, value in os.environ.items()
                       if env_before.get(name) != value}
    _owned_session = True
    return True


def _refused_message(address: str, err: BaseException) -> str:
    """Explain a cluster that answers but refuses ``ray.init`` (usually token authentication)."""
    token = "the cluster's token (~/.ray/auth_token, RAY_AUTH_TOKEN or RAY_AUTH_TOKEN_PATH)"
    if os.environ.get("RAY_AUTH_MODE", "").lower() == "token":
        auth = f"RAY_AUTH_MODE=token is set: check that this machine has {token} and that it matches the head's"
    else:
        auth = (f"if the cluster uses token authentication (Ray 2.60 enables it when the head node has "
                f"~/.ray/auth_token), set RAY_AUTH_MODE=token here and give this machine {token}: Ray never sends "
                "a token to an explicit address on its own; on a trusted network the cluster may run with "
                "RAY_AUTH_MODE=disabled")
    return f"Ray at RAY_ADDRESS={address!r} answers but refused this driver ({err}); {auth}."


def shutdown_ray() -> bool:
    """Shut Ray down if :func:`ensure_ray` started (or connected) the current session, and restore the
    environment variables ``ray.init`` set in this process (Ray 2.60 sets ``RAY_AUTH_MODE=token`` and
    ``PYTHONBREAKPOINT``), so later subprocesses do not inherit them.

    Returns:
        True if a session was shut down; False if there was none or someone else owns it (e.g. a caller that
        ran ``ray.init`` itself), which is then left running.
    """
    global _owned_session, _env_set_by_ray
    if not (_owned_session and ray.is_initialized()):
        _owned_session = False
        return False
    ray.shutdown()
    _restore(_env_set_by_ray)
    _owned_session, _env_set_by_ray = False, {}
    return True
