"""Per-shard results that survive: each finished shard stored at once, a rerun computes
only the missing ones, and nothing reads a shard whose key does not match.

- Kill: a sweep driver is SIGKILLed after k of its n shards are stored; the rerun computes exactly the n - k
  others (counted) and returns what a fault-free run returns.
- Keys: a change to a shard's fields, to a file it names, or to the code digest gives another key; a stored
  file whose footer records another key, or that cannot be read, is ignored with a warning and recomputed.
- The real path: `gradmc run ising_sampling` stores its shards beside --out; after shards are lost or
  damaged, the rerun runs just those and writes the same metrics.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from gradmc.distributed import run_shards
from gradmc.distributed.selftest import ToyShard, toy_shard
from gradmc.distributed.shard_cache import CACHE_KEY, ShardCache, cache_folder_for, run_cached

ROOT = Path(__file__).resolve().parents[1]
GRADMC = str(Path(sys.executable).with_name("gradmc"))



def fault_free(shards) -> list[pd.DataFrame]:
    return [toy_shard(s) for s in shards]


class CountingRunner:
    """run_shards, recording which shards it was handed (the shards that are computed now)."""

    def __init__(self):
        self.ran: list = []

    def __call__(self, fn, shards, **kwargs):
        self.ran.extend(shards)
        return run_shards(fn, shards, **kwargs)


# --- kill and resume --------------------------------------------------------------------------------

DRIVER = textwrap.dedent("""
    import sys
    from gradmc.distributed import ensure_ray, run_shards
    from gradmc.distributed.selftest import ToyShard, toy_shard
    from gradmc.distributed.shard_cache import ShardCache, run_cached
    folder, n = sys.argv[1], int(sys.argv[2])
    shards = [ToyShard(seed=i, sleep_s=0.4) for i in range(n)]
    ensure_ray(num_cpus=1)
    run_cached(toy_shard, shards, ShardCache(folder, "toy", "test-code"), run_shards, num_workers=1, progress=print)
    print("finished", flush=True)
""")


@pytest.mark.slow
def test_killed_sweep_reruns_exactly_the_missing_shards(ray_session, tmp_path):
    n = 8
    folder = tmp_path / "cache"
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    proc = subprocess.Popen([sys.executable, "-c", DRIVER, str(folder), str(n)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True, env=env)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None and len(list(folder.glob("*.parquet"))) < 3:
        time.sleep(0.05)
    assert proc.poll() is None, "the sweep ended before it could be killed:\n" + proc.stdout.read()[-3000:]
    os.killpg(proc.pid, signal.SIGKILL)  # the driver, its Ray instance and workers: no clean-up runs
    proc.wait(timeout=60)
    stored = sorted(folder.glob("*.parquet"))
    k = len(stored)
    assert 3 <= k < n, f"{k} of {n} shards stored when killed"

    shards = [ToyShard(seed=i, sleep_s=0.4) for i in range(n)]
    cache = ShardCache(folder, "toy", "test-code")
    stored_keys = {p.stem for p in stored}
    runner = CountingRunner()
    frames, computed = run_cached(toy_shard, shards, cache, runner, num_workers=2, progress=None)
    assert computed == n - k == len(runner.ran)
    assert {cache.key(s) for s in runner.ran}.isdisjoint(stored_keys)  # no stored shard computed twice
    assert {cache.key(s) for s in runner.ran} | stored_keys == {cache.key(s) for s in shards}  # none lost
    for got, want in zip(frames, fault_free(shards), strict=True):
        pd.testing.assert_frame_equal(got, want)
    assert len(list(folder.glob("*.parquet"))) == n

    again = CountingRunner()
    frames2, computed2 = run_cached(toy_shard, shards, cache, again, progress=None)
    assert computed2 == 0 and again.ran == []
    for got, want in zip(frames2, frames, strict=True):
        pd.testing.assert_frame_equal(got, want)


def test_every_shard_is_stored_as_it_finishes_and_without_a_cache_nothing_is(ray_session, tmp_path):
    shards = [ToyShard(seed=i) for i in range(4)]
    seen = []

    def runner(fn, todo, *, on_result, **kwargs):
        def watch(i, frame):
            on_result(i, frame)
            seen.append(len(list((tmp_path / "c").glob("*.parquet"))))  # stored before the next one finishes
        return run_shards(fn, todo, on_result=watch, num_workers=1, **kwargs)

    frames, computed = run_cached(toy_shard, shards, ShardCache(tmp_path / "c", "toy", "x"), runner, progress=None)
    assert computed == 4 and seen == [1, 2, 3, 4]
    frames, computed = run_cached(toy_shard, shards, None, run_shards, progress=None)
    assert computed == 4 and not (tmp_path / "none").exists()
    for got, want in zip(frames, fault_free(shards), strict=True):
        pd.testing.assert_frame_equal(got, want)


# --- keys ------------------------------------------------------------------------------------------


def test_key_changes_with_fields_files_and_code(tmp_path):
    model = tmp_path / "model.bin"
    model.write_bytes(b"first model")
    cache = ShardCache(tmp_path, "toy", "code-a")
    base = ToyShard(seed=1)
    assert cache.key(base) == ShardCache(tmp_path / "elsewhere", "toy", "code-a").key(base)  # not the folder
    assert cache.key(ToyShard(seed=2)) != cache.key(base)
    assert cache.key(ToyShard(seed=1, num_steps=5)) != cache.key(base)
    assert ShardCache(tmp_path, "toy", "code-b").key(base) != cache.key(base)
    assert ShardCache(tmp_path, "other", "code-a").key(base) != cache.key(base)
    named = ToyShard(seed=1, crash_marker=str(model))  # a field naming a file: its content is hashed
    before = cache.key(named)
    model.write_bytes(b"second model, retrained")
    assert cache.key(named) != before
    assert cache.describe(named)["files"] == {"crash_marker": cache._file_digest(str(model))}


def test_a_part_of_a_split_shard_is_keyed_by_its_shards_files_and_its_chains(tmp_path):
    """A part (memory_split.ShardPart) hashes the files its shard's fields name, as the whole shard does, and its
    chains: a retrained model is never met by a stale part, and two parts never share a key."""
    from gradmc.distributed.memory_split import ShardPart

    model = tmp_path / "model.bin"
    model.write_bytes(b"first model")
    cache = ShardCache(tmp_path, "toy", "code-a")
    shard = ToyShard(seed=1, crash_marker=str(model))
    part = ShardPart(shard, 0, 2)
    assert cache.describe(part)["files"] == {"shard.crash_marker": cache._file_digest(str(model))}
    assert len({cache.key(shard), cache.key(part), cache.key(ShardPart(shard, 2, 4))}) == 3
    before = cache.key(part)
    model.write_bytes(b"second model, retrained")
    assert cache.key(part) != before


def test_stale_or_damaged_files_are_never_trusted(tmp_path):
    messages = []
    cache = ShardCache(tmp_path, "toy", "code-a", progress=messages.append)
    shard = ToyShard(seed=3)
    assert cache.load(shard) is None and messages == []  # not stored: silently missing
    cache.store(shard, toy_shard(shard))
    pd.testing.assert_frame_equal(cache.load(shard), toy_shard(shard))

    # the code changed: the old file is under another name and is never read
    assert ShardCache(tmp_path, "toy", "code-b").load(shard) is None

    # a file put under this shard's name whose footer records another key (copied from another shard)
    other = ToyShard(seed=4)
    cache.store(other, toy_shard(other))
    os.replace(cache.path(other), cache.path(shard))
    assert cache.load(shard) is None
    assert "records key" in messages[-1] and str(cache.path(shard)) in messages[-1]

    # a truncated file (written by something that is not the cache)
    cache.path(shard).write_bytes(b"PAR1 not really")
    assert cache.load(shard) is None and "unreadable" in messages[-1]

    # recomputing overwrites it
    cache.store(shard, toy_shard(shard))
    pd.testing.assert_frame_equal(cache.load(shard), toy_shard(shard))
    import pyarrow.parquet as pq

    assert CACHE_KEY in pq.read_schema(cache.path(shard)).metadata
    with pytest.raises(TypeError, match="stores DataFrames"):
        cache.store(shard, {"not": "a frame"})


def test_default_folder_is_beside_the_output():
    assert cache_folder_for("results/quick/ising_sampling/metrics.parquet") == Path(
        "results/quick/ising_sampling/metrics.shards")


# --- the real path: gradmc run --------------------------------------------------------------------


def _ising_config(tmp_path: Path, seeds) -> Path:
    config = yaml.safe_load((ROOT / "config" / "smoke.yaml").read_text())
    config["ising_sampling"].update(sides=[4], thetas=[0.1, 0.3], samplers=["Gibbs-1", "GWG"], seeds=list(seeds),
                                   num_steps=30)
    path = tmp_path / f"config-{len(seeds)}.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def _gradmc_run(config: Path, out: Path, *extra: str) -> str:
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    proc = subprocess.run([GRADMC, "run", "ising_sampling", "--config", str(config), "--workers", "2",
                           "--out", str(out), *extra], capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout + proc.stderr


def _untimed(path: Path) -> pd.DataFrame:
    """The metrics without what depends on the clock (sampler seconds, per-second ESS, provenance)."""
    from gradmc.results import PROVENANCE_COLUMNS, read_parquet

    df = read_parquet(path)[0]
    df = df[df["metric"] != "ess_per_second"]
    return df.drop(columns=["wall_time_s", *PROVENANCE_COLUMNS]).reset_index(drop=True)


@pytest.mark.slow
def test_gradmc_run_resumes_from_its_shard_cache(tmp_path):
    config = _ising_config(tmp_path, seeds=[0])
    out = tmp_path / "ising_sampling" / "metrics.parquet"
    first = _gradmc_run(config, out)
    folder = cache_folder_for(out)
    stored = sorted(folder.glob("*.parquet"))
    n = len(stored)  # 2 thetas x 2 samplers x 1 seed, one chunk each
    assert n == 4 and f"0 of {n} shards stored, {n} to run" in first
    whole = _untimed(out)

    stored[0].unlink()  # lost
    stored[1].write_bytes(b"damaged")  # unreadable: recomputed, with a warning
    second = _gradmc_run(config, out)
    assert f"{n - 2} of {n} shards stored, 2 to run" in second
    assert "warning: ignoring" in second and "unreadable" in second
    pd.testing.assert_frame_equal(_untimed(out), whole)

    # one more seed: the first seed's shards are reused, only the new seed's run
    third = _gradmc_run(_ising_config(tmp_path, seeds=[0, 1]), out)
    assert f"{n} of {2 * n} shards stored, {n} to run" in third
    assert len(list(folder.glob("*.parquet"))) == 2 * n



def test_no_shard_cache_and_shard_cache_are_exclusive_options():
    from gradmc.cli.parser import build_parser

    parser = build_parser()
    base = ["run", "ising_sampling", "--config", "config/smoke.yaml", "--out", "m.parquet"]
    assert parser.parse_args([*base, "--no-shard-cache"]).no_shard_cache
    assert parser.parse_args([*base, "--shard-cache", "d"]).shard_cache == "d"
    with pytest.raises(SystemExit):
        parser.parse_args([*base, "--no-shard-cache", "--shard-cache", "d"])


def test_make_clean_results_removes_the_shard_cache(tmp_path):
    import shutil

    shutil.copy(ROOT / "Makefile", tmp_path / "Makefile")
    (tmp_path / "constraints.txt").write_text("torch==0\n")
    shards = tmp_path / "results" / "quick" / "ising_sampling" / "metrics.shards"
    shards.mkdir(parents=True)
    (shards / "0123.parquet").write_bytes(b"x")
    (tmp_path / "results" / ".gitkeep").write_text("")
    proc = subprocess.run(["make", "-C", str(tmp_path), "clean-results"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert not (tmp_path / "results" / "quick").exists() and (tmp_path / "results" / ".gitkeep").exists()


# --- from the new-user check: tampered rows, folders in the way, unwritable caches, CLI mistakes -----------


def test_rows_changed_behind_the_footer_are_not_trusted(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    messages = []
    cache = ShardCache(tmp_path, "toy", "code", progress=messages.append)
    shard = ToyShard(seed=5)
    path = cache.store(shard, toy_shard(shard))
    table = pq.read_table(path)
    forged = toy_shard(shard).assign(value=lambda d: d["value"] * 1000)  # same key, same footer, other rows
    pq.write_table(pa.Table.from_pandas(forged).replace_schema_metadata(table.schema.metadata), path)
    assert cache.load(shard) is None
    assert "do not match the digest" in messages[-1]


def test_a_folder_in_the_way_or_an_unwritable_cache_costs_only_time(ray_session, tmp_path):
    messages = []
    shards = [ToyShard(seed=i) for i in range(3)]
    cache = ShardCache(tmp_path / "c", "toy", "code", progress=messages.append)
    cache.path(shards[0]).mkdir(parents=True)  # a folder where shard 0's file belongs
    frames, computed = run_cached(toy_shard, shards, cache, run_shards, progress=messages.append)
    assert computed == 3 and any("not a regular file" in m for m in messages)
    assert sum("cannot store shards" in m for m in messages) == 1  # one warning, the sweep went on
    for got, want in zip(frames, fault_free(shards), strict=True):
        pd.testing.assert_frame_equal(got, want)
    assert cache.path(shards[1]).is_file() and cache.path(shards[2]).is_file()

    if os.geteuid() != 0:  # root writes through a read-only mode
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        notes = []
        frames, computed = run_cached(toy_shard, shards, ShardCache(locked, "toy", "code", progress=notes.append),
                                      run_shards, progress=None)
        assert computed == 3 and sum("cannot store shards" in m for m in notes) == 1


def test_rerun_keeps_the_shards_numbers_in_the_sweep(ray_session):
    lines = []
    run_shards(toy_shard, [ToyShard(seed=5), ToyShard(seed=7)], names=["shard 5", "shard 7"], progress=lines.append,
               num_workers=1)
    assert any(line.startswith("[shards] shard 5 (seed=5") for line in lines)
    assert any(line.startswith("[shards] shard 7 (seed=7") for line in lines)
    with pytest.raises(RuntimeError, match="shard 7 .*toy failure"):
        run_shards(toy_shard, [ToyShard(seed=1), ToyShard(seed=7, fail=True)], names=["shard 1", "shard 7"],
                   progress=None)


@pytest.mark.parametrize("extra, env, message", [
    (["--shard-cache", ""], {}, "--shard-cache is empty"),
    (["--shard-cache", "{file}"], {}, "is a file, not a folder"),
    ([], {"GRADMC_SHARD_EXECUTOR": "bogus"}, "GRADMC_SHARD_EXECUTOR='bogus' is not one of tasks, actors"),
    (["--out-is-folder"], {}, "is a folder; give the metrics file"),
])
def test_gradmc_run_refuses_cache_and_executor_mistakes_before_any_work(tmp_path, extra, env, message):
    (tmp_path / "file").write_text("x")
    out = tmp_path / "m.parquet"
    if extra == ["--out-is-folder"]:
        out.mkdir()
        extra = []
    extra = [e.replace("{file}", str(tmp_path / "file")) for e in extra]
    run_env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "GRADMC_SHARD_EXECUTOR")} | env
    start = time.monotonic()
    proc = subprocess.run([GRADMC, "run", "ising_sampling", "--config", str(ROOT / "config" / "smoke.yaml"),
                           "--out", str(out), *extra], capture_output=True, text=True, timeout=120, env=run_env)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr  # and it stopped before building shards (progress goes to stderr):
    assert not re.search(r"\[ising_sampling\] \d+ shards", proc.stderr), proc.stderr[-2000:]
    assert time.monotonic() - start < 30


@pytest.mark.parametrize("extra, kept", [([], "m.shards"), (["--shard-cache", "elsewhere"], "elsewhere"),
                                         (["--no-shard-cache"], None)])
def test_interrupted_gradmc_run_says_where_its_finished_shards_are(monkeypatch, capsys, extra, kept):
    import gradmc.cli.commands as commands
    from gradmc.cli import main

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setitem(commands.COMMANDS, "run", interrupted)
    status = main(["run", "ising_sampling", "--config", "config/smoke.yaml", "--out", "m.parquet", *extra])
    err = capsys.readouterr().err
    assert status == 130
    if kept is None:
        assert "no output was written" in err and "shards" not in err
    else:
        assert f"m.parquet was not written, but the shards finished so far are kept in {kept}" in err
