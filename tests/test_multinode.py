"""A sweep on a multi-node Ray cluster: a head and two worker nodes on this machine (127.0.0.1 only).

`gradmc run` with RAY_ADDRESS joins the cluster, its shards run on both worker nodes (the GCS's
task events say where), and the Parquet equals a local run's rows. Then a worker node dies mid-sweep:
its shard is re-run on the other node and no row is lost or doubled. The cluster lives in a private
temp folder; gradmc.distributed.localcluster stops it and kills (by pid) anything of it that remains,
also when a test fails. The head has no CPUs, so every shard runs on a worker node.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pytest
import ray
import torch

from gradmc.config import load_config
from gradmc.distributed import ensure_ray, run_shards, shutdown_ray
from gradmc.distributed.localcluster import local_cluster, processes_using
from gradmc.distributed.selftest import ToyShard, toy_shard
from gradmc.experiments import kmc_trajectories
from gradmc.experiments.standard import collect, job_config
from gradmc.results import PROVENANCE_COLUMNS, read_parquet, validate_metrics

ROOT = Path(__file__).resolve().parents[1]
GRADMC = str(Path(sys.executable).with_name("gradmc"))  # the console script: the real entry point
SMOKE = ROOT / "config" / "smoke.yaml"


@pytest.fixture(scope="module")
def cluster():
    assert not ray.is_initialized()
    with local_cluster(worker_nodes=2, cpus_per_node=1, head_cpus=0) as running:
        nodes = {node["NodeID"]: node for node in running._cluster.global_state.node_table()}
        assert set(nodes) == {running.head_node_id, *running.worker_node_ids}
        assert {node["NodeManagerAddress"] for node in nodes.values()} == {"127.0.0.1"}
        assert running.address.startswith("127.0.0.1:")
        yield running
        temp_dir = running.temp_dir
    assert not processes_using(temp_dir)  # nothing of the cluster outlives the block


def local_run(config: dict) -> pd.DataFrame:
    """The same sweep in this process, without Ray (one torch thread, as in a Ray shard)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        shards = kmc_trajectories.shards(job_config("kmc_trajectories", config), {})
        return collect("kmc_trajectories", [kmc_trajectories.run(s) for s in shards])
    finally:
        torch.set_num_threads(threads)


def first_line(path: Path) -> str:
    """The first complete line of a file ("" while there is none)."""
    text = path.read_text() if path.exists() else ""
    return text.split("\n")[0] if "\n" in text else ""


@pytest.mark.slow
def test_cli_sweep_runs_on_both_worker_nodes_and_equals_a_local_run(cluster, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_", "GRADMC_RAY"))}
    env["RAY_ADDRESS"] = cluster.address
    out = tmp_path / "metrics.parquet"
    proc = subprocess.run(
        [GRADMC, "run", "kmc_trajectories", "--config", str(SMOKE), "--workers", "2", "--out", str(out)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=180,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "[kmc_trajectories] 4 shards, 2 at a time" in proc.stderr  # progress lines go to stderr
    where = cluster.task_node_ids("kmc_trajectories[")
    assert sorted(where) == [f"kmc_trajectories[{i}]" for i in range(4)]
    assert set().union(*where.values()) == set(cluster.worker_node_ids)  # both nodes ran shards

    df, provenance = read_parquet(out)
    validate_metrics(df)
    expected = local_run(load_config(str(SMOKE)))
    ignore = ["wall_time_s", *PROVENANCE_COLUMNS]
    assert len(df) == len(expected) == 8
    pd.testing.assert_frame_equal(df.drop(columns=ignore), expected.drop(columns=["wall_time_s"]))


@pytest.mark.slow
def test_worker_node_dies_mid_sweep(cluster, tmp_path, monkeypatch):
    """Kill the worker node that runs shard 1, while it runs. Runs last: that node stays dead."""
    monkeypatch.setenv("RAY_ADDRESS", cluster.address)
    assert ensure_ray()
    nodes_before = list(cluster.worker_node_ids)
    try:
        pid_files = [tmp_path / f"pids{i}" for i in range(6)]
        shards = [ToyShard(seed=i, sleep_s=1.5 if i == 1 else 0.3, pid_file=str(pid_files[i])) for i in range(6)]
        killed: list[str] = []

        def kill_the_node_of_shard_1():
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline and not first_line(pid_files[1]):
                time.sleep(0.02)
            node_id = first_line(pid_files[1]).split()[1]  # "<pid> <node id>" of its first attempt
            cluster.kill_worker_node(node_id)
            killed.append(node_id)

        killer = threading.Thread(target=kill_the_node_of_shard_1)
        killer.start()
        results = run_shards(toy_shard, shards, num_workers=2, max_retries=2, progress=None, desc="death")
        killer.join(timeout=90)
    finally:
        assert shutdown_ray()
    assert len(killed) == 1 and cluster.worker_node_ids == [n for n in nodes_before if n != killed[0]]
    attempts = [pid_file.read_text().splitlines() for pid_file in pid_files]
    assert [len(lines) for lines in attempts] == [1, 2, 1, 1, 1, 1]  # only the shard on the dead node re-ran
    survivor = cluster.worker_node_ids[0]
    assert attempts[1][1].split()[1] == survivor
    df = pd.concat(results, ignore_index=True)
    assert not df.duplicated(["seed", "chain", "step", "metric"]).any()
    pd.testing.assert_frame_equal(df, pd.concat([toy_shard(ToyShard(seed=i)) for i in range(6)], ignore_index=True))
    assert cluster.task_node_ids("death[1]")["death[1]"] == {killed[0], survivor}  # GCS: dead node, then the other
