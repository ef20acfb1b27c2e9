"""The text EBM's commands (GWG App. J): `gradmc data prepare ptb` from a config, and the three `gradmc run`
stages and the figure end to end on the smoke sizes, with their user errors named (exit status 2, no traceback,
nothing written)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from gradmc.cli import main
from gradmc.data.ptb import load_prepared_text
from gradmc.results import read_parquet

SHARED_PTB = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "ptb"


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    if not (SHARED_PTB / "ptb.valid.txt").is_file():
        pytest.skip("no ../shared/data/ptb (the real PTB valid and test files)")
    folder = tmp_path / "data"
    (folder / "ptb").mkdir(parents=True)
    for name in ("ptb.valid.txt", "ptb.test.txt"):
        shutil.copy(SHARED_PTB / name, folder / "ptb" / name)
    monkeypatch.setenv("GRADMC_DATA_DIR", str(folder))
    return folder


def test_prepare_ptb_follows_the_configs_roles_and_sizes(data_dir, tmp_path, capsys):
    out = tmp_path / "ptb.npz"
    assert main(["data", "prepare", "ptb", "--config", "config/smoke.yaml", "--out", str(out)]) == 0
    data = load_prepared_text(out)
    smoke = yaml.safe_load(Path("config/smoke.yaml").read_text())["text_ebm"]["data"]
    assert len(data.vocabulary) == smoke["vocab_size"] and data.max_length == smoke["max_length"]
    assert data.manifest["sources"] == {"train": "ptb.valid.txt", "test": "ptb.test.txt"}
    assert "train: ptb.valid.txt, test: ptb.test.txt" in capsys.readouterr().out
    # the paper config's roles need ptb.train.txt, which is not in the folder: named, with how to fetch it
    assert main(["data", "prepare", "ptb", "--config", "config/paper.yaml", "--out", str(tmp_path / "p.npz")]) == 2
    err = capsys.readouterr().err
    assert "ptb.train.txt not found" in err and "gradmc data fetch ptb_train" in err and "Traceback" not in err
    assert not (tmp_path / "p.npz").exists()


@pytest.mark.parametrize("extra, message", [
    ([], "needs --config"),
    (["--config", "config/smoke.yaml", "--source", "x"], "--source does not apply to ptb"),
    (["--config", "config/smoke.yaml", "--max-train", "5"], "--max-train does not apply to ptb"),
])
def test_prepare_ptb_refuses_options_it_does_not_read(tmp_path, capsys, extra, message):
    assert main(["data", "prepare", "ptb", *extra, "--out", str(tmp_path / "x.npz")]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "x.npz").exists()


def test_stages_and_figure_run_end_to_end_and_name_bad_inputs(data_dir, tmp_path, capsys):
    c = ["--config", "config/smoke.yaml"]
    data, ebm, lm, metrics = (str(tmp_path / n) for n in ("ptb.npz", "ebm.pt", "lm.pt", "metrics.parquet"))
    assert main(["data", "prepare", "ptb", *c, "--out", data]) == 0
    assert main(["run", "train_text_ebm", *c, "--data", data, "--out", ebm]) == 0
    assert main(["run", "train_text_lm", *c, "--data", data, "--out", lm]) == 0
    # the LM's weights where the EBM's checkpoint belongs, and a missing LM file: named, nothing written
    assert main(["run", "eval_text_ebm", *c, "--data", data, "--model", lm, "--lm", lm, "--out", metrics]) == 2
    assert "cannot read the text EBM checkpoint" in capsys.readouterr().err
    assert main(["run", "eval_text_ebm", *c, "--data", data, "--model", ebm, "--lm", str(tmp_path / "no.pt"),
                 "--out", metrics]) == 2
    assert "--lm" in capsys.readouterr().err and not Path(metrics).exists()
    assert main(["run", "eval_text_ebm", *c, "--data", data, "--model", ebm, "--lm", lm, "--out", metrics]) == 0
    df, prov = read_parquet(metrics)
    assert set(df["experiment"]) == {"text_ebm"} and prov["config"]["name"] == "smoke"
    assert df.loc[df["metric"] == "test_sentences", "value"].item() == load_prepared_text(data).splits["test"].shape[0]
    prefix, table = tmp_path / "fig", tmp_path / "table"
    assert main(["figure", "text_ebm", "--metrics", metrics, "--samples", ebm + ".samples.txt",
                 "--out", str(prefix), "--table-out", str(table)]) == 0
    assert (tmp_path / "fig.png").stat().st_size > 0 and "## Samples" in (tmp_path / "table.md").read_text()
