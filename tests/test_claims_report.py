"""Claim rows, claims.md/.csv/.parquet with provenance, and the claims dashboard (forest plot)."""

from __future__ import annotations

import math
from dataclasses import replace

import pandas as pd
import pytest

from gradmc.claims import Claim, Interval, agreement, summary, write_claims
from gradmc.claims.base import CLAIM_COLUMNS, NOT_DECIDABLE_HARDWARE, NOT_DECIDABLE_SCALE, NOT_RUN, at_least, hardware
from gradmc.errors import InputError
from gradmc.figures.claims_dashboard import figure, scaled_rows
from gradmc.results import PROVENANCE_COLUMNS, read_parquet


def _claims() -> list[Claim]:
    return [
        Claim("x", "GWG Fig. 3", "GWG's ESS is larger", "log ESS ratio; > 0: GWG larger",
              Interval(1.0, 0.5, 1.5, 100, "chains", "bootstrap"), +1, "GWG 20 vs Gibbs 7"),
        Claim("x", "GWG Fig. 10", "GWG's MMD is lower", "log MMD difference; < 0: GWG lower",
              Interval(0.3, 0.1, 0.5, 5, "seeds", "paired t"), -1),
        Claim("x", "KMC Fig. 3", "KMC beats RW", "log ESS ratio",
              Interval(0.2, -math.inf, math.inf, 2, "seeds", "t"), +1),
        agreement("x", "GWG Table 2", "test log-likelihood", Interval(-82.0, -83.0, -81.0, 32, "AIS chains", "normal"),
                  -80.01, 3.0, "GWG Table 2", "nats", "AIS bias at the paper's settings"),
    ]


def test_claim_rows_carry_the_verdict_and_every_column():
    rows = pd.DataFrame([c.row() for c in _claims()])
    assert list(rows.columns) == CLAIM_COLUMNS
    assert list(rows["status"]) == ["PASS", "FAIL", "INCONCLUSIVE", "PASS"]
    assert "needs at least 5 seeds" in rows["note"].iloc[2]
    table2 = rows.iloc[3]
    assert table2["effect"] == pytest.approx(-82.0 + 80.01)
    assert (table2["ci_low"], table2["ci_high"]) == pytest.approx((-83.0 + 80.01, -81.0 + 80.01))
    assert table2["paper_value"] == -80.01 and table2["tolerance"] == 3.0 and table2["direction"] == 0
    assert "AIS bias" in table2["margin_why"] and table2["test"] == "agreement"
    assert list(rows["origin"]) == ["GWG", "GWG", "KMC", "GWG"] and list(rows["test"])[:3] == ["superiority"] * 3
    assert summary(rows) == ("GWG: 2 of 3 decidable claims PASS (1 FAIL, 0 INCONCLUSIVE); "
                             "KMC: 0 of 1 decidable claims PASS (0 FAIL, 1 INCONCLUSIVE)")


def test_write_claims_with_provenance_and_dashboard(tmp_path):
    frame = pd.DataFrame([c.row() for c in _claims()])
    inputs = {"x": {"path": "m.parquet", "git_commit": "abc", "config_hash": "0123"}}
    md, csv, parquet = write_claims(frame, tmp_path / "claims", "quick", inputs, figure="figures/dash.png")
    text = md.read_text()
    assert "GWG: 2 of 3 decidable claims PASS" in text and "![claims dashboard](figures/dash.png)" in text
    assert "## GWG" in text and "## KMC" in text and "-80.01 (GWG Table 2)" in text
    back, prov = read_parquet(parquet)
    assert prov["config"] == {"name": "quick", "inputs": inputs}
    assert set(CLAIM_COLUMNS) <= set(back.columns) and set(PROVENANCE_COLUMNS) <= set(back.columns)
    assert list(back["status"]) == list(frame["status"])
    on_disk = pd.read_csv(csv)
    assert set(PROVENANCE_COLUMNS) <= set(on_disk.columns)
    assert on_disk["ci_high"].iloc[2] == math.inf
    paths = figure(parquet, tmp_path / "figures" / "dash", "quick")
    assert [p.suffix for p in paths] == [".pdf", ".png"] and all(p.stat().st_size > 1000 for p in paths)


def test_dashboard_scales_rows_with_the_paper_side_to_the_right():
    rows = scaled_rows(pd.DataFrame([c.row() for c in _claims()]))
    assert list(rows["paper"]) == ["GWG Fig. 3", "GWG Fig. 10", "GWG Table 2", "KMC Fig. 3"]
    fig3, fig10, table2, kmc = (rows.iloc[i] for i in range(4))
    assert (fig3.lo, fig3.x, fig3.hi) == pytest.approx((1 / 3, 2 / 3, 1.0))
    assert (fig10.lo, fig10.x, fig10.hi) == pytest.approx((-1.0, -0.6, -0.2))  # direction -1: flipped
    assert table2.band == pytest.approx(1.0) and table2.hi == pytest.approx(-0.99 / 3)
    assert kmc.lo == -math.inf and kmc.hi == math.inf and kmc.x == pytest.approx(1.0)


def test_dashboard_refuses_an_empty_claims_file(tmp_path):
    _, _, parquet = write_claims(pd.DataFrame(columns=CLAIM_COLUMNS), tmp_path / "claims", "")
    with pytest.raises(ValueError, match="no claims"):
        figure(parquet, tmp_path / "dash")


def test_a_claim_the_config_cannot_decide_is_not_decidable_whatever_its_interval():
    """Needs come from the config: an unmet scale need or a missing hardware need overrides a clear interval;
    without a config they are unchecked; a NOT RUN claim names why."""
    config = {"ebm": {"train": {"iterations": 1800}}, "seeds": [0, 1, 2]}
    few = at_least(config, "ebm.train.iterations", 50_000, "training iterations", "the paper's 50,000")
    enough = at_least(config, "seeds", 3, "seeds", reduce=len)
    clear = Interval(1.0, 0.5, 1.5, 100, "chains", "bootstrap")
    base = Claim("x", "GWG Table 2", "GWG beats Gibbs", "nats", clear, +1)
    assert base.status == "PASS" and enough.met and not few.met
    assert replace(base, needs=(enough, few)).status == NOT_DECIDABLE_SCALE
    assert "training iterations >= 50,000 (config ebm.train.iterations = 1,800: unmet" in \
        replace(base, needs=(few,)).row()["note"]
    gpu = hardware("timings of the paper's GPU code", False, config=config)
    assert replace(base, needs=(few, gpu)).status == NOT_DECIDABLE_HARDWARE  # hardware named first
    assert replace(base, needs=(at_least(None, "ebm.train.iterations", 50_000, "it"),)).status == "PASS"
    assert replace(base, not_run="needs OPSD_BOVIN.a2m (ask the authors)").status == NOT_RUN
    with pytest.raises(InputError, match="no 'ebm.eval'"):
        at_least(config, "ebm.eval.levels", 1, "AIS levels")
    rows = pd.DataFrame([c.row() for c in (base, replace(base, needs=(few,)), replace(base, origin="other"))])
    assert summary(rows) == ("GWG: 1 of 1 decidable claims PASS (0 FAIL, 0 INCONCLUSIVE), 1 not decidable at this "
                             "scale; other: 1 of 1 decidable claims PASS (0 FAIL, 0 INCONCLUSIVE)")


def test_claims_md_shows_quotes_and_keeps_undecidable_claims_apart(tmp_path):
    clear = Interval(1.0, 0.5, 1.5, 100, "chains", "bootstrap")
    quote = "GWG ... is able to sample more efficiently than Gibbs"
    config = {"steps": 100}
    rows = pd.DataFrame([c.row() for c in (
        Claim("x", "GWG Fig. 4", "GWG beats Gibbs", "log ratio", clear, +1, quote=quote),
        Claim("x", "GWG Fig. 4", "GWG beats Gibbs at scale", "log ratio", clear, +1,
              needs=(at_least(config, "steps", 10_000, "steps"),)),
        Claim("x", "DMALA Sec. 5", "DMALA beats GWG", "log ratio", clear, +1))])
    md, _, parquet = write_claims(rows, tmp_path / "claims", "quick")
    text = md.read_text()
    assert quote in text and "## other:" in text
    decided, rest = text.index("### Decided by this config (1)"), text.index("### Not decidable by this config")
    assert decided < text.index("GWG beats Gibbs |") < rest < text.index("GWG beats Gibbs at scale")
    assert figure(parquet, tmp_path / "dash", "quick")[1].stat().st_size > 1000


def test_claims_md_escapes_table_pipes(tmp_path):
    clear = Interval(1.0, 0.5, 1.5, 100, "chains", "bootstrap")
    rows = pd.DataFrame([Claim("x", "KMC Fig. 3", "KMC's mean error is lower", "log ||E_hat[x]|| KMC - RW", clear,
                               -1).row()])
    md, _, _ = write_claims(rows, tmp_path / "claims", "quick")
    line = next(x for x in md.read_text().splitlines() if "KMC's mean error" in x)
    assert "\\|\\|E_hat[x]\\|\\|" in line
    assert len(line.replace("\\|", "").split("|")) - 2 == 11  # every row has the header's 11 cells


def test_inconclusive_notes_name_the_decide_config_where_it_runs_larger():
    from gradmc.claims.base import larger_sizes
    from gradmc.config import load_config

    quick, decide = load_config("config/quick.yaml"), load_config("config/decide.yaml")
    assert "num_steps" in larger_sizes("ising_sampling", quick, decide)
    assert larger_sizes("sampler_cost", quick, decide) == []        # the same sizes: nothing to point to
    assert larger_sizes("ising_sampling", decide, decide) == []     # the decide run itself
    assert larger_sizes("ising_sampling", None, decide) == larger_sizes("nothing", quick, decide) == []


def test_claims_frame_appends_the_hint_to_inconclusive_rows_only(tmp_path):
    from test_rbm_sampling import _claims_frame

    from gradmc.claims.base import claims_frame
    from gradmc.config import load_config
    from gradmc.results import provenance, write_parquet

    df = _claims_frame().assign(target="mnist_rbm", energy_evals=0, grad_evals=0, wall_time_s=0.0)
    path = write_parquet(df, tmp_path / "m.parquet", provenance({"name": "test"}), validate=True)
    decide = load_config("config/decide.yaml")
    mine = {**decide, "name": "mine", "rbm_sampling": {**decide["rbm_sampling"], "num_chains": 50}}  # needs met
    frame, _ = claims_frame({"rbm_sampling": path}, mine, theory=False, larger=("config/decide.yaml", decide))
    hinted = frame["note"].str.contains("config/decide.yaml runs rbm_sampling at other sizes \\(num_chains\\)")
    assert hinted.any() and (frame.loc[hinted, "status"] == "INCONCLUSIVE").all()
    assert (frame["status"] == "PASS").any() and not hinted[frame["status"] == "PASS"].any()
    plain, _ = claims_frame({"rbm_sampling": path}, mine, theory=False)
    assert not plain["note"].str.contains("decide.yaml").any()
