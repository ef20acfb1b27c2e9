"""The text EBM's commands (GWG App. J): `gradmc data prepare ptb` from a config, and the three `gradmc run`
stages and the figure end to end on the smoke sizes, with their user errors named (exit status 2, no traceback,
nothing written)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from test_errors import one_line_error

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
    assert "train: ptb.valid.txt, test: ptb.test.txt" in capsys.readouterr().err
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
    # the LM's weights where the EBM's checkpoint belongs (and the reverse), and a missing LM file: named
    assert main(["run", "eval_text_ebm", *c, "--data", data, "--model", lm, "--lm", lm, "--out", metrics]) == 2
    assert "is not a checkpoint from `gradmc run train_text_ebm`: its format is 'gradmc.text_lm/1'" in \
        capsys.readouterr().err
    assert main(["run", "eval_text_ebm", *c, "--data", data, "--model", ebm, "--lm", ebm, "--out", metrics]) == 2
    assert "--lm" in (err := capsys.readouterr().err) and "not a checkpoint from `gradmc run train_text_lm`" in err
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


def _edited_smoke(tmp_path, name: str, **edits) -> str:
    """config/smoke.yaml with text_ebm.<section>.<key> = value for each edits["section__key"]."""
    config = yaml.safe_load(Path("config/smoke.yaml").read_text())
    for path, value in edits.items():
        section, key = path.split("__")
        config["text_ebm"][section][key] = value
    out = tmp_path / f"{name}.yaml"
    out.write_text(yaml.safe_dump(config))
    return str(out)


def test_inputs_made_for_another_config_or_damaged_are_refused_in_one_line(data_dir, tmp_path, capsys):
    """Data, checkpoints and config must agree (a mismatch would score the wrong sizes silently); damaged files,
    config values the schema lets through and outputs that are folders are named before any work, exit 2, one
    line, nothing written."""
    c = ["--config", "config/smoke.yaml"]
    data, ebm, lm, metrics = (str(tmp_path / n) for n in ("ptb.npz", "ebm.pt", "lm.pt", "metrics.parquet"))
    assert main(["data", "prepare", "ptb", *c, "--out", data]) == 0
    assert main(["run", "train_text_ebm", *c, "--data", data, "--out", ebm]) == 0
    assert main(["run", "train_text_lm", *c, "--data", data, "--out", lm]) == 0
    capsys.readouterr()
    longer = _edited_smoke(tmp_path, "longer", data__max_length=6)
    assert main(["data", "prepare", "ptb", "--config", longer, "--out", str(tmp_path / "long.npz")]) == 0
    capsys.readouterr()
    evaluate = ["run", "eval_text_ebm", "--data", data, "--model", ebm, "--lm", lm, "--out", metrics]
    # data prepared for another length, under this config
    code = main(["run", "eval_text_ebm", *c, "--data", str(tmp_path / "long.npz"), "--model", ebm, "--lm", lm,
                 "--out", metrics])
    assert "prepared for another config: max_length 6 (config 4)" in one_line_error(capsys, code)
    # the EBM and the LM trained with other sizes than the config asks for
    wider = _edited_smoke(tmp_path, "wider", model__hidden=8)
    code = main([*evaluate, "--config", wider])
    assert "--model" in (err := one_line_error(capsys, code)) and "trained with other sizes: model" in err
    lm_wider = _edited_smoke(tmp_path, "lm_wider", lm__hidden=16)
    code = main([*evaluate, "--config", lm_wider])
    assert "--lm" in (err := one_line_error(capsys, code)) and "does not fit text_ebm.lm" in err
    # a damaged .npz (still a zip, its compressed bytes flipped)
    raw = bytearray(Path(data).read_bytes())
    raw[200:260] = bytes(b ^ 0xFF for b in raw[200:260])
    (tmp_path / "flip.npz").write_bytes(bytes(raw))
    flipped = ["--data", str(tmp_path / "flip.npz"), "--out", str(tmp_path / "x.pt")]
    code = main(["run", "train_text_lm", *c, *flipped])
    assert "could not be read" in one_line_error(capsys, code)
    # config values the schema accepts but training cannot use
    for name, edit, message in (("batch", {"train__batch_size": 32}, "exceeds text_ebm.train.buffer_size 16"),
                                ("nan", {"train__lr": float("nan")}, "text_ebm.train.lr is nan")):
        bad = _edited_smoke(tmp_path, name, **edit)
        code = main(["run", "train_text_ebm", "--config", bad, "--data", data, "--out", str(tmp_path / "x.pt")])
        assert message in one_line_error(capsys, code)
    # outputs that are existing folders, the samples file beside the checkpoint too
    (tmp_path / "dir.pt").mkdir()
    code = main(["run", "train_text_lm", *c, "--data", data, "--out", str(tmp_path / "dir.pt")])
    assert "is an existing folder" in one_line_error(capsys, code)
    (tmp_path / "y.pt.samples.txt").mkdir()
    code = main(["run", "train_text_ebm", *c, "--data", data, "--out", str(tmp_path / "y.pt")])
    assert ".samples.txt" in one_line_error(capsys, code)
    code = main(["data", "prepare", "ptb", *c, "--out", str(tmp_path / "dir.pt")])
    assert "is an existing folder" in one_line_error(capsys, code)
    assert not any(p.exists() for p in (tmp_path / "x.pt", tmp_path / "y.pt", Path(metrics)))


def test_figure_writes_nothing_until_every_input_and_output_is_good(data_dir, tmp_path, capsys):
    """Concatenated metrics of two runs, or a figure path in a folder that cannot exist, are refused before the
    table is written."""
    import pandas as pd

    from gradmc.results import write_parquet

    c = ["--config", "config/smoke.yaml"]
    data, ebm, lm, metrics = (str(tmp_path / n) for n in ("ptb.npz", "ebm.pt", "lm.pt", "metrics.parquet"))
    for command in (["data", "prepare", "ptb", *c, "--out", data],
                    ["run", "train_text_ebm", *c, "--data", data, "--out", ebm],
                    ["run", "train_text_lm", *c, "--data", data, "--out", lm],
                    ["run", "eval_text_ebm", *c, "--data", data, "--model", ebm, "--lm", lm, "--out", metrics]):
        assert main(command) == 0
    capsys.readouterr()
    df, prov = read_parquet(metrics)
    write_parquet(pd.concat([df, df], ignore_index=True), tmp_path / "twice.parquet", prov)
    table = tmp_path / "table"
    code = main(["figure", "text_ebm", "--metrics", str(tmp_path / "twice.parquet"), "--out", str(tmp_path / "f"),
                 "--table-out", str(table)])
    assert "repeat a (model, metric, step)" in one_line_error(capsys, code)
    (tmp_path / "file").write_text("")
    code = main(["figure", "text_ebm", "--metrics", metrics, "--out", str(tmp_path / "file" / "f"),
                 "--table-out", str(table)])
    assert "--out" in one_line_error(capsys, code)
    assert not list(tmp_path.glob("table.*")) and not list(tmp_path.glob("f.*"))
