"""What a new user meets when a command is refused: one line that says what is wrong and what would be right,
and nothing left on disk by the refused command."""

from __future__ import annotations

from pathlib import Path

import yaml

from gradmc.cli import main

REPO = Path(__file__).resolve().parents[1]
SMOKE = REPO / "config" / "smoke.yaml"


def one_line_error(capsys, code: int) -> str:
    """The single ``gradmc: error:`` line of a failed command (asserting status 2 and no traceback)."""
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("gradmc: error: "), err
    return lines[0]


def _smoke_with(tmp_path: Path, name: str, change) -> Path:
    config = yaml.safe_load(SMOKE.read_text())
    change(config)
    path = tmp_path / name
    path.write_text(yaml.safe_dump(config))
    return path


def test_run_with_a_missing_config_creates_no_out_folder(tmp_path, capsys):
    out = tmp_path / "results" / "quick" / "metrics.parquet"
    code = main(["run", "ising_sampling", "--config", str(tmp_path / "nope.yaml"), "--out", str(out)])
    line = one_line_error(capsys, code)
    assert f"config file {tmp_path / 'nope.yaml'} not found" in line
    assert not (tmp_path / "results").exists()


def test_run_with_an_invalid_config_creates_no_out_folder(tmp_path, capsys):
    config = _smoke_with(tmp_path, "bad.yaml", lambda c: c["ising_sampling"].__setitem__("samplers", ["GWK"]))
    out = tmp_path / "results" / "metrics.parquet"
    line = one_line_error(capsys, main(["run", "ising_sampling", "--config", str(config), "--out", str(out)]))
    assert "unknown sampler 'GWK'" in line
    assert not (tmp_path / "results").exists()


def test_hand_written_stage_with_an_unknown_sampler_creates_no_out_folder(tmp_path, capsys):
    data = tmp_path / "data.npz"
    import numpy as np

    np.savez(data, train=np.zeros((2, 4), np.uint8))
    out = tmp_path / "models" / "m.pt"
    code = main(["run", "train_ebm", "--config", str(SMOKE), "--dataset", "static_mnist", "--sampler", "GWK",
                 "--data", str(data), "--out", str(out)])
    line = one_line_error(capsys, code)
    assert "unknown sampler 'GWK'" in line
    assert not (tmp_path / "models").exists()
