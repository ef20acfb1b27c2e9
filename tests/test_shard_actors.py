"""Ray actors for sweeps: a pool of actors, each holding its threads and what its shards
load through load_once, fed one shard at a time; a dead actor is restarted and its shard redone.

Checked against the task path: the same rows in the same order; an actor SIGKILLed mid-shard is restarted
and the sweep has every shard's rows once; an actor that keeps dying stops the sweep naming the shard; a
file every shard reads is loaded once per actor, and again when it changes.
"""

from __future__ import annotations

import pandas as pd
import pytest
from _killer import kill_first_attempt

from gradmc.distributed import run_shards
from gradmc.distributed.selftest import SharedInputShard, ToyShard, shared_input_shard, toy_shard
from gradmc.distributed.shared import clear, load_once, loads
from gradmc.errors import InputError


def fault_free(seeds) -> pd.DataFrame:
    return pd.concat([toy_shard(ToyShard(seed=s)) for s in seeds], ignore_index=True)


def test_actors_return_what_tasks_return_in_shard_order(ray_session):
    shards = [ToyShard(seed=i, sleep_s=0.05 * (5 - i)) for i in range(6)]  # later shards finish first
    got = run_shards(toy_shard, shards, num_workers=2, progress=None, executor="actors")
    tasks = run_shards(toy_shard, shards, num_workers=2, progress=None, executor="tasks")
    pd.testing.assert_frame_equal(pd.concat(got, ignore_index=True), fault_free(range(6)))
    pd.testing.assert_frame_equal(pd.concat(tasks, ignore_index=True), fault_free(range(6)))


@pytest.mark.slow
def test_actor_killed_mid_shard_is_restarted_and_its_shard_redone(ray_session, tmp_path):
    pid_file = tmp_path / "pids"
    shards = [ToyShard(seed=i, sleep_s=0.05) for i in range(6)]
    shards[3] = ToyShard(seed=3, sleep_s=1.0, pid_file=str(pid_file))
    killer, killed = kill_first_attempt(pid_file)
    results = run_shards(toy_shard, shards, num_workers=2, max_retries=2, progress=None, executor="actors")
    killer.join()
    attempts = [int(line.split()[0]) for line in pid_file.read_text().splitlines()]
    assert len(attempts) == 2 and attempts[0] == killed[0] and attempts[1] != killed[0]  # a new process redid it
    df = pd.concat(results, ignore_index=True)
    assert not df.duplicated(["seed", "chain", "step", "metric"]).any()
    pd.testing.assert_frame_equal(df, fault_free(range(6)))


@pytest.mark.slow
def test_actor_that_keeps_dying_names_its_shard(ray_session, tmp_path):
    shards = [ToyShard(seed=0), ToyShard(seed=1, crash_marker=str(tmp_path / "deaths"), crashes=10)]
    with pytest.raises(RuntimeError, match=r"shard 1 .*seed=1.*after 1 retries"):
        run_shards(toy_shard, shards, num_workers=1, max_retries=1, progress=None, executor="actors")
    assert (tmp_path / "deaths").read_text() == "2"  # the first attempt and one retry


def test_user_error_inside_an_actor_is_one_line(ray_session):
    with pytest.raises(InputError, match=r"shard 0 \(seed=0.*toy user error"):
        run_shards(toy_shard, [ToyShard(seed=0, user_error=True)], progress=None, executor="actors")


def test_shared_input_is_loaded_once_per_actor(ray_session, tmp_path):
    path = tmp_path / "shared.bin"
    path.write_bytes(b"x" * 1000)
    shards = [SharedInputShard(i, str(path), sleep_s=0.02) for i in range(8)]
    rows = run_shards(shared_input_shard, shards, num_workers=2, progress=None, executor="actors")
    assert [r["size"] for r in rows] == [1000] * 8
    by_actor = {}
    for r in rows:
        by_actor.setdefault(r["pid"], []).append(r["loads"])
    assert 1 <= len(by_actor) <= 2
    for counts in by_actor.values():  # the first shard on an actor loads; the others find it loaded
        assert counts == sorted(counts) and counts[-1] - counts[0] == 0


def test_load_once_in_process_reloads_a_changed_file(tmp_path):
    from gradmc.distributed.selftest import _read_bytes

    clear()
    path = tmp_path / "f.bin"
    path.write_bytes(b"first")
    before = loads()
    assert load_once(_read_bytes, str(path)) == b"first"
    assert load_once(_read_bytes, str(path)) == b"first" and loads() == before + 1
    path.write_bytes(b"second, longer")
    assert load_once(_read_bytes, str(path)) == b"second, longer" and loads() == before + 2


def test_unknown_executor_is_named(ray_session, monkeypatch):
    with pytest.raises(InputError, match="executor 'threads' is not one of tasks, actors"):
        run_shards(toy_shard, [ToyShard(seed=0)], progress=None, executor="threads")
    monkeypatch.setenv("GRADMC_SHARD_EXECUTOR", "nope")
    with pytest.raises(InputError, match="GRADMC_SHARD_EXECUTOR='nope' is not one of tasks, actors"):
        run_shards(toy_shard, [ToyShard(seed=0)], progress=None)
