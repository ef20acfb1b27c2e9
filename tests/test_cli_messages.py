"""What a new user meets when a command is refused: one line that says what is wrong and what would be right,
and nothing left on disk by the refused command."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from _localdata import serve
from test_errors import one_line_error

from gradmc.cli import main

REPO = Path(__file__).resolve().parents[1]
SMOKE = REPO / "config" / "smoke.yaml"


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


def _folders(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*")}


def _closed_port() -> int:
    import socket

    with socket.socket() as sock:  # bound, never listening, then closed: nothing answers there
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.usefixtures("download_env")
@pytest.mark.parametrize("server", ["closed port", "404", "checksum mismatch"])
def test_failed_fetch_leaves_no_new_empty_folders(tmp_path, capsys, server):
    mirror = tmp_path / "mirror"
    (mirror / "protein" / "persistent-vi").mkdir(parents=True)
    if server == "checksum mismatch":
        for name in ("PF00018.a2m", "PF00018_summary.txt"):
            (mirror / "protein" / "persistent-vi" / name).write_text("not the registered file\n")
    elif server == "404":
        (mirror / "protein" / "persistent-vi").rmdir()
    data = tmp_path / "data"
    (data / "protein").mkdir(parents=True)  # a folder that was there before: it stays
    (data / "notes.txt").write_text("the user's own file\n")
    before = _folders(data)
    with serve(mirror) as url:
        url = f"http://127.0.0.1:{_closed_port()}" if server == "closed port" else url
        code = main(["data", "fetch", "pf00018", "--data-dir", str(data / "cache"), "--base-url", url])
        code2 = main(["data", "fetch", "pf00018", "--data-dir", str(data), "--base-url", url])
    err = capsys.readouterr().err
    assert code == code2 == 2, err
    assert "could not be fetched" in err and "Traceback" not in err
    assert _folders(data) == before  # neither cache/ nor protein/persistent-vi/ is left behind
    assert (data / "notes.txt").read_text() == "the user's own file\n"


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n# and another\n", "null\n", "---\n", "~\n"])
def test_an_empty_config_file_is_called_empty(tmp_path, capsys, text):
    config = tmp_path / "mine.yaml"
    config.write_text(text)
    out = tmp_path / "results" / "metrics.parquet"
    line = one_line_error(capsys, main(["run", "ising_sampling", "--config", str(config), "--out", str(out)]))
    assert f"config file {config} is empty" in line and "required property" not in line
    assert not (tmp_path / "results").exists()


def test_an_empty_base_config_is_called_empty(tmp_path, capsys):
    (tmp_path / "base.yaml").write_text("# nothing yet\n")
    (tmp_path / "mine.yaml").write_text("extends: base.yaml\nname: mine\n")
    code = main(["data", "fetch", "--config", str(tmp_path / "mine.yaml"), "--data-dir", str(tmp_path / "d")])
    assert f"config file {tmp_path / 'base.yaml'} is empty" in one_line_error(capsys, code)
    assert not (tmp_path / "d").exists()


def test_a_misspelt_key_is_named_before_missing_required_keys(tmp_path, capsys):
    config = tmp_path / "mine.yaml"
    config.write_text(f"extends: {SMOKE}\nfhmm_sampling: {{num_chain: 4}}\n")
    code = main(["data", "fetch", "--config", str(config), "--data-dir", str(tmp_path / "d")])
    line = one_line_error(capsys, code)
    assert "unknown key 'num_chain' in 'fhmm_sampling' — did you mean 'num_chains'? valid keys: K, L, " in line
    config.write_text("name: mine\ndevce: cpu\n")  # 'device' has no default: it is missing too
    line = one_line_error(capsys, main(["data", "fetch", "--config", str(config), "--data-dir", str(tmp_path / "d")]))
    assert line.startswith("gradmc: error: unknown key 'devce' at the top level of the config — did you mean "
                           "'device'? valid keys: data, device, ")
    assert "required property" not in line  # the misspelt key is the missing one: said once
    config.write_text("devce: cpu\n")  # 'name' is missing as well: named after the unknown key
    line = one_line_error(capsys, main(["data", "fetch", "--config", str(config), "--data-dir", str(tmp_path / "d")]))
    assert line.index("unknown key 'devce'") < line.index("'name' is a required property")
    assert not (tmp_path / "d").exists()


def test_unknown_keys_without_a_close_match_list_the_valid_ones():
    from gradmc.config import ConfigError, validate_config

    config = yaml.safe_load(SMOKE.read_text())
    config["ising_sampling"]["colour"] = "red"
    with pytest.raises(ConfigError) as err:
        validate_config(config)
    assert str(err.value).startswith("unknown key 'colour' in 'ising_sampling'; valid keys: ")
    assert "did you mean" not in str(err.value)


def test_an_unknown_sampler_gets_the_closest_name_and_the_valid_ones(tmp_path, capsys):
    config = _smoke_with(tmp_path, "bad.yaml", lambda c: c["ising_sampling"].__setitem__("samplers", ["GWG", "GWK"]))
    out = tmp_path / "results" / "metrics.parquet"
    line = one_line_error(capsys, main(["run", "ising_sampling", "--config", str(config), "--out", str(out)]))
    assert "config key 'ising_sampling.samplers.1': unknown sampler 'GWK' — did you mean 'GWG'? valid: ACS, " in line
    assert "Gibbs-{block_size}, " in line and "^(" not in line  # the declared names, never the schema's pattern
    assert not (tmp_path / "results").exists()
    line = one_line_error(capsys, main(["check-sampler", "gibs-1"]))
    assert "unknown sampler 'gibs-1' — did you mean 'Gibbs-1'? valid: " in line


def test_the_sampler_pattern_of_the_schema_is_never_shown():
    """Were a sampler to reach the schema's generated pattern, its error names the samplers too."""
    import jsonschema

    from gradmc.config import _describe, _load_schema

    config = yaml.safe_load(SMOKE.read_text())
    config["ising_sampling"]["samplers"] = ["GWK"]
    validator = jsonschema.Draft202012Validator(_load_schema())
    errors = [e for e in validator.iter_errors(config) if e.validator == "pattern"]
    assert errors
    text = _describe(errors[0])
    assert "unknown sampler 'GWK' — did you mean 'GWG'?" in text and "^(" not in text


def test_other_unknown_names_get_the_closest_one(tmp_path, capsys):
    config = _smoke_with(tmp_path, "bad.yaml", lambda c: c["ebm"].__setitem__("samplers", ["GWK"]))
    line = one_line_error(capsys, main(["data", "fetch", "--config", str(config), "--data-dir", str(tmp_path / "d")]))
    assert "config key 'ebm.samplers.0': unknown value 'GWK' — did you mean 'GWG'? valid: GWG, Gibbs-1" in line
    line = one_line_error(capsys, main(["data", "fetch", "glas", "--data-dir", str(tmp_path / "d")]))
    assert "unknown data set or file 'glas' — did you mean 'glass'? data sets: all, static_mnist, " in line
    assert not (tmp_path / "d").exists()
    with pytest.raises(SystemExit):  # argparse's own usage error, status 2
        main(["run", "ising_samplin", "--config", str(SMOKE), "--out", str(tmp_path / "r" / "m.parquet")])
    err = capsys.readouterr().err
    assert "unknown experiment 'ising_samplin' — did you mean 'ising_sampling'? valid: train_rbm, " in err
    assert not (tmp_path / "r").exists()
    metrics = tmp_path / "m.parquet"
    metrics.write_text("")
    line = one_line_error(capsys, main(["claims", "--metrics", f"kmc_bananna={metrics}", "--config", str(SMOKE),
                                        "--out", str(tmp_path / "c" / "claims")]))
    assert "unknown experiment 'kmc_bananna' — did you mean 'kmc_banana'?" in line


@pytest.mark.parametrize(("command", "what"), [("run", "an experiment"), ("figure", "a figure"), ("data", "an action")])
def test_a_command_without_its_choice_says_what_to_name(capsys, command, what):
    assert main([command]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"gradmc {command}: error: name {what} (`gradmc {command} --help` lists them)"


@pytest.mark.parametrize("command, status", [(["samplers"], 141), (["--help"], 0)])
def test_a_closed_stdout_ends_the_command_quietly(command, status):
    """`gradmc samplers | head -1`: the reader closes the pipe; gradmc stops with status 141 (128 + SIGPIPE, as
    a Unix tool killed by SIGPIPE) and no traceback (argparse's help ignores the failed write itself: status 0).
    The pipe here has no reader from the start, so every write fails."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run([sys.executable, "-m", "gradmc.cli", *command], stdout=write_end,
                              stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write_end)
    assert done.returncode == status, done.stderr
    assert "Traceback" not in done.stderr and "BrokenPipeError" not in done.stderr, done.stderr


def test_data_list_answers_on_stdout(tmp_path, capsys):
    """`gradmc data list` is a command's answer (like `samplers`): it goes to stdout, so `| head` or `| grep` see it."""
    assert main(["data", "list", "--data-dir", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    assert out.startswith(f"data folder: {tmp_path}") and "binarized_mnist" in out, out[:200]
    assert "missing" in out and "present" not in out  # an empty folder holds none of the files
    assert "data folder:" not in err
