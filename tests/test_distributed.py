"""Ray execution of shards: determinism across worker counts, order, errors, retries, GPUs, addresses.

One private local Ray instance serves the whole module (about 5 s to start here). The shard functions
live in gradmc.distributed.selftest because Ray workers import them by module name and do not see
the tests folder.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pandas as pd
import pytest
import ray

from gradmc.distributed import (
    CONNECT_TIMEOUT_ENV_VAR,
    ensure_ray,
    parse_address,
    ray_runner,
    run_shards,
    shutdown_ray,
    wait_for_address,
)
from gradmc.distributed.localcluster import processes_using
from gradmc.distributed.selftest import ToyShard, toy_shard, worker_info
from gradmc.distributed.session import ray_address_file
from gradmc.errors import ClusterError, ClusterResourceError, InputError
from gradmc.results import validate_metrics
from gradmc.threads import choose_threads

SHARDS = [ToyShard(seed=i, sleep_s=0.3 if i in (0, 3) else 0.0) for i in range(6)]


@pytest.fixture(scope="module")
def ray_session():
    """A private 2-CPU Ray instance for this module; the environment is left as it was found
    (shutdown_ray also removes what ray.init adds: RAY_AUTH_MODE, PYTHONBREAKPOINT)."""

    def environment() -> dict[str, str]:
        return {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}

    env_before = environment()
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("RAY_ADDRESS", raising=False)
        started = ensure_ray(num_cpus=2, offline=True)
        for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "no_proxy", "NO_PROXY"):
            assert os.environ.get(name) == env_before.get(name)  # offline start-up env not leaked
        yield
        if started:
            assert shutdown_ray()
            assert not ray.is_initialized()
    assert environment() == env_before


def free_port() -> int:
    """A local TCP port with nothing listening on it."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


HTTP2_SETTINGS = b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"  # empty SETTINGS frame, what a gRPC server sends first


@contextlib.contextmanager
def fake_server(reply: bytes | None):
    """A 127.0.0.1 server that sends ``reply`` to every connection (None: accepts and stays silent)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.2)
    stop = threading.Event()
    conns = []

    def serve():
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            conns.append(conn)
            if reply is not None:
                conn.sendall(reply)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        stop.set()
        thread.join(timeout=5)
        for conn in conns:
            conn.close()
        server.close()


# --- running shards ------------------------------------------------------------------------------


def test_results_do_not_depend_on_worker_count(ray_session):
    one = pd.concat(run_shards(toy_shard, SHARDS, num_workers=1, progress=None), ignore_index=True)
    two = pd.concat(run_shards(toy_shard, SHARDS, num_workers=2, progress=None), ignore_index=True)
    pd.testing.assert_frame_equal(one, two)
    in_process = pd.concat([toy_shard(shard) for shard in SHARDS], ignore_index=True)
    pd.testing.assert_frame_equal(one, in_process)
    validate_metrics(one)
    assert one["seed"].unique().tolist() == list(range(6))


def test_results_follow_shard_order_not_completion_order(ray_session):
    shards = [ToyShard(seed=10), ToyShard(seed=11, sleep_s=0.6), ToyShard(seed=12), ToyShard(seed=13)]
    results = run_shards(toy_shard, shards, num_workers=2, progress=None)
    assert [int(df["seed"].iloc[0]) for df in results] == [10, 11, 12, 13]
    infos = run_shards(worker_info, list(range(5)), progress=None)
    assert [info["shard"] for info in infos] == ["0", "1", "2", "3", "4"]


def test_shard_exception_names_the_shard(ray_session):
    shards = [ToyShard(seed=1), ToyShard(seed=7, fail=True), ToyShard(seed=2)]
    with pytest.raises(RuntimeError) as info:
        run_shards(toy_shard, shards, num_workers=2, progress=None)
    message = str(info.value)
    assert "shard 1 ToyShard(seed=7" in message and "fail=True" in message
    assert "ValueError: toy failure in shard seed=7" in message
    assert "toy_shard" in message


def test_dead_worker_is_retried(ray_session, tmp_path):
    marker = tmp_path / "crashed_once"
    shard = ToyShard(seed=3, crash_marker=str(marker))
    (result,) = run_shards(toy_shard, [shard], max_retries=1, progress=None)
    assert marker.exists()  # the first attempt did die
    pd.testing.assert_frame_equal(result, toy_shard(ToyShard(seed=3, crash_marker=str(marker))))


def test_dead_worker_without_retries_raises(ray_session, tmp_path):
    shard = ToyShard(seed=4, crash_marker=str(tmp_path / "crash"))
    with pytest.raises(RuntimeError, match=r"shard 0 ToyShard\(seed=4.*after 0 retries"):
        run_shards(toy_shard, [shard], max_retries=0, progress=None)


def test_threads_per_worker_sets_torch_threads(ray_session):
    """A shard's torch threads are what the thread policy chose for threads_per_worker: at most 2 (one when the
    machine's other core was busy as the worker started, e.g. under pytest-xdist), and exactly 1 for 1."""
    infos = run_shards(worker_info, ["a", "b"], threads_per_worker=2, progress=None)
    for info in infos:
        choice = info["thread_choice"]
        assert choice["requested"] == 2 and choice["mode"] == "auto" and info["torch_threads"] == choice["threads"]
        assert choice["threads"] == choose_threads(2, choice["busy"], choice["cpus"])
    infos = run_shards(worker_info, ["c"], threads_per_worker=1, progress=None)
    assert infos[0]["torch_threads"] == 1


def test_workers_of_a_private_instance_run_at_the_drivers_niceness(ray_session):
    """Ray's default worker niceness (15) starves shards on a core shared with any other process; a private
    instance runs them at nice 0 like everything else (unless RAY_worker_niceness was set)."""
    assert "RAY_worker_niceness" not in os.environ  # the start-up default is not leaked into the driver
    infos = run_shards(worker_info, ["a", "b"], progress=None)
    assert {info["pid"] for info in infos}.isdisjoint({os.getpid()})
    assert [info["niceness"] for info in infos] == [os.nice(0)] * 2


def test_actors_beyond_the_clusters_room_are_not_made(ray_session):
    """An actor holds its CPUs for life: on 2 CPUs, 4 one-thread actors would leave 2 pending forever with their
    shards. The pool is cut to the room, said once, and every shard finishes (a watchdog turns a hang into a
    failure)."""
    lines: list[str] = []
    done = threading.Event()
    result: list = []

    def sweep():
        result.append(run_shards(toy_shard, SHARDS, num_workers=4, executor="actors", progress=lines.append,
                                 desc="toy"))
        done.set()

    threading.Thread(target=sweep, daemon=True).start()
    assert done.wait(120), f"the actor sweep did not finish: {lines}"
    for got, shard in zip(result[0], SHARDS, strict=True):
        pd.testing.assert_frame_equal(got, toy_shard(shard))
    assert lines[0] == "[toy] Ray holds 2 actors of 1 CPU at once: a pool of 2, not 4"
    assert lines[1] == "[toy] 6 shards, 2 at a time"


def test_the_default_pool_is_what_the_cluster_holds(ray_session, monkeypatch):
    """Without num_workers, as many shards run at once as the resources hold: CPUs // threads on this 2-CPU
    instance, and for GPU shards also GPUs // GPUs per shard."""
    lines: list[str] = []
    run_shards(toy_shard, SHARDS[:4], progress=lines.append, desc="toy")
    assert lines[0] == "[toy] 4 shards, 2 at a time"
    monkeypatch.setattr(ray, "cluster_resources", lambda: {"CPU": 16.0, "GPU": 2.0})
    assert ray_runner._room(1, 0) == 16
    assert ray_runner._room(4, 0) == 4
    assert ray_runner._room(1, 0.5) == 4
    assert ray_runner._room(1, 1) == 2
    assert ray_runner._room(32, 0) == 1  # at least one (feasibility is checked before)


def test_progress_lines(ray_session):
    lines: list[str] = []
    run_shards(toy_shard, SHARDS[:4], num_workers=2, progress=lines.append, desc="toy")
    assert lines[0] == "[toy] 4 shards, 2 at a time"
    shard_lines = [line for line in lines[1:] if " finished in " in line]
    assert len(shard_lines) == 4, lines  # one line per finished shard, naming it
    assert all(re.fullmatch(r"\[toy\] shard \d \(.*seed=\d+.*\) finished in \d+\.\d+s", line) for line in shard_lines)
    pattern = re.compile(r"\[toy\] (\d)/4 done \((\d+)%\), elapsed \d+\.\d+s, eta \d+\.\d+s")
    matches = [pattern.fullmatch(line) for line in lines[1:] if line not in shard_lines]
    assert all(matches), lines
    assert [int(m.group(1)) for m in matches] == [1, 2, 3, 4]
    assert lines[-1].startswith("[toy] 4/4 done (100%)") and lines[-1].endswith("eta 0.0s")


def test_gpus_on_a_cpu_only_cluster_fail_fast(ray_session):
    if ray.cluster_resources().get("GPU", 0):
        pytest.skip("this Ray instance has GPUs")
    start = time.monotonic()
    with pytest.raises(ClusterResourceError, match="no GPUs") as info:
        run_shards(toy_shard, SHARDS[:2], num_gpus_per_shard=0.5, progress=None)
    assert isinstance(info.value, RuntimeError)  # as before the user-error family
    message = str(info.value)
    assert "set device: cpu (or gpus_per_shard: 0) in the config" in message
    assert "RAY_ADDRESS" in message and "num_gpus_per_shard=0" in message
    assert time.monotonic() - start < 5


def test_too_many_threads_per_shard_fail_fast(ray_session):
    with pytest.raises(ClusterResourceError, match="no Ray node can run a shard needing 64 CPU"):
        run_shards(toy_shard, SHARDS[:1], threads_per_worker=64, progress=None)


def test_argument_checks_and_empty_input():
    assert run_shards(toy_shard, [], progress=None) == []
    with pytest.raises(ValueError, match="num_workers"):
        run_shards(toy_shard, SHARDS, num_workers=0)
    with pytest.raises(ValueError, match="threads_per_worker"):
        run_shards(toy_shard, SHARDS, threads_per_worker=0)


def test_ensure_ray_reuses_a_running_instance(ray_session, monkeypatch):
    monkeypatch.setenv("RAY_ADDRESS", f"127.0.0.1:{free_port()}")  # not even looked at
    assert ensure_ray() is False
    assert ray.is_initialized()


def test_run_scaling_writes_consistent_timings(ray_session, tmp_path):
    """Tiny scaling benchmark on the module's 2-CPU instance: the JSON's timings obey the scheduling
    limits (one worker: shards run one after another; two: at most two at a time)."""
    from gradmc.bench.scaling import BusyShard, busy_shard, run_scaling

    out = tmp_path / "bench" / "scaling.json"
    result = run_scaling(out, num_shards=4, work_s=0.05, noop_shards=8, workers=(1, 2), progress=None)
    assert json.loads(out.read_text()) == result
    assert result["ray_instance"] == "already running" and result["iterations_per_shard"] > 0
    one, two = result["sweeps"]["1"], result["sweeps"]["2"]
    assert one["wall_s"] >= 0.99 * sum(one["shard_s"])  # never two shards at once
    assert two["wall_s"] >= 0.99 * sum(two["shard_s"]) / 2
    assert one["speedup"] == 1.0 and two["speedup"] == pytest.approx(one["wall_s"] / two["wall_s"])
    assert two["efficiency"] == pytest.approx(two["speedup"] / 2)
    assert 0 < result["noop"]["1"]["per_shard_s"] == result["noop"]["1"]["wall_s"] / 8
    assert busy_shard(BusyShard(0, 1000))["checksum"] == busy_shard(BusyShard(1, 1000))["checksum"]
    with pytest.raises(ValueError, match="work_s > 0"):
        run_scaling(out, work_s=0)


# --- cluster addresses ---------------------------------------------------------------------------


def test_unreachable_ray_address_raises_connection_error_quickly(monkeypatch):
    port = free_port()
    monkeypatch.setenv("RAY_ADDRESS", f"127.0.0.1:{port}")
    monkeypatch.setattr(ray, "is_initialized", lambda: False)  # as in a fresh driver process
    start = time.monotonic()
    with pytest.raises(ClusterError) as info:
        ensure_ray(connect_timeout_s=2)
    elapsed = time.monotonic() - start
    assert 1.5 <= elapsed < 10
    message = str(info.value)
    assert f"127.0.0.1:{port}" in message
    assert "ray start --head" in message and "unset RAY_ADDRESS" in message


def test_wait_for_address_returns_when_an_http2_server_answers():
    with fake_server(HTTP2_SETTINGS) as port:
        start = time.monotonic()
        wait_for_address(f"127.0.0.1:{port}", timeout_s=5)
        assert time.monotonic() - start < 2


@pytest.mark.parametrize(
    ("reply", "problem"),
    [(None, "it sent nothing within"), (b"HTTP/1.0 400 Bad Request\r\n\r\n", "not with an HTTP/2 SETTINGS frame")],
)
def test_something_else_listening_is_not_a_ray_head(reply, problem, monkeypatch):
    """Before the HTTP/2 check, ray.init waited forever on such a port."""
    monkeypatch.delenv("RAY_USE_TLS", raising=False)
    with fake_server(reply) as port:
        start = time.monotonic()
        with pytest.raises(ClusterError) as info:
            wait_for_address(f"127.0.0.1:{port}", timeout_s=1.5)
        assert 1.0 <= time.monotonic() - start < 6
        message = str(info.value)
        assert f"127.0.0.1:{port}" in message and "is not a Ray head" in message and problem in message
        assert "Check the port" in message and "unset RAY_ADDRESS" in message
        monkeypatch.setenv("RAY_USE_TLS", "1")  # TLS handshakes are not HTTP/2 prefaces: TCP only
        wait_for_address(f"127.0.0.1:{port}", timeout_s=1.5)


def test_connect_timeout_from_the_environment(monkeypatch):
    port = free_port()
    monkeypatch.setenv("RAY_ADDRESS", f"127.0.0.1:{port}")
    monkeypatch.setattr(ray, "is_initialized", lambda: False)  # as in a fresh driver process
    monkeypatch.setenv(CONNECT_TIMEOUT_ENV_VAR, "1")
    start = time.monotonic()
    with pytest.raises(ClusterError, match="after 1 s"):
        ensure_ray()
    assert time.monotonic() - start < 5
    for bad in ("soon", "0", "-3"):
        monkeypatch.setenv(CONNECT_TIMEOUT_ENV_VAR, bad)
        with pytest.raises(InputError, match=f"{CONNECT_TIMEOUT_ENV_VAR}='{bad}': expected a positive number"):
            ensure_ray()


# RAY_ADDRESS=auto: Ray reads <ray temp dir>/ray_current_cluster; RAY_TMPDIR moves that dir to tmp_path
# (the real /tmp/ray is never touched).


def test_ray_address_file_is_where_ray_looks(tmp_path, monkeypatch):
    from ray._common.utils import get_ray_address_file

    monkeypatch.delenv("RAY_TMPDIR", raising=False)
    assert ray_address_file() == Path(get_ray_address_file(None))
    monkeypatch.setenv("RAY_TMPDIR", str(tmp_path))
    assert ray_address_file() == tmp_path / "ray" / "ray_current_cluster" == Path(get_ray_address_file(None))


def test_auto_address_with_a_live_recorded_cluster_returns(tmp_path, monkeypatch):
    monkeypatch.setenv("RAY_TMPDIR", str(tmp_path))
    (tmp_path / "ray").mkdir()
    with fake_server(HTTP2_SETTINGS) as port:
        (tmp_path / "ray" / "ray_current_cluster").write_text(f"127.0.0.1:{port}\n")
        start = time.monotonic()
        wait_for_address("auto", timeout_s=5)
        assert time.monotonic() - start < 2


def test_auto_address_with_a_stale_recorded_cluster_fails_fast(tmp_path, monkeypatch):
    monkeypatch.setenv("RAY_TMPDIR", str(tmp_path))
    monkeypatch.setenv("RAY_ADDRESS", "auto")
    monkeypatch.setattr(ray, "is_initialized", lambda: False)  # as in a fresh driver process
    (tmp_path / "ray").mkdir()
    address_file = tmp_path / "ray" / "ray_current_cluster"
    port = free_port()
    address_file.write_text(f"127.0.0.1:{port}")  # what a head that has since died left behind
    start = time.monotonic()
    with pytest.raises(ClusterError) as info:
        ensure_ray(connect_timeout_s=1)
    assert 0.5 <= time.monotonic() - start < 10
    message = str(info.value)
    assert str(address_file) in message and f"127.0.0.1:{port}" in message and "'auto'" in message
    assert "ray start --head" in message and "unset RAY_ADDRESS" in message


def test_auto_address_without_a_recorded_cluster(tmp_path, monkeypatch):
    monkeypatch.setenv("RAY_TMPDIR", str(tmp_path))
    start = time.monotonic()
    with pytest.raises(ClusterError, match="no local Ray cluster is running") as info:
        wait_for_address("AUTO", timeout_s=30)
    assert time.monotonic() - start < 1
    message = str(info.value)
    assert str(tmp_path / "ray" / "ray_current_cluster") in message
    assert "ray start --head" in message and "unset RAY_ADDRESS" in message
    (tmp_path / "ray").mkdir()
    (tmp_path / "ray" / "ray_current_cluster").write_text("not an address:x")
    with pytest.raises(ClusterError, match="holds no valid Ray address"):
        wait_for_address("auto", timeout_s=30)


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        ("auto", None),
        ("AUTO", None),
        ("10.0.0.5:6380", ("10.0.0.5", 6380)),
        ("head-node", ("head-node", 6379)),
        ("ray://head-node:10002", ("head-node", 10002)),
        ("ray://head-node", ("head-node", 10001)),
        ("[::1]:6379", ("::1", 6379)),
        (" 127.0.0.1:6379/ ", ("127.0.0.1", 6379)),
    ],
)
def test_parse_address(address, expected):
    assert parse_address(address) == expected


@pytest.mark.parametrize("address", ["", "host:port", "host:0", "host:70000", "http://head:8265", ":6379"])
def test_parse_address_rejects_malformed(address):
    with pytest.raises(InputError):
        parse_address(address)


# --- a real cluster address (slow: starts a second Ray head) --------------------------------------

CLUSTER_DRIVER = """
from gradmc.distributed import ensure_ray, run_shards, shutdown_ray
from gradmc.distributed.selftest import ToyShard, toy_shard
import pandas as pd
assert ensure_ray(connect_timeout_s=60)
df = pd.concat(run_shards(toy_shard, [ToyShard(seed=i) for i in range(3)], progress=None))
assert df.equals(pd.concat([toy_shard(ToyShard(seed=i)) for i in range(3)]))
assert shutdown_ray()
print("CLUSTER OK")
"""


@pytest.mark.slow
def test_ray_address_of_a_running_cluster_is_used():
    """``ray start --head`` on 127.0.0.1 in its own process group and its own temp folder (the shared
    /tmp/ray and its ray_current_cluster stay untouched), then a driver with RAY_ADDRESS=127.0.0.1:port."""
    port = free_port()
    temp_dir = tempfile.mkdtemp(prefix="gradmc-rs-", dir="/tmp")  # short: Ray's socket paths live below
    offline = {
        name: "http://127.0.0.1:9" for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY")
    }
    head_env = {**os.environ, **offline, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled",
                "RAY_TMPDIR": temp_dir}
    head = subprocess.Popen(
        [
            os.path.join(os.path.dirname(sys.executable), "ray"),
            "start",
            "--head",
            f"--port={port}",
            "--node-ip-address=127.0.0.1",
            "--num-cpus=1",
            "--include-dashboard=false",
            "--block",
        ],
        env=head_env,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        driver_env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
        driver_env["RAY_ADDRESS"] = f"127.0.0.1:{port}"
        proc = subprocess.run(
            [sys.executable, "-c", CLUSTER_DRIVER],
            env=driver_env,
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert "CLUSTER OK" in proc.stdout, proc.stderr[-3000:]
    finally:
        os.killpg(head.pid, signal.SIGKILL)  # `ray start --block` ignores SIGTERM here
        head.wait(timeout=30)
        for pid in processes_using(Path(temp_dir)):  # anything of this head outside its group
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        shutil.rmtree(temp_dir, ignore_errors=True)
