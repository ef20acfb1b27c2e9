"""A multi-node Ray cluster on this machine (a head and worker nodes as separate raylets), for tests and for
checking the cluster code paths (RAY_ADDRESS, shards spread over nodes, node death) without a second machine::

    with local_cluster(worker_nodes=2) as cluster:
        subprocess.run(["gradmc", "run", ...], env={**os.environ, "RAY_ADDRESS": cluster.address})

Every node listens on 127.0.0.1 only and starts offline (:data:`gradmc.distributed.session.OFFLINE_ENV`), with
usage stats and token authentication off. Its files live in a private temp folder, so the shared ``/tmp/ray``
(and its ``ray_current_cluster``, which ``RAY_ADDRESS=auto`` reads) is never touched. Leaving the block stops
every node and then kills, by process id, any process of the cluster still running; if this Python process is
killed instead, the kernel ends the nodes (Ray starts them with a parent-death signal on Linux).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from gradmc.distributed.session import OFFLINE_ENV, temporary_env

__all__ = ["LocalCluster", "local_cluster", "processes_using"]

# GCS health checks of the nodes every 1 s, dead after 3 misses (Ray's defaults: 3 s, 5 misses), so that a
# killed node is declared dead (and its shards re-run elsewhere) about 3-5 s after it died instead of 15-30 s.
_FAST_FAILURE_DETECTION = {"health_check_period_ms": 1000, "health_check_timeout_ms": 2000,
                           "health_check_failure_threshold": 3}


@dataclass
class LocalCluster:
    """A running local cluster.

    Attributes:
        address: the head's GCS address, ``"127.0.0.1:<port>"``, for RAY_ADDRESS.
        head_node_id: Ray node id (hex) of the head.
        worker_node_ids: Ray node ids (hex) of the live worker nodes, in start order.
        temp_dir: the cluster's private folder (sessions, logs, sockets).
    """

    address: str
    head_node_id: str
    worker_node_ids: list[str]
    temp_dir: Path
    _cluster: Any = field(repr=False)
    _workers: list[Any] = field(default_factory=list, repr=False)
    _dead: list[psutil.Process] = field(default_factory=list, repr=False)

    def kill_worker_node(self, node_id: str) -> None:
        """Kill the worker node with this id (hex) at once: raylet and its workers, no graceful drain,
        as when a machine fails. Shards running there die with it.

        Raises:
            ValueError: if node_id is not a live worker node of this cluster.
        """
        if node_id not in self.worker_node_ids:
            raise ValueError(f"{node_id!r} is not a live worker node of this cluster: {self.worker_node_ids}")
        index = self.worker_node_ids.index(node_id)
        node = self._workers.pop(index)
        self._dead.extend(_process_tree([node]))  # checked at exit like the live nodes' processes
        self._cluster.remove_node(node, allow_graceful=False)
        self.worker_node_ids.pop(index)

    def task_node_ids(self, name_prefix: str) -> dict[str, set[str]]:
        """Node ids (hex) each task whose name starts with name_prefix ran on, from the GCS's task
        events (``run_shards`` names its tasks ``desc[i]``), for any driver that used this cluster.
        Ray records them about once a second; a finished driver has flushed its own."""
        out: dict[str, set[str]] = {}
        for event in self._cluster.global_state._get_all_task_events():
            name = event.task_info.name
            node = event.state_updates.node_id.hex()
            if name.startswith(name_prefix) and node:
                out.setdefault(name, set()).add(node)
        return out


def processes_using(path: Path) -> list[int]:
    """Process ids (other than this one) whose command line mentions ``path`` (Ray's agents and
    workers rename themselves, ``ray::...``, and are found through :func:`local_cluster`'s process
    tree instead)."""
    needle = str(path)
    return [proc.pid for proc in psutil.process_iter(["cmdline"])
            if proc.pid != os.getpid() and needle in " ".join(proc.info["cmdline"] or ())]


def _process_tree(nodes) -> list[psutil.Process]:
    """The processes Ray started for these nodes (GCS, raylets, monitors, agents, workers)."""
    procs = []
    for node in nodes:
        for infos in node.all_processes.values():
            for info in infos:
                with contextlib.suppress(psutil.Error):
                    proc = psutil.Process(info.process.pid)
                    procs += [proc, *proc.children(recursive=True)]
    return procs


@contextlib.contextmanager
def local_cluster(worker_nodes: int = 2, cpus_per_node: int = 1, head_cpus: int = 0) -> Iterator[LocalCluster]:
    """Start a head and ``worker_nodes`` worker nodes on 127.0.0.1 (80 MiB object store each, fast node failure
    detection); stop them all on exit.

    Args:
        worker_nodes: worker nodes (each a raylet with its own worker processes).
        cpus_per_node: CPUs each worker node offers (Ray's accounting; they share this machine's cores).
        head_cpus: CPUs of the head (0: shards only run on worker nodes).

    Yields:
        LocalCluster, about 2 s per node to start here (head first).

    Raises:
        ValueError: if worker_nodes < 1, cpus_per_node < 1 or head_cpus < 0.
        RuntimeError: on exit, if processes of the cluster were still running after shutdown
            (they have been killed by then).
    """
    if worker_nodes < 1 or cpus_per_node < 1 or head_cpus < 0:
        raise ValueError(f"need worker_nodes >= 1, cpus_per_node >= 1, head_cpus >= 0; got "
                         f"{worker_nodes}, {cpus_per_node}, {head_cpus}")
    from ray.cluster_utils import Cluster

    # Short: Ray's Unix sockets live below it (paths are limited to 107 bytes).
    temp_dir = Path(tempfile.mkdtemp(prefix="gradmc-rc-", dir="/tmp"))
    (temp_dir / "ray").mkdir()
    env = {**OFFLINE_ENV, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled",
           "RAY_TMPDIR": str(temp_dir)}  # RAY_TMPDIR: where Cluster records (and deletes) its address
    common = {"node_ip_address": "127.0.0.1", "temp_dir": str(temp_dir / "ray"),
              "object_store_memory": 80 * 2**20}
    cluster = None
    running = None
    try:
        with temporary_env(env):
            cluster = Cluster(initialize_head=True, shutdown_at_exit=True,
                              head_node_args={"num_cpus": head_cpus, "include_dashboard": False, **common,
                                              "_system_config": _FAST_FAILURE_DETECTION})
            workers = [cluster.add_node(num_cpus=cpus_per_node, **common) for _ in range(worker_nodes)]
            cluster.wait_for_nodes()
        running = LocalCluster(address=cluster.address, head_node_id=cluster.head_node.node_id,
                               worker_node_ids=[node.node_id for node in workers], temp_dir=temp_dir,
                               _cluster=cluster, _workers=workers)
        yield running
    finally:
        tracked = [] if running is None else running._dead
        if cluster is not None:
            tracked += _process_tree(cluster.list_all_nodes())
            with temporary_env(env), contextlib.suppress(Exception):
                cluster.shutdown()
        leftover = _kill_leftovers(tracked, temp_dir)
        shutil.rmtree(temp_dir, ignore_errors=True)
    if leftover:
        raise RuntimeError(f"local Ray cluster in {temp_dir}: processes {leftover} outlived its shutdown "
                           "and were killed")


def _alive(proc: psutil.Process) -> bool:
    with contextlib.suppress(psutil.Error):
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE  # is_running: same pid, same start
    return False


def _kill_leftovers(tracked: list[psutil.Process], temp_dir: Path) -> list[int]:
    """Wait up to 5 s for the cluster's processes (tracked, or naming temp_dir on their command line) to exit,
    then SIGKILL the rest, by pid; returns their pids."""
    deadline = time.monotonic() + 5.0
    while True:
        left = {proc.pid: proc for proc in tracked if _alive(proc)}
        for pid in processes_using(temp_dir):
            with contextlib.suppress(psutil.Error):
                left.setdefault(pid, psutil.Process(pid))
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    for proc in left.values():
        with contextlib.suppress(psutil.Error):
            proc.kill()
    return sorted(left)
