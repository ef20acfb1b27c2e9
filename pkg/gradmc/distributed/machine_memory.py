"""How much memory this process may use: the smallest of physical memory, cgroup limits and the SLURM allocation.

Physical memory alone overstates what a job may use in a container or a SLURM job, where the kernel's
cgroup or the scheduler kills a process long before the machine runs out. :func:`memory_limit` takes the
smallest of:

- the machine's physical memory (psutil);
- the cgroup v2 limit: ``memory.max`` of this process's cgroup (from ``/proc/self/cgroup``) and of every
  cgroup above it up to ``/sys/fs/cgroup`` (``max`` means no limit);
- the cgroup v1 limit: ``memory.limit_in_bytes`` likewise under ``/sys/fs/cgroup/memory`` (values of
  :data:`V1_NO_LIMIT` or more mean no limit: v1 writes "unlimited" as about 2**63);
- SLURM's allocation on this node: ``SLURM_MEM_PER_NODE`` (MiB; 0 means all of the node), else
  ``SLURM_MEM_PER_CPU`` (MiB) times ``SLURM_CPUS_ON_NODE``.

Each source that cannot be read (no such file, not a number) is left out. :func:`format_bytes` writes a
size for messages (never "0 MiB" for a nonzero size).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import psutil

__all__ = ["CGROUP_ROOT", "PROC_CGROUP", "V1_NO_LIMIT", "cgroup_v1_limit", "cgroup_v2_limit", "format_bytes",
           "memory_limit", "physical_memory_bytes", "slurm_limit"]

CGROUP_ROOT = Path("/sys/fs/cgroup")
"""Where the cgroup file systems are mounted."""
PROC_CGROUP = Path("/proc/self/cgroup")
"""This process's cgroup memberships (``hierarchy:controllers:path`` lines)."""
V1_NO_LIMIT = 1 << 60
"""cgroup v1 limits at or above this (1 EiB) mean no limit."""

_MIB = 1 << 20


def physical_memory_bytes() -> int | None:
    """This machine's physical memory in bytes (``psutil.virtual_memory().total``), or None where it cannot be
    read."""
    try:
        return int(psutil.virtual_memory().total)
    except (OSError, RuntimeError, NotImplementedError):
        return None


def _own_cgroup(controller: str | None) -> str:
    """This process's cgroup path: of the v2 line (``0::path``) when ``controller`` is None, else of the v1
    line whose controllers include ``controller``; "/" where ``/proc/self/cgroup`` says nothing."""
    try:
        lines = PROC_CGROUP.read_text().splitlines()
    except OSError:
        return "/"
    for line in lines:
        fields = line.split(":", 2)
        if len(fields) != 3:
            continue
        _, controllers, path = fields
        if (controller is None and controllers == "") or (controller in controllers.split(",")):
            return path
    return "/"


def _smallest_limit(mount: Path, own: str, name: str, no_limit: int | None) -> tuple[int, Path] | None:
    """The smallest number in file ``name`` of the cgroup ``mount/own`` and of each cgroup above it."""
    folder = mount / own.strip("/")
    found = None
    while True:
        path = folder / name
        try:
            value = int(path.read_text().strip())
        except (OSError, ValueError):  # absent, or "max"
            value = None
        if value is not None and value > 0 and (no_limit is None or value < no_limit):
            if found is None or value < found[0]:
                found = (value, path)
        if folder == mount or mount not in folder.parents:
            return found
        folder = folder.parent


def cgroup_v2_limit() -> tuple[int, str] | None:
    """(bytes, source) of the smallest cgroup v2 ``memory.max`` over this process's cgroup and those above it."""
    found = _smallest_limit(CGROUP_ROOT, _own_cgroup(None), "memory.max", None)
    return None if found is None else (found[0], f"the cgroup v2 limit, {found[1]}")


def cgroup_v1_limit() -> tuple[int, str] | None:
    """(bytes, source) of the smallest cgroup v1 ``memory.limit_in_bytes`` below :data:`V1_NO_LIMIT` over this
    process's memory cgroup and those above it."""
    found = _smallest_limit(CGROUP_ROOT / "memory", _own_cgroup("memory"), "memory.limit_in_bytes", V1_NO_LIMIT)
    return None if found is None else (found[0], f"the cgroup v1 limit, {found[1]}")


def _env_int(environ: Mapping[str, str], name: str) -> int | None:
    try:
        return int(environ.get(name, ""))
    except ValueError:
        return None


def slurm_limit(environ: Mapping[str, str] | None = None) -> tuple[int, str] | None:
    """(bytes, source) of the SLURM job's memory on this node, from ``environ`` (default ``os.environ``):
    ``SLURM_MEM_PER_NODE`` MiB if positive, else ``SLURM_MEM_PER_CPU`` x ``SLURM_CPUS_ON_NODE`` MiB; None
    outside SLURM."""
    environ = os.environ if environ is None else environ
    per_node = _env_int(environ, "SLURM_MEM_PER_NODE")
    if per_node is not None and per_node > 0:
        return per_node * _MIB, f"the SLURM allocation, SLURM_MEM_PER_NODE={per_node}"
    per_cpu, cpus = _env_int(environ, "SLURM_MEM_PER_CPU"), _env_int(environ, "SLURM_CPUS_ON_NODE")
    if per_cpu is not None and cpus is not None and per_cpu > 0 and cpus > 0:
        return per_cpu * cpus * _MIB, f"the SLURM allocation, SLURM_MEM_PER_CPU={per_cpu} x SLURM_CPUS_ON_NODE={cpus}"
    return None


def memory_limit() -> tuple[int, str] | None:
    """(bytes, source): the smallest of physical memory, the cgroup v2 and v1 limits and the SLURM allocation
    (module docstring), with a phrase naming where it came from; None if none of them can be read."""
    physical = physical_memory_bytes()
    found = [(physical, "physical memory")] if physical else []
    found += [limit for limit in (cgroup_v2_limit(), cgroup_v1_limit(), slurm_limit()) if limit is not None]
    return min(found, key=lambda limit: limit[0], default=None)


def format_bytes(size: float) -> str:
    """A size for messages: ``512 bytes``, ``12.5 KiB``, ``300.0 MiB``, ``1.5 GiB`` (one decimal, the largest
    unit that keeps the number at least 1)."""
    size = float(size)
    if abs(size) < 1024:
        return f"{size:.0f} byte" + ("" if size == 1 else "s")
    for unit in ("KiB", "MiB", "GiB"):
        size /= 1024
        if abs(round(size, 1)) < 1024:
            return f"{size:.1f} {unit}"
    return f"{size / 1024:.1f} TiB"
