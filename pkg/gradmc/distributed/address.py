"""Parse a Ray cluster address and check that a Ray head answers there before ``ray.init``.

``ray.init(address=...)`` on an address where no cluster runs retries forever and ignores SIGTERM
(DESIGN.md, platform notes), and so does an address where something else listens (the GCS client
waits for an HTTP/2 server that never talks), which would hang a Snakemake job;
:func:`wait_for_address` fails within its timeout with a message that says how to fix it instead.
``"auto"`` resolves, as in Ray, to the address that the last ``ray start`` on this machine wrote to
``<ray temp dir>/ray_current_cluster``, which stays behind when that head dies, so it is checked the
same way.
"""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

from gradmc.errors import ClusterError, InputError

__all__ = [
    "RAY_GCS_DEFAULT_PORT",
    "RAY_CLIENT_DEFAULT_PORT",
    "parse_address",
    "ray_address_file",
    "wait_for_address",
]

RAY_GCS_DEFAULT_PORT = 6379
"""Port of the head node's GCS, what ``ray start --head`` listens on by default."""

RAY_CLIENT_DEFAULT_PORT = 10001
"""Port of the Ray Client server on the head node (``ray://`` addresses)."""


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
    default_port = RAY_GCS_DEFAULT_PORT
    if "://" in text:
        scheme, _, text = text.partition("://")
        if scheme.lower() != "ray":
            raise InputError(
                f"Ray address {address!r}: unsupported scheme {scheme!r} (use host:port or ray://)"
            )
        default_port = RAY_CLIENT_DEFAULT_PORT
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
    """Where ``ray start`` records the GCS address (``"host:port"``) that ``RAY_ADDRESS=auto`` connects to:
    Ray's own ``get_ray_address_file`` (``$RAY_TMPDIR/ray/ray_current_cluster``, else under the system temp
    folder, ``/tmp/ray/ray_current_cluster`` on Linux)."""
    from ray._common.utils import get_ray_address_file

    return Path(get_ray_address_file(None))


def _resolve_auto() -> tuple[str, int, str]:
    """(host, port, description) of the cluster ``RAY_ADDRESS=auto`` means, from :func:`ray_address_file`.

    Raises:
        gradmc.errors.ClusterError: (a ConnectionError) if the file is missing (no local cluster),
            unreadable or holds no valid address.
    """
    path = ray_address_file()
    fix = (
        "start one with `ray start --head`, or unset RAY_ADDRESS (or set it to 'local') to run on a "
        "private local Ray instance"
    )
    try:
        recorded = path.read_text().strip()
    except FileNotFoundError:
        raise ClusterError(
            f"RAY_ADDRESS='auto' but no local Ray cluster is running ({path} does not exist): {fix}."
        ) from None
    except OSError as err:
        raise ClusterError(f"RAY_ADDRESS='auto': cannot read {path} ({err}): {fix}.") from err
    try:
        host_port = parse_address(recorded)
    except ValueError:
        host_port = None
    if host_port is None:
        raise ClusterError(
            f"RAY_ADDRESS='auto': {path} holds no valid Ray address ({recorded!r}); delete it and {fix}."
        )
    host, port = host_port
    return host, port, f"RAY_ADDRESS='auto' (address {recorded!r} read from {path}, left by the last `ray start`)"


# RFC 9113 section 3.4: the client connection preface, then an empty SETTINGS frame (length 0, type 4,
# flags 0, stream 0). An HTTP/2 server (every gRPC server, Ray's GCS and Ray Client server among them)
# answers with its own SETTINGS frame on stream 0 as the first thing it sends.
_HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
_FRAME_HEADER_BYTES = 9
_SETTINGS_FRAME = 4


def _http2_problem(host: str, port: int, timeout_s: float) -> str | None:
    """Open a TCP connection and check that an HTTP/2 (gRPC) server answers the connection preface.

    Returns:
        None if the server's first frame is SETTINGS on stream 0; otherwise what it did instead.

    Raises:
        OSError: if the TCP connection cannot be opened (refused, unreachable, timed out).
    """
    with socket.create_connection((host, port), timeout=timeout_s) as sock:
        sock.settimeout(timeout_s)
        try:
            sock.sendall(_HTTP2_PREFACE)
            head = b""
            while len(head) < _FRAME_HEADER_BYTES:
                chunk = sock.recv(_FRAME_HEADER_BYTES - len(head))
                if not chunk:
                    return f"it closed the connection after {len(head)} bytes"
                head += chunk
        except TimeoutError:
            return f"it sent nothing within {timeout_s:.1f} s"
        except OSError as err:
            return f"it dropped the connection ({err})"
    if head[3] != _SETTINGS_FRAME or int.from_bytes(head[5:9], "big") & 0x7FFFFFFF:
        return f"it answered {head!r}, not with an HTTP/2 SETTINGS frame"
    return None


def wait_for_address(address: str, timeout_s: float = 30.0, interval_s: float = 0.5) -> None:
    """Return once a Ray head answers at the address; retry until ``timeout_s`` has passed.

    Checks that a server accepts TCP connections on the port (the head node's GCS, or the Ray Client
    server for ``ray://``) and speaks HTTP/2 there, as Ray's gRPC servers do (skipped when
    ``RAY_USE_TLS`` is on: the handshake then starts with TLS). It does not check that the cluster
    accepts this driver (token authentication, Ray version). ``"auto"`` is checked at the address
    recorded in :func:`ray_address_file`, where Ray 2.60 looks first (a stale file left by a dead head
    would make ``ray.init`` retry forever).

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
    check_http2 = os.environ.get("RAY_USE_TLS", "0").strip().lower() not in ("1", "true", "yes", "on")
    deadline = time.monotonic() + timeout_s
    last_error: OSError | None = None
    problem: str | None = None
    while True:
        remaining = deadline - time.monotonic()
        wait = max(0.1, min(3.0, remaining))
        try:
            if not check_http2:
                socket.create_connection((host, port), timeout=wait).close()
                return
            problem = _http2_problem(host, port, wait)
            if problem is None:
                return
        except OSError as err:
            last_error, problem = err, None
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        time.sleep(min(interval_s, remaining))
    if "://" in address:
        start_hint = f"`ray start --head --ray-client-server-port={port}`"
    else:
        start_hint = f"`ray start --head --port={port}`"
    stale = " (the file is stale if that head has stopped)" if host_port is None else ""
    fix = (
        "unset RAY_ADDRESS (or set it to 'local') to run on a private local Ray instance."
    )
    if problem is not None:
        raise ClusterError(
            f"something answers at {what} ({host}:{port}) but it is not a Ray head: {problem} "
            f"(checked for {timeout_s:g} s). Check the port: RAY_ADDRESS takes the head's GCS port "
            f"(`ray start --head --port=...`, default {RAY_GCS_DEFAULT_PORT}; ray:// takes the Ray "
            f"Client port, default {RAY_CLIENT_DEFAULT_PORT}), or {fix}"
        )
    raise ClusterError(
        f"no Ray cluster answers at {what}{stale} ({host}:{port}: {last_error}) after "
        f"{timeout_s:g} s. Start one on the head node with {start_hint} (and `ray start "
        f"--address=<head>:<port>` on the other nodes), or {fix}"
    )
