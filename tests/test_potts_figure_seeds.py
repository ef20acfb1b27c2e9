"""The Potts proteins figure (GWG Fig. 7 / 12 / 13) over several seeds: curves are the mean over seeds with a 95%
t band, the table gives mean, t interval and the number of seeds per (protein, method), the coupling heat maps
show the lowest seed's fit.

A synthetic metrics frame (one protein, L = 10) with known per-seed values: PLM one fit (seed 0, as on all rows),
PCD-Gibbs and PCD-GWG seeds 0, 1, 2. Value at k = f(k) + offset, with offsets GWG (0, 0.1, 0.2): mean + 0.1,
s = 0.1; Gibbs (0, 0, 0.3): mean + 0.1, s = sqrt(0.03); PLM 0.05. With n = 3, t_{0.975, 2} = 4.302652729749462
(tables), so the half-widths are t * 0.1 / sqrt(3) = 0.248413771175033 (GWG) and t * sqrt(0.03) / sqrt(3) =
t * 0.1 = 0.4302652729749462 (Gibbs).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.collections import PolyCollection

import gradmc.experiments.potts_proteins.figure as potts_figure
from gradmc.experiments.potts_proteins.figure import curve_table, figure, matrix, seed_interval, summary_table
from gradmc.experiments.runner import tidy_frame
from gradmc.results import provenance, write_parquet

T_975_2 = 4.302652729749462  # t quantile 0.975 with 2 degrees of freedom
HALF_GWG = T_975_2 * 0.1 / math.sqrt(3)
HALF_GIBBS = T_975_2 * 0.1
L = 10
KS = (1, 2, 5, 10, 20)
OFFSETS = {"PLM": {0: 0.05}, "PCD-Gibbs": {0: 0.0, 1: 0.0, 2: 0.3}, "PCD-GWG": {0: 0.0, 1: 0.1, 2: 0.2}}
BASE = {"recall": lambda k: k / 40, "recall_apc": lambda k: k / 40 + 0.05,
        "precision": lambda k: 0.6 - k / 40, "precision_apc": lambda k: 0.65 - k / 40}
RMSE = {"PLM": {0: 0.5}, "PCD-Gibbs": {0: 0.4, 1: 0.4, 2: 0.4}, "PCD-GWG": {0: 0.3, 1: 0.2, 2: 0.4}}
TIME = {"PLM": {0: 5.0}, "PCD-Gibbs": {0: 1.0, 1: 2.0, 2: 3.0}, "PCD-GWG": {0: 1.0, 1: 2.0, 2: 3.0}}


def _norms(seed: int) -> np.ndarray:
    F = np.add.outer(np.arange(L), np.arange(L)).astype(float) * (seed + 1)
    np.fill_diagonal(F, 0.0)
    return F


def _frame() -> pd.DataFrame:
    contact = (np.abs(np.subtract.outer(np.arange(L), np.arange(L))) >= 6).astype(float)
    contact[0, 9] = contact[9, 0] = np.nan  # a pair without structure
    parts = []
    for method, offsets in OFFSETS.items():
        for seed, offset in offsets.items():
            values = [(metric, f(k) + offset, (k, -1, -1)) for metric, f in BASE.items() for k in KS]
            values += [("coupling_rmse", RMSE[method][seed], (-1, -1, -1)),
                       ("coupling_norm_rmse", 2 * RMSE[method][seed], (-1, -1, -1)),
                       ("num_iterations", 100, (-1, -1, -1)), ("train_time_s", TIME[method][seed], (-1, -1, -1))]
            values += [(name, v, (-1, *divmod(s, L))) for name, mat in (("coupling_norm", _norms(seed)),
                                                                       ("contact", contact))
                       for s, v in enumerate(mat.ravel())]
            rows = [(method, seed, -1, 0, metric, float(v), 10, 10, 1.0) for metric, v, _ in values]
            cells = [cell for _, _, cell in values]
            d = tidy_frame(rows, "potts_proteins", "toy")
            d.insert(d.columns.get_loc("sampler") + 1, "length", np.int64(L))
            d[["k", "i", "j"]] = np.asarray(cells, dtype=np.int64)
            parts.append(d)
    df = pd.concat(parts, ignore_index=True)
    # seed 2's rows first: nothing may depend on which seed's row comes first
    return df.sample(frac=1.0, random_state=0).sort_values("seed", ascending=False, kind="stable")


def _row(table: pd.DataFrame, method: str) -> pd.Series:
    (i,) = np.flatnonzero(table["method"] == method)
    return table.iloc[i]


def test_seed_interval_by_hand():
    mean, low, high, n = seed_interval([0.25, 0.35, 0.45])
    assert n == 3 and mean == pytest.approx(0.35)
    assert (low, high) == (pytest.approx(0.35 - HALF_GWG), pytest.approx(0.35 + HALF_GWG))
    mean, low, high, n = seed_interval([0.7, np.nan])  # NaN dropped: one seed, no interval
    assert (mean, n) == (0.7, 1) and math.isnan(low) and math.isnan(high)
    assert seed_interval([2.0, 2.0, 2.0])[1:3] == (2.0, 2.0)
    assert seed_interval([])[3] == 0 and math.isnan(seed_interval([])[0])


def test_summary_table_mean_interval_and_seeds():
    table = summary_table(_frame())
    assert table["method"].tolist() == ["PLM", "PCD-Gibbs", "PCD-GWG"] and (table["L"] == L).all()
    assert table.set_index("method")["seeds"].to_dict() == {"PLM": 1, "PCD-Gibbs": 3, "PCD-GWG": 3}
    gwg, gibbs, plm = _row(table, "PCD-GWG"), _row(table, "PCD-Gibbs"), _row(table, "PLM")
    # top-L (k = 10): recall 0.25 + offsets, mean 0.35; top-L/5 (k = 2): precision 0.55 + offsets, mean 0.65
    for row, half in ((gwg, HALF_GWG), (gibbs, HALF_GIBBS)):
        for column, mean in (("recall_top_L", 0.35), ("recall_apc_top_L", 0.40), ("precision_top_L", 0.45),
                             ("precision_apc_top_L", 0.50), ("recall_top_L5", 0.15), ("precision_top_L5", 0.65),
                             ("precision_apc_top_L5", 0.70), ("recall_apc_top_L5", 0.20)):
            assert row[column] == pytest.approx(mean), column
            assert row[f"{column}_low"] == pytest.approx(mean - half), column
            assert row[f"{column}_high"] == pytest.approx(mean + half), column
    assert plm["recall_top_L"] == pytest.approx(0.30) and plm["precision_top_L5"] == pytest.approx(0.60)
    assert all(math.isnan(plm[c]) for c in table.columns if c.endswith(("_low", "_high")))
    # coupling RMSE (0.3, 0.2, 0.4): mean 0.3, s 0.1; Gibbs (0.4, 0.4, 0.4): zero width; times (1, 2, 3): s = 1
    assert (gwg["coupling_rmse"], gwg["coupling_rmse_low"], gwg["coupling_rmse_high"]) == (
        pytest.approx(0.3), pytest.approx(0.3 - HALF_GWG), pytest.approx(0.3 + HALF_GWG))
    assert gwg["coupling_norm_rmse_high"] == pytest.approx(0.6 + 2 * HALF_GWG)
    assert gibbs["coupling_rmse_low"] == pytest.approx(0.4) and gibbs["coupling_rmse_high"] == pytest.approx(0.4)
    assert (gwg["train_time_s"], gwg["train_time_s_low"], gwg["train_time_s_high"]) == (
        pytest.approx(2.0), pytest.approx(2.0 - 10 * HALF_GWG), pytest.approx(2.0 + 10 * HALF_GWG))
    assert (gwg["num_iterations"], gwg["num_iterations_low"], gwg["num_iterations_high"]) == (100, 100, 100)
    assert plm["train_time_s"] == 5.0


def test_curve_table_per_k():
    df = _frame()
    c = curve_table(df, "toy", "PCD-GWG", "precision_apc")
    assert c["k"].tolist() == list(KS) and (c["seeds"] == 3).all()
    expected = np.array([0.65 - k / 40 + 0.1 for k in KS])
    np.testing.assert_allclose(c["mean"], expected)
    np.testing.assert_allclose(c["high"] - c["mean"], HALF_GWG)
    np.testing.assert_allclose(c["mean"] - c["low"], HALF_GWG)
    plm = curve_table(df, "toy", "PLM", "recall")
    assert (plm["seeds"] == 1).all() and plm["low"].isna().all() and plm["high"].isna().all()
    np.testing.assert_allclose(plm["mean"], [k / 40 + 0.05 for k in KS])


def test_matrix_picks_one_seed():
    df = _frame()
    np.testing.assert_array_equal(matrix(df, "toy", "PCD-GWG", "coupling_norm"), _norms(0))  # lowest seed
    np.testing.assert_array_equal(matrix(df, "toy", "PCD-GWG", "coupling_norm", seed=2), _norms(2))
    assert matrix(df, "toy", "PLM", "coupling_norm", seed=1) is None
    assert matrix(df, "toy", "PLM", "true_coupling_norm") is None


def test_figure_writes_files_bands_and_seed_zero_heatmaps(tmp_path, monkeypatch):
    figures = []
    save = potts_figure.save_figure

    def keep(fig, prefix):
        figures.append(fig)
        return save(fig, prefix)

    monkeypatch.setattr(potts_figure, "save_figure", keep)
    path = write_parquet(_frame(), tmp_path / "metrics.parquet", provenance({"name": "test"}), validate=True)
    paths = figure(path, tmp_path / "fig7", tmp_path / "table", config_name="test")
    assert {Path(p).name for p in paths} == {"fig7.pdf", "fig7.png", "fig7_couplings.pdf", "fig7_couplings.png",
                                             "table.csv", "table.md"}
    for p in paths:
        assert Path(p).stat().st_size > 0
    assert Path(tmp_path / "fig7.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert Path(tmp_path / "fig7.pdf").read_bytes()[:5] == b"%PDF-"
    table = pd.read_csv(tmp_path / "table.csv")
    assert _row(table, "PCD-GWG")["recall_top_L_high"] == pytest.approx(0.35 + HALF_GWG)
    assert "95% t interval" in (tmp_path / "table.md").read_text()

    curves, heatmaps = figures
    recall = curves.axes[0]
    lines = {ln.get_label(): ln for ln in recall.get_lines() if not ln.get_label().startswith("_")}
    assert set(lines) == {"PLM (1 seed)", "PLM APC (1 seed)", "PCD-Gibbs (3 seeds)", "PCD-Gibbs APC (3 seeds)",
                          "PCD-GWG (3 seeds)", "PCD-GWG APC (3 seeds)"}
    np.testing.assert_allclose(lines["PCD-GWG (3 seeds)"].get_xdata(), KS)  # one line over k, not a zig-zag
    np.testing.assert_allclose(lines["PCD-GWG (3 seeds)"].get_ydata(), [k / 40 + 0.1 for k in KS])
    np.testing.assert_allclose(lines["PLM (1 seed)"].get_ydata(), [k / 40 + 0.05 for k in KS])
    bands = [c for c in recall.collections if isinstance(c, PolyCollection)]
    assert len(bands) == 4  # PCD-Gibbs and PCD-GWG, raw and APC; none for the single PLM fit
    assert "mean over seeds" in curves.get_suptitle() and "95% t" in curves.get_suptitle()

    titles = [ax.get_title() for ax in heatmaps.axes[:4]]
    assert titles[1:] == ["PLM: ||J_ij||, seed 0 (of 1)", "PCD-Gibbs: ||J_ij||, seed 0 (of 3)",
                          "PCD-GWG: ||J_ij||, seed 0 (of 3)"]
    np.testing.assert_array_equal(heatmaps.axes[3].get_images()[0].get_array(), _norms(0))
    assert "lowest seed" in heatmaps.get_suptitle()
