"""How much memory this process may use (:func:`memory_limit`): the smallest of physical memory, the cgroup v2
and v1 limits of its cgroup and those above it, and the SLURM allocation on this node. Physical memory alone
overstates it in a container or a SLURM job, where the kernel or the scheduler kills a process long before the
machine runs out. A source that cannot be read (no such file, not a number) is left out.
"""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Mapping
from pathlib import Path

import psutil

__all__ = ["CGROUP_ROOT", "PROC_CGROUP", "V1_NO_LIMIT", "cgroup_v1_limit", "cgroup_v2_limit", "format_bytes",
           "memory_limit", "physical_memory_bytes", "slurm_limit"]

CGROUP_ROOT = Path("/sys/fs/cgroup")  # where the cgroup file systems are mounted
PROC_CGROUP = Path("/proc/self/cgroup")  # this process's cgroups, ``hierarchy:controllers:path`` lines
V1_NO_LIMIT = 1 << 60  # cgroup v1 limits at or above this (1 EiB) mean no limit (v1 writes "unlimited" as ~2**63)
_MIB = 1 << 20


def physical_memory_bytes() -> int | None:
    """This machine's physical memory in bytes (``psutil.virtual_memory().total``), None where unreadable."""
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
        lines = []
    for _, controllers, path in (line.split(":", 2) for line in lines if line.count(":") >= 2):
        if (controllers == "") if controller is None else (controller in controllers.split(",")):
            return path
    return "/"


def _smallest_limit(mount: Path, own: str, name: str, no_limit: int | None) -> tuple[int, Path] | None:
    """The smallest positive number below ``no_limit`` in file ``name`` of the cgroup ``mount/own`` and of each
    cgroup above it, with its file (the deepest on a tie)."""
    folder, found = mount / own.strip("/"), []
    while True:
        with contextlib.suppress(OSError, ValueError):  # absent, or "max"
            if 0 < (value := int((folder / name).read_text().strip())) < (no_limit or math.inf):
                found.append((value, folder / name))
        if folder == mount or mount not in folder.parents:
            return min(found, key=lambda limit: limit[0], default=None)
        folder = folder.parent


def cgroup_v2_limit() -> tuple[int, str] | None:
    """(bytes, source) of the smallest cgroup v2 ``memory.max`` (``max``: no limit) over this process's cgroup
    and those above it."""
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
