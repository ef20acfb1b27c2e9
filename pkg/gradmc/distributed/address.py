"""Parse a Ray cluster address and check that something answers there before ``ray.init``.

``ray.init(address=...)`` on an address where no cluster runs retries forever and ignores SIGTERM
(DESIGN.md, platform notes), which would hang a Snakemake job; :func:`wait_for_address` fails fast
with a message that says how to fix it instead.
"""

from __future__ import annotations

import socket
import time

__all__ = ["RAY_GCS_DEFAULT_PORT", "RAY_CLIENT_DEFAULT_PORT", "parse_address", "wait_for_address"]

RAY_GCS_DEFAULT_PORT = 6379
"""Port of the head node's GCS, what ``ray start --head`` listens on by default."""

RAY_CLIENT_DEFAULT_PORT = 10001
"""Port of the Ray Client server on the head node (``ray://`` addresses)."""


def parse_address(address: str) -> tuple[str, int] | None:
    """Split a Ray address into (host, port).

    Accepted forms: ``"auto"`` (returns None: Ray finds the local cluster itself), ``"host:port"``,
    ``"host"`` (port 6379), ``"ray://host:port"``, ``"ray://host"`` (port 10001), and IPv6 hosts in
    brackets (``"[::1]:6379"``).

    Raises:
        ValueError: if the address is empty, has another scheme, or its port is not an int in
            [1, 65535].
    """
    text = address.strip()
    if not text:
        raise ValueError("empty Ray address")
    if text.lower() == "auto":
        return None
    default_port = RAY_GCS_DEFAULT_PORT
    if "://" in text:
        scheme, _, text = text.partition("://")
        if scheme.lower() != "ray":
            raise ValueError(
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
        raise ValueError(f"Ray address {address!r} has no host")
    if not port_text:
        return host, default_port
    try:
        port = int(port_text)
    except ValueError:
        port = -1
    if not 1 <= port <= 65535:
        raise ValueError(f"Ray address {address!r}: port {port_text!r} is not an int in [1, 65535]")
    return host, port


def wait_for_address(address: str, timeout_s: float = 30.0, interval_s: float = 0.5) -> None:
    """Return once a TCP connection to the address succeeds; retry until ``timeout_s`` has passed.

    Only checks that a server accepts connections on the port (the head node's GCS, or the Ray
    Client server for ``ray://``); ``"auto"`` is not checked (Ray reports a missing local cluster
    itself, quickly).

    Raises:
        ValueError: if the address cannot be parsed (see :func:`parse_address`).
        ConnectionError: if nothing answers within timeout_s; the message names the address and how
            to fix it.
    """
    host_port = parse_address(address)
    if host_port is None:
        return
    host, port = host_port
    deadline = time.monotonic() + timeout_s
    last_error: OSError | None = None
    while True:
        remaining = deadline - time.monotonic()
        try:
            with socket.create_connection((host, port), timeout=max(0.1, min(3.0, remaining))):
                return
        except OSError as err:
            last_error = err
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        time.sleep(min(interval_s, remaining))
    if "://" in address:
        start_hint = f"`ray start --head --ray-client-server-port={port}`"
    else:
        start_hint = f"`ray start --head --port={port}`"
    raise ConnectionError(
        f"no Ray cluster answers at RAY_ADDRESS={address!r} ({host}:{port}: {last_error}) after "
        f"{timeout_s:g} s. Start one on the head node with {start_hint} (and `ray start "
        "--address=<head>:<port>` on the other nodes), or unset RAY_ADDRESS (or set it to 'local') "
        "to run on a private local Ray instance."
    )
