"""Results files: provenance, Parquet round trip, footer, atomic (failed and killed) writes, read errors."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import gradmc
from gradmc.atomic import atomic_path
from gradmc.errors import InputError, MissingInputError, OutputError
from gradmc.results import (
    PROVENANCE_COLUMNS,
    PROVENANCE_KEY,
    SCHEMA_VERSION,
    provenance,
    read_parquet,
    read_provenance,
    validate_metrics,
    write_parquet,
)
from gradmc.results import parquet as parquet_mod

CONFIG = {"experiment": "rbm_sampling", "seeds": [0, 1, 2], "sampler": {"name": "GWG", "steps": 10}}


def metrics_frame(n: int = 6) -> pd.DataFrame:
    """A small table in the tidy metrics schema."""
    return pd.DataFrame(
        {
            "experiment": ["rbm_sampling"] * n,
            "target": ["rbm"] * n,
            "sampler": ["GWG", "Gibbs-1"] * (n // 2),
            "seed": np.arange(n, dtype=np.int64),
            "chain": np.array([-1] + list(range(n - 1)), dtype=np.int64),
            "step": np.arange(n, dtype=np.int64) * 10,
            "metric": ["ess"] * n,
            "value": np.linspace(0.0, 1.0, n),
            "energy_evals": np.full(n, 2, dtype=np.int64),
            "grad_evals": np.ones(n, dtype=np.int64),
            "wall_time_s": np.full(n, 0.5),
        }
    )


def stray_files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


# --- provenance ----------------------------------------------------------------------------------


def test_provenance_has_all_keys_and_types():
    prov = provenance(CONFIG)
    assert prov["schema_version"] == SCHEMA_VERSION == 1
    assert isinstance(prov["git_commit"], str) and prov["git_commit"]
    assert isinstance(prov["git_dirty"], bool)
    assert len(prov["config_hash"]) == 16 and int(prov["config_hash"], 16) >= 0
    assert prov["package_version"] == gradmc.__version__
    assert prov["torch_version"].startswith("2.")
    assert prov["python_version"].count(".") == 2
    assert prov["created_utc"].endswith("+00:00")
    assert prov["config"] == CONFIG
    json.dumps(prov)  # footer-ready


def test_config_hash_tracks_content_not_key_order():
    base = provenance(CONFIG)["config_hash"]
    reordered = dict(reversed(list(CONFIG.items())))
    assert provenance(reordered)["config_hash"] == base
    changed = {**CONFIG, "seeds": [0, 1, 3]}
    assert provenance(changed)["config_hash"] != base
    nested = {**CONFIG, "sampler": {"name": "GWG", "steps": 11}}
    assert provenance(nested)["config_hash"] != base


def test_provenance_outside_git_and_without_git(tmp_path, monkeypatch):
    prov = provenance(CONFIG, repo_dir=tmp_path)
    assert (prov["git_commit"], prov["git_dirty"]) == ("unknown", False)
    monkeypatch.setenv("PATH", str(tmp_path))  # no git executable anywhere
    prov = provenance(CONFIG)
    assert (prov["git_commit"], prov["git_dirty"]) == ("unknown", False)


def test_provenance_rejects_non_json_config():
    with pytest.raises(TypeError, match="not JSON-serialisable"):
        provenance({"bad": object()})


# --- round trip and footer -----------------------------------------------------------------------


def test_round_trip_keeps_dtypes_values_and_provenance(tmp_path):
    df = metrics_frame()
    df["flag"] = df["seed"] % 2 == 0
    df["kind"] = pd.Categorical(["a", "b", "a", "c", "b", "a"], categories=["c", "b", "a"], ordered=True)
    df["note"] = pd.Series(["x", "y", "z", "x", "y", "z"], dtype=object)
    prov = provenance(CONFIG)
    out = write_parquet(df, tmp_path / "sub" / "dir" / "metrics.parquet", prov, validate=True)
    assert out == tmp_path / "sub" / "dir" / "metrics.parquet" and out.is_file()
    assert stray_files(out.parent) == ["metrics.parquet"]

    back, prov_back = read_parquet(out)
    assert prov_back == prov
    assert list(back.columns) == [*df.columns, *PROVENANCE_COLUMNS]
    # pandas 3 reads every string column as its default ``str`` dtype, also those written as object
    expected = df.assign(note=df["note"].astype("str"))
    pd.testing.assert_frame_equal(back[df.columns], expected)
    for name in ("seed", "chain", "step", "energy_evals", "grad_evals"):
        assert back[name].dtype == np.int64
    assert back["value"].dtype == np.float64 and back["flag"].dtype == bool
    assert back["kind"].dtype == df["kind"].dtype  # categories and order kept
    for key in PROVENANCE_COLUMNS:
        assert (back[key] == prov[key]).all()
    assert back["git_dirty"].dtype == bool
    validate_metrics(back)


def test_footer_holds_provenance_json_and_pandas_metadata(tmp_path):
    prov = provenance(CONFIG)
    path = write_parquet(metrics_frame(), tmp_path / "m.parquet", prov)
    metadata = pq.read_schema(path).metadata
    assert b"pandas" in metadata
    gradmc_keys = [key for key in metadata if key.startswith(b"gradmc")]
    assert gradmc_keys == [PROVENANCE_KEY] == [b"gradmc.provenance"]
    assert json.loads(metadata[PROVENANCE_KEY]) == prov
    assert read_provenance(path) == prov


def test_write_does_not_modify_input_and_keeps_non_range_index(tmp_path):
    df = metrics_frame().set_index(["sampler", "seed"])
    before = df.copy()
    path = write_parquet(df, tmp_path / "m.parquet", provenance(CONFIG))
    pd.testing.assert_frame_equal(df, before)
    back, _ = read_parquet(path)
    pd.testing.assert_frame_equal(back[df.columns], df)


def test_overwrite_replaces_existing_file(tmp_path):
    path = tmp_path / "m.parquet"
    write_parquet(metrics_frame(4), path, provenance(CONFIG))
    write_parquet(metrics_frame(2), path, provenance({"other": 1}))
    back, prov = read_parquet(path)
    assert len(back) == 2 and prov["config"] == {"other": 1}
    assert stray_files(tmp_path) == ["m.parquet"]


def test_provenance_must_have_column_keys(tmp_path):
    prov = provenance(CONFIG)
    del prov["git_commit"]
    with pytest.raises(ValueError, match="git_commit"):
        write_parquet(metrics_frame(), tmp_path / "m.parquet", prov)
    assert stray_files(tmp_path) == []


# --- atomicity -----------------------------------------------------------------------------------


def test_failed_write_leaves_nothing(tmp_path, monkeypatch):
    def write_then_fail(table, where, **kwargs):
        Path(where).write_bytes(b"PAR1 partial bytes")  # the temp file exists and has content
        assert any(name.endswith(".tmp") for name in stray_files(tmp_path / "out"))
        raise OSError("disk full (simulated)")

    monkeypatch.setattr(parquet_mod.pq, "write_table", write_then_fail)
    path = tmp_path / "out" / "metrics.parquet"
    with pytest.raises(OSError, match="simulated"):
        write_parquet(metrics_frame(), path, provenance(CONFIG))
    assert not path.exists()
    assert stray_files(path.parent) == []


def test_failed_write_keeps_previous_file(tmp_path, monkeypatch):
    path = tmp_path / "metrics.parquet"
    prov = provenance(CONFIG)
    write_parquet(metrics_frame(4), path, prov)

    def failing_fsync(fd):
        raise OSError("io error (simulated)")

    monkeypatch.setattr(parquet_mod.os, "fsync", failing_fsync)
    with pytest.raises(OSError, match="io error"):
        write_parquet(metrics_frame(2), path, provenance({"other": 1}))
    back, prov_back = read_parquet(path)
    assert len(back) == 4 and prov_back == prov
    assert stray_files(tmp_path) == ["metrics.parquet"]


KILLED_WRITER = textwrap.dedent(
    """
    import os, sys, time
    import numpy as np, pandas as pd, pyarrow.parquet as pq
    from gradmc.results import parquet, provenance, write_parquet

    hook, path = sys.argv[1], sys.argv[2]

    def announce_and_hang():
        print("MIDWAY", flush=True)
        time.sleep(120)

    if hook == "partial_data":  # die with half the row groups written to the temp file
        def write_table(table, where, **kwargs):
            with open(where, "wb") as fh, pq.ParquetWriter(fh, table.schema) as writer:
                writer.write_table(table.slice(0, len(table) // 2))
                fh.flush()
                announce_and_hang()
                writer.write_table(table.slice(len(table) // 2))
        parquet.pq.write_table = write_table
    else:  # "before_rename": the temp file is complete, the rename has not happened
        real_fsync = os.fsync
        def fsync(fd):
            real_fsync(fd)
            announce_and_hang()
        parquet.os.fsync = fsync

    n = 500_000
    df = pd.DataFrame({"step": np.arange(n), "value": np.random.default_rng(0).random(n)})
    write_parquet(df, path, provenance({"killed": True}))
    print("FINISHED", flush=True)
    """
)


@pytest.mark.parametrize("hook", ["partial_data", "before_rename"])
def test_killed_write_never_leaves_a_file_at_the_output_path(tmp_path, hook):
    path = tmp_path / "metrics.parquet"
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLED_WRITER, hook, str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline()  # blocks until the writer is mid-way (or dies)
        assert line.strip() == "MIDWAY", proc.stderr.read()
        temps = [name for name in stray_files(tmp_path) if name != path.name]
        assert len(temps) == 1 and temps[0].startswith(".metrics.parquet.") and temps[0].endswith(".tmp")
        assert (tmp_path / temps[0]).stat().st_size > 0
        assert not path.exists()
        os.kill(proc.pid, signal.SIGKILL)
        assert proc.wait(timeout=30) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()
    assert not path.exists()
    assert all(name.startswith(".") and name.endswith(".tmp") for name in stray_files(tmp_path))
    if hook == "partial_data":  # the stale temp file is not even readable
        with pytest.raises(InputError, match="not a valid Parquet"):
            read_parquet(tmp_path / temps[0])


# --- reading errors ------------------------------------------------------------------------------


def test_truncated_file_raises_value_error_naming_it(tmp_path):
    path = write_parquet(metrics_frame(), tmp_path / "m.parquet", provenance(CONFIG))
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(InputError, match="not a valid Parquet") as info:
        read_parquet(path)
    assert str(path) in str(info.value)
    with pytest.raises(InputError, match="not a valid Parquet"):
        read_provenance(path)


@pytest.mark.parametrize("content", [b"", b"hello, not parquet at all", b"PAR1" + b"\0" * 64])
def test_garbage_file_raises_value_error_naming_it(tmp_path, content):
    path = tmp_path / "garbage.parquet"
    path.write_bytes(content)
    with pytest.raises(InputError, match="garbage.parquet"):
        read_parquet(path)


def test_missing_file_raises_file_not_found(tmp_path):
    path = tmp_path / "absent.parquet"
    for read in (read_parquet, read_provenance):
        with pytest.raises(MissingInputError) as info:
            read(path)
        assert str(info.value) == f"results file {path} not found"


def test_atomic_write_has_the_mode_of_a_plain_open(tmp_path):
    plain = tmp_path / "plain.bin"
    with open(plain, "w") as fh:
        fh.write("x")
    with atomic_path(tmp_path / "atomic.bin") as tmp:
        tmp.write_text("x")
    parquet = write_parquet(metrics_frame(), tmp_path / "m.parquet", provenance(CONFIG))
    want = stat.S_IMODE(plain.stat().st_mode)
    assert stat.S_IMODE((tmp_path / "atomic.bin").stat().st_mode) == want
    assert stat.S_IMODE(parquet.stat().st_mode) == want
    old = os.umask(0o027)  # a stricter umask is honoured too (not just 0o644 hard-coded)
    try:
        with atomic_path(tmp_path / "strict.bin") as tmp:
            tmp.write_text("x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "strict.bin").stat().st_mode) == 0o640


def test_unwritable_output_folder_is_an_output_error(tmp_path):
    (tmp_path / "file").write_text("not a folder")
    out = tmp_path / "file" / "sub" / "m.parquet"  # its folder cannot be created: a file is in the way
    with pytest.raises(OutputError, match=r"cannot write .*m\.parquet: .*choose an output path") as info:
        write_parquet(metrics_frame(), out, provenance(CONFIG))
    assert isinstance(info.value, OSError) and "Traceback" not in str(info.value)
    assert stray_files(tmp_path) == ["file"]


def test_parquet_without_provenance_is_rejected(tmp_path):
    path = tmp_path / "plain.parquet"
    pq.write_table(pa.Table.from_pandas(metrics_frame()), path)
    with pytest.raises(InputError, match=r"plain\.parquet.*no gradmc provenance"):
        read_parquet(path)


def test_unsupported_schema_version_is_rejected(tmp_path):
    prov = {**provenance(CONFIG), "schema_version": 99}
    path = write_parquet(metrics_frame(), tmp_path / "future.parquet", prov)
    with pytest.raises(InputError, match=r"future\.parquet.*schema_version 99"):
        read_parquet(path)


# --- metrics schema ------------------------------------------------------------------------------


def test_validate_metrics_accepts_schema_and_extra_columns():
    df = metrics_frame().assign(extra=1.0)
    validate_metrics(df)
    validate_metrics(df.astype({"sampler": "category", "target": object}))
    validate_metrics(df.iloc[:0])


def test_validate_metrics_names_missing_columns_and_bad_dtypes():
    df = metrics_frame().drop(columns=["grad_evals", "wall_time_s"])
    df["step"] = df["step"].astype(float)
    df["metric"] = 1
    with pytest.raises(ValueError) as info:
        validate_metrics(df)
    message = str(info.value)
    assert "grad_evals" in message and "wall_time_s" in message
    assert "'step'" in message and "'metric'" in message
    assert "'value'" not in message


def test_validate_metrics_rejects_bool_counts_and_bad_chain():
    with pytest.raises(ValueError, match="'energy_evals'"):
        validate_metrics(metrics_frame().assign(energy_evals=True))
    with pytest.raises(ValueError, match="'chain' has values < -1"):
        validate_metrics(metrics_frame().assign(chain=-2))


def test_write_with_validate_rejects_bad_table_and_writes_nothing(tmp_path):
    with pytest.raises(ValueError, match="seed"):
        write_parquet(
            metrics_frame().drop(columns="seed"), tmp_path / "m.parquet", provenance(CONFIG), validate=True
        )
    assert stray_files(tmp_path) == []
