"""The thread policy (gradmc.threads): min(requested, free cores at start), GRADMC_THREADS, the CPU probe."""

from __future__ import annotations

import os

import pytest
import torch

from gradmc.errors import InputError
from gradmc.threads import ENV, apply_thread_policy, busy_cores, choose_threads


@pytest.fixture(autouse=True)
def _keep_threads():
    saved = torch.get_num_threads()
    yield
    torch.set_num_threads(saved)


@pytest.mark.parametrize(("requested", "busy", "cpus", "expected"), [
    (2, 0.0, 2, 2),  # idle: what was asked
    (2, 0.3, 2, 2),  # light load: still both
    (2, 1.0, 2, 1),  # one busy process on 2 cores: one thread
    (2, 0.6, 2, 1),  # 1.4 free rounds to 1
    (2, 2.0, 2, 1),  # never fewer than one
    (4, 1.0, 8, 4),  # capped by the request
    (8, 3.2, 8, 5),
    (3, None, 2, 3),  # no probe: the request
])
def test_choose_threads(requested, busy, cpus, expected):
    assert choose_threads(requested, busy, cpus) == expected


def test_choose_threads_refuses_nonsense():
    with pytest.raises(ValueError, match=">= 1"):
        choose_threads(0, 0.0, 2)


def _stat(tmp_path, rows):
    path = tmp_path / "stat"
    lines = ["cpu  0 0 0 0 0 0 0 0 0 0"] + [f"cpu{i} {u} 0 {s} {idle} 0 0 0 0 0 0" for i, (u, s, idle) in
                                            enumerate(rows)]
    path.write_text("\n".join(lines) + "\nintr 1 2 3\n")
    return path


def test_busy_cores_reads_the_affinity_cpus(tmp_path, monkeypatch):
    """Two snapshots of a fake /proc/stat: cpu0 fully busy, cpu1 idle over the window -> 1 busy core; a CPU
    outside the affinity mask does not count."""
    snaps = iter([[(5, 5, 10), (5, 5, 10), (5, 5, 10)], [(9005, 1005, 10), (5, 5, 10010), (10005, 5, 10)]])
    path = tmp_path / "stat"

    def fake_sleep(_):
        _stat(tmp_path, next(snaps))

    _stat(tmp_path, next(snaps))
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    monkeypatch.setattr("gradmc.threads.time.sleep", fake_sleep)
    busy = busy_cores(0.1, stat=path)
    assert busy is not None and 0.9 <= busy <= 1.0 + 1e-9  # minus this process's own (tiny) CPU time


def test_busy_cores_without_proc_stat(tmp_path):
    assert busy_cores(0.01, stat=tmp_path / "missing") is None


def test_apply_modes(monkeypatch):
    monkeypatch.setenv(ENV, "1")
    choice = apply_thread_policy(2)
    assert (choice.threads, choice.mode, choice.busy) == (1, "fixed", None) and torch.get_num_threads() == 1
    monkeypatch.setenv(ENV, "torch")
    torch.set_num_threads(2)
    assert apply_thread_policy(1).threads == 2 and torch.get_num_threads() == 2
    monkeypatch.setenv(ENV, "auto")
    monkeypatch.setattr("gradmc.threads.busy_cores", lambda: 1.0)
    monkeypatch.setattr("gradmc.threads._cpus", lambda: 2)
    choice = apply_thread_policy(2)
    assert (choice.threads, choice.requested, choice.busy) == (1, 2, 1.0) and torch.get_num_threads() == 1
    assert "threads 1 of 2 (1.0 of 2 cores busy" in choice.describe()
    monkeypatch.setattr("gradmc.threads.busy_cores", lambda: 0.1)
    assert apply_thread_policy(2).threads == 2 and torch.get_num_threads() == 2
    probes = []
    monkeypatch.setattr("gradmc.threads.busy_cores", lambda: probes.append(1) or 0.0)
    assert apply_thread_policy(1).threads == 1 and not probes  # one thread: no probe


def test_a_passing_load_is_forgiven(monkeypatch):
    """A busy first probe is repeated: the least busy reading counts, and an idle machine probes once."""
    monkeypatch.setenv(ENV, "auto")
    monkeypatch.setattr("gradmc.threads._cpus", lambda: 2)
    monkeypatch.setattr("gradmc.threads.time.sleep", lambda s: None)
    for readings, threads, probes in (([1.0, 0.1], 2, 2), ([1.0, 1.0, 0.9], 1, 3), ([0.2], 2, 1)):
        seen, calls = iter(readings), []

        def probe(seen=seen, calls=calls):
            calls.append(1)
            return next(seen)

        monkeypatch.setattr("gradmc.threads.busy_cores", probe)
        assert apply_thread_policy(2).threads == threads and len(calls) == probes


@pytest.mark.parametrize("value", ["0", "two", "-1", "1.5"])
def test_bad_setting(monkeypatch, value):
    monkeypatch.setenv(ENV, value)
    with pytest.raises(InputError, match=f"{ENV}=.*expected 'auto', 'torch' or a whole number"):
        apply_thread_policy(2)


@pytest.mark.slow
def test_thread_benchmark_runs_each_candidate_idle_and_busy(tmp_path):
    """The benchmark's plumbing on a tiny run: every candidate in its own process, idle and beside a busy one,
    ratios against the first candidate's idle median, JSON written."""
    from gradmc.bench.threads import run_threads

    candidates = {"one thread": {"GRADMC_THREADS": "1"}, "policy": {"GRADMC_THREADS": "auto"}}
    doc = run_threads(tmp_path / "threads.json", steps=2, repeats=1, warmup=0, rounds=1, candidates=candidates,
                      progress=None)
    res = doc["results"]
    assert set(res) == set(candidates) and res["one thread"]["idle_vs_default"] == 1.0
    for name in candidates:
        for condition in ("idle", "busy"):
            assert res[name][condition]["steps_per_s"] > 0 and len(res[name][condition]["runs"]) == 1
    assert res["one thread"]["idle"]["threads"] == [1] and res["one thread"]["busy"]["threads"] == [1]
    assert (tmp_path / "threads.json").is_file()
    with pytest.raises(InputError, match="rounds"):
        run_threads(tmp_path / "x.json", rounds=0, progress=None)
