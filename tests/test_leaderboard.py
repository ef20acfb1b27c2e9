"""The sampler leaderboard: per-seed replicates under both ESS protocols, against hand-computed values,
and t intervals over seeds against scipy."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from _t_bounds import t_bounds

from gradmc.errors import InputError
from gradmc.experiments.runner import tidy_frame
from gradmc.figures.leaderboard import figure, leaderboard_table, per_seed
from gradmc.results import provenance, write_parquet


def _rbm_rows(seeds=range(5)) -> pd.DataFrame:
    """Two samplers, 3 chains per seed, one batch: 100 evaluations in 2 s (GWG) or 4 s (Gibbs-1)."""
    rows = []
    for sampler, seconds, scale in (("GWG", 2.0, 10.0), ("Gibbs-1", 4.0, 5.0)):
        for seed in seeds:
            for c in range(3):
                rows.append((sampler, seed, c, 1000, "ess", scale * (c + 1), 100, 100, seconds))
                rows.append((sampler, seed, c, 1000, "ess_discs", scale * (c + 1) + seed, 100, 100, seconds))
            rows.append((sampler, seed, -1, 1000, "ess_all_chains", 6 * scale + seed, 100, 100, seconds))
    rows.append(("Target", 0, -1, 0, "log_mmd_target", -5.0, 0, 0, 0.0))
    return tidy_frame(rows, "rbm_sampling", "mnist_rbm")


def test_per_seed_values_of_both_protocols():
    d = per_seed(_rbm_rows())
    gwg0 = d[(d["sampler"] == "GWG") & (d["seed"] == 2)].set_index("protocol")
    # ours: pooled ESS 62 over 3 chains x 100 evaluations, in 2 s
    assert gwg0.loc["ours", "ess_per_second"] == pytest.approx(62 / 2.0)
    assert gwg0.loc["ours", "ess_per_energy_eval"] == pytest.approx(62 / 300)
    # DISCS: per-chain ESS 12, 22, 32 -> mean 22, per chain
    assert gwg0.loc["DISCS", "ess_per_second"] == pytest.approx(22 / 2.0)
    assert gwg0.loc["DISCS", "ess_per_energy_eval"] == pytest.approx(22 / 100)
    assert set(d["sampler"]) == {"GWG", "Gibbs-1"}  # the reference rows are not a sampler


def test_chunked_chains_sum_their_batches():
    """Ising chains run in two chunks of different cost: ours sums ESS and seconds over the chunks; DISCS
    divides each chain by its own batch's seconds and evaluations."""
    rows = []
    for seed in range(5):
        rows += [("GWG", seed, 0, 50, "ess", 4.0, 10, 10, 1.0), ("GWG", seed, 1, 50, "ess", 6.0, 10, 10, 1.0),
                 ("GWG", seed, 0, 50, "ess_discs", 2.0, 10, 10, 1.0),
                 ("GWG", seed, 1, 50, "ess_discs", 4.0, 10, 10, 1.0),
                 ("GWG", seed, -1, 50, "ess_chunk_chains", 9.0, 10, 10, 1.0),
                 ("GWG", seed, 2, 50, "ess", 8.0, 20, 20, 3.0), ("GWG", seed, 2, 50, "ess_discs", 6.0, 20, 20, 3.0),
                 ("GWG", seed, -1, 50, "ess_chunk_chains", 7.0, 20, 20, 3.0)]
    df = tidy_frame(rows, "ising_sampling", "lattice_ising_4x4")
    df["theta"] = 0.3
    d = per_seed(df).set_index(["seed", "protocol"])
    assert d.loc[(0, "ours"), "ess_per_second"] == pytest.approx(16 / 4.0)
    assert d.loc[(0, "ours"), "ess_per_energy_eval"] == pytest.approx(16 / (10 + 10 + 20))
    assert d.loc[(0, "DISCS"), "ess_per_second"] == pytest.approx((2 / 1 + 4 / 1 + 6 / 3) / 3)
    assert d.loc[(0, "DISCS"), "ess_per_energy_eval"] == pytest.approx((2 / 10 + 4 / 10 + 6 / 20) / 3)
    assert set(per_seed(df)["target"]) == {"lattice_ising_4x4 theta 0.3"}


def test_intervals_are_t_over_seeds_and_ranks_within_target_and_protocol():
    table = leaderboard_table({"rbm_sampling": _rbm_rows()})
    row = table[(table["sampler"] == "GWG") & (table["protocol"] == "ours")].iloc[0]
    values = np.array([(60 + s) / 2.0 for s in range(5)])
    assert row["ess_per_second"] == pytest.approx(values.mean())
    # the claims' t interval (t union bootstrap-t), recomputed in tests/_t_bounds.py
    assert (row["ess_per_second_ci_low"], row["ess_per_second_ci_high"]) == pytest.approx(t_bounds(values))
    assert row["seeds"] == 5 and row["rank"] == 1 and row["note"] == ""
    slow = table[(table["sampler"] == "Gibbs-1") & (table["protocol"] == "ours")].iloc[0]
    assert slow["rank"] == 2 and slow["ess_per_second"] == pytest.approx(np.mean([(30 + s) / 4.0 for s in range(5)]))


def test_fewer_than_five_seeds_give_an_unbounded_interval_with_a_note():
    table = leaderboard_table({"rbm_sampling": _rbm_rows(seeds=range(2))})
    assert (table["ess_per_second_ci_low"] == -math.inf).all() and (table["ess_per_second_ci_high"] == math.inf).all()
    assert table["note"].str.contains("2 seeds").all()


def test_metrics_without_the_discs_rows_are_refused():
    df = _rbm_rows()
    with pytest.raises(InputError, match="ess_discs"):
        per_seed(df[df["metric"] != "ess_discs"])


def test_figure_writes_the_plot_and_the_table(tmp_path):
    path = tmp_path / "rbm.parquet"
    write_parquet(_rbm_rows(), path, provenance({"name": "test"}))
    paths = figure({"rbm_sampling": path}, tmp_path / "lb")
    assert {p.name for p in paths} == {"lb.pdf", "lb.png", "lb.csv", "lb.md"}
    table = pd.read_csv(tmp_path / "lb.csv")
    assert len(table) == 4 and set(table["protocol"]) == {"ours", "DISCS"}
    with pytest.raises(InputError, match="unknown experiment"):
        figure({"kmc_banana": path}, tmp_path / "x")


def test_the_pipeline_rule_reads_every_source():
    """workflow/rules/leaderboard.smk reads its inputs from gradmc.specs.leaderboard, the one list the figure checks
    them by; that module imports no matplotlib (parsing the Snakefile draws nothing)."""
    import subprocess
    import sys
    from pathlib import Path

    from gradmc.figures import leaderboard
    from gradmc.specs import leaderboard as spec

    assert leaderboard.SOURCES is spec.SOURCES
    rule = (Path(__file__).resolve().parents[1] / "workflow" / "rules" / "leaderboard.smk").read_text()
    assert "from gradmc.specs.leaderboard import SOURCES" in rule
    code = "import sys, gradmc.specs.leaderboard; print('matplotlib' in sys.modules or 'torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "False"


def test_a_seed_whose_pooled_ess_is_nan_is_left_out_with_a_note():
    df = _rbm_rows()
    nan_row = (df["sampler"] == "GWG") & (df["seed"] == 4) & (df["metric"] == "ess_all_chains")
    df.loc[nan_row, "value"] = math.nan  # ArviZ: the statistic never moved
    table = leaderboard_table({"rbm_sampling": df})
    row = table[(table["sampler"] == "GWG") & (table["protocol"] == "ours")].iloc[0]
    assert row["seeds"] == 4 and "1 seed(s) left out" in row["note"]
    assert row["ess_per_second"] == pytest.approx(np.mean([(60 + s) / 2.0 for s in range(4)]))
    assert row["ess_per_second_ci_low"] == -math.inf  # 4 seeds: t needs 5


@pytest.mark.parametrize("damage, message", [
    (lambda df: df.drop(columns="wall_time_s"), "lacks the column"),
    (lambda df: df.assign(experiment="ising_sampling"), "holds metrics of ising_sampling"),
    (lambda df: df[~df["metric"].isin(["ess_all_chains", "ess_chunk_chains"])], "no pooled ESS rows"),
    (lambda df: df.assign(wall_time_s=0.0), "expected both > 0"),
])
def test_a_file_that_is_not_the_named_experiments_metrics_is_refused_before_any_write(tmp_path, damage, message):
    path = tmp_path / "m.parquet"
    write_parquet(damage(_rbm_rows()), path, provenance({"name": "test"}))
    with pytest.raises(InputError, match=message):
        figure({"rbm_sampling": path}, tmp_path / "lb")
    assert not list(tmp_path.glob("lb*"))


def test_an_unwritable_table_folder_is_refused_before_the_figure_is_written(tmp_path):
    path = tmp_path / "rbm.parquet"
    write_parquet(_rbm_rows(), path, provenance({"name": "test"}))
    (tmp_path / "file").write_text("")
    with pytest.raises(InputError, match="--table-out"):
        figure({"rbm_sampling": path}, tmp_path / "lb", tmp_path / "file" / "sub" / "t")
    assert not list(tmp_path.glob("lb*"))
