"""Parse a Ray cluster address and check that something answers there before ``ray.init``.

``ray.init(address=...)`` on an address where no cluster runs retries forever and ignores SIGTERM
(DESIGN.md, platform notes), which would hang a Snakemake job; :func:`wait_for_address` fails fast
with a message that says how to fix it instead. ``"auto"`` resolves, as in Ray, to the address that
the last ``ray start`` on this machine wrote to ``<ray temp dir>/ray_current_cluster``, which stays
behind when that head dies, so it is checked the same way.
"""

from __future__ import annotations

import os
import socket
import sys
import tempfile
import time
from pathlib import Path

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


def ray_address_file() -> Path:
    """Where ``ray start`` records the GCS address (``"host:port"``) that ``RAY_ADDRESS=auto`` connects to.

    As Ray 2.60 computes it (``ray._common.utils.get_ray_address_file``):
    ``$RAY_TMPDIR/ray/ray_current_cluster``, else ``$TMPDIR/ray/...`` on Linux, else
    ``/tmp/ray/ray_current_cluster`` on Linux and macOS (``tempfile.gettempdir()`` elsewhere).
    """
    if "RAY_TMPDIR" in os.environ:
        base = os.environ["RAY_TMPDIR"]
    elif sys.platform.startswith("linux") and "TMPDIR" in os.environ:
        base = os.environ["TMPDIR"]
    elif sys.platform.startswith(("linux", "darwin")):
        base = "/tmp"
    else:
        base = tempfile.gettempdir()
    return Path(base) / "ray" / "ray_current_cluster"


def _resolve_auto() -> tuple[str, int, str]:
    """(host, port, description) of the cluster ``RAY_ADDRESS=auto`` means, from :func:`ray_address_file`.

    Raises:
        ConnectionError: if the file is missing (no local cluster), unreadable or holds no valid address.
    """
    path = ray_address_file()
    fix = (
        "start one with `ray start --head`, or unset RAY_ADDRESS (or set it to 'local') to run on a "
        "private local Ray instance"
    )
    try:
        recorded = path.read_text().strip()
    except FileNotFoundError:
        raise ConnectionError(
            f"RAY_ADDRESS='auto' but no local Ray cluster is running ({path} does not exist): {fix}."
        ) from None
    except OSError as err:
        raise ConnectionError(f"RAY_ADDRESS='auto': cannot read {path} ({err}): {fix}.") from err
    try:
        host_port = parse_address(recorded)
    except ValueError:
        host_port = None
    if host_port is None:
        raise ConnectionError(
            f"RAY_ADDRESS='auto': {path} holds no valid Ray address ({recorded!r}); delete it and {fix}."
        )
    host, port = host_port
    return host, port, f"RAY_ADDRESS='auto' (address {recorded!r} read from {path}, left by the last `ray start`)"


def wait_for_address(address: str, timeout_s: float = 30.0, interval_s: float = 0.5) -> None:
    """Return once a TCP connection to the address succeeds; retry until ``timeout_s`` has passed.

    Only checks that a server accepts connections on the port (the head node's GCS, or the Ray
    Client server for ``ray://``). ``"auto"`` is checked at the address recorded in
    :func:`ray_address_file`, where Ray 2.60 looks first (a stale file left by a dead head would
    make ``ray.init`` retry forever).

    Raises:
        ValueError: if the address cannot be parsed (see :func:`parse_address`).
        ConnectionError: if nothing answers within timeout_s, or (``"auto"``) no cluster address is
            recorded; the message names the address (and for ``"auto"`` the file) and how to fix it.
    """
    host_port = parse_address(address)
    if host_port is None:
        host, port, what = _resolve_auto()
    else:
        (host, port), what = host_port, f"RAY_ADDRESS={address!r}"
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
    stale = " (the file is stale if that head has stopped)" if host_port is None else ""
    raise ConnectionError(
        f"no Ray cluster answers at {what}{stale} ({host}:{port}: {last_error}) after "
        f"{timeout_s:g} s. Start one on the head node with {start_hint} (and `ray start "
        "--address=<head>:<port>` on the other nodes), or unset RAY_ADDRESS (or set it to 'local') "
        "to run on a private local Ray instance."
    )
