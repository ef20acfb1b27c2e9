"""The GWG App. J text-EBM table and AIS convergence figure (gradmc.experiments.text_ebm.figure) from a real tiny
run."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from _text_ebm_run import tiny_run

from gradmc.errors import InputError
from gradmc.experiments.text_ebm.figure import MODELS, figure
from gradmc.results import provenance, read_parquet, write_parquet


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return tiny_run(tmp_path_factory.mktemp("text_ebm"))


def _metric(df: pd.DataFrame, model: str, metric: str) -> float:
    (value,) = df[(df["sampler"] == model) & (df["metric"] == metric)]["value"].tolist()
    return value


def test_table_figure_and_samples_hold_the_runs_numbers(run, tmp_path):
    metrics, samples, _ = run
    df, _ = read_parquet(metrics)
    paths = figure(metrics, tmp_path / "fig", tmp_path / "tab", config_name="tiny", samples=samples)
    assert sorted(p.name for p in paths) == ["fig.pdf", "fig.png", "tab.csv", "tab.md"]
    assert all(p.stat().st_size > 0 for p in paths)
    tab = pd.read_csv(tmp_path / "tab.csv")
    assert tuple(tab["model"]) == MODELS
    for model in MODELS:
        row = tab[tab["model"] == model].iloc[0]
        assert row["test_log_likelihood"] == pytest.approx(_metric(df, model, "test_log_likelihood"), rel=1e-12)
        assert row["se"] == pytest.approx(_metric(df, model, "test_log_likelihood_se"), rel=1e-12, abs=0)
        assert row["per_token"] == pytest.approx(row["test_log_likelihood"] / 3)  # L = 3 tokens
        assert "digits lost" in row["paper"]
    assert tab.loc[tab["model"] == "uniform", "test_log_likelihood"].item() == pytest.approx(-3 * math.log(4))
    md = (tmp_path / "tab.md").read_text()
    ebm = _metric(df, "EBM (GWG)", "test_log_likelihood")
    assert f"{ebm:.4g}" in md and "[tiny config]" in md
    assert "vocabulary 4 words, sentences of at most 3 words; trains on ptb.valid.txt" in md
    assert "vocabulary 4 (paper 10,000)" in md and "training iterations (App. I) 3 (paper 50,000)" in md
    assert "GWG steps per iteration 2 (paper 20)" in md and "AIS: 6 intermediate distributions, 8 chains" in md
    section = md.split("## Samples", 1)[1]
    lines = samples.read_text().splitlines()
    assert f"{len(lines)} of the {len(lines)} decoded" in section
    assert next(s for s in lines if s) in section and "```text" in section
    assert md.index("differs from the paper") < md.index("| model") < md.index("## Samples")


def test_paper_sizes_read_as_no_deviation_and_no_samples_section(run, tmp_path):
    metrics, _, config = run
    df, _ = read_parquet(metrics)
    paper = {**config, "text_ebm": {**config["text_ebm"], "data": {"train_split": "train", "vocab_size": 10_000,
                                                                     "max_length": 20}}}
    df.loc[df["metric"] == "train_iterations", "value"] = 50_000.0
    write_parquet(df, tmp_path / "m.parquet", provenance(paper), validate=True)
    figure(tmp_path / "m.parquet", tmp_path / "fig", tmp_path / "tab", config_name="")
    md = (tmp_path / "tab.md").read_text()
    assert "## Samples" not in md and "trains on ptb.train.txt, tests on ptb.test.txt" in md
    assert "vocabulary 10,000 words" in md and "vocabulary 10,000 (paper" not in md
    assert "training file" not in md and "training iterations" not in md  # equal to the paper's: not listed
    assert "EBM embedding 4 (paper 256)" in md


def test_foreign_or_partial_metrics_and_a_missing_samples_file_are_named(run, tmp_path):
    metrics, _, config = run
    df, _ = read_parquet(metrics)
    write_parquet(df.assign(experiment="ebm"), tmp_path / "other.parquet", provenance(config), validate=True)
    with pytest.raises(InputError, match=r"other\.parquet holds metrics of \['ebm'\], not of 'text_ebm'"):
        figure(tmp_path / "other.parquet", tmp_path / "fig", tmp_path / "tab", config_name="x")
    write_parquet(df[df["sampler"] != "LSTM LM"], tmp_path / "part.parquet", provenance(config), validate=True)
    with pytest.raises(InputError, match="lacks the test_log_likelihood of LSTM LM"):
        figure(tmp_path / "part.parquet", tmp_path / "fig", tmp_path / "tab", config_name="x")
    with pytest.raises(InputError, match="nope.samples.txt"):
        figure(metrics, tmp_path / "fig", tmp_path / "tab", config_name="x", samples=tmp_path / "nope.samples.txt")
    assert not (tmp_path / "tab.md").exists()
