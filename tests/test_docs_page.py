"""The documentation: `gradmc docs RUN` (the results page of a finished run, built here from a tiny fake results
tree); the README's Python snippet runs as printed; its test commands are the ones CI runs."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pandas as pd
import pytest
from test_errors import one_line_error

from gradmc.cli import main
from gradmc.errors import InputError
from gradmc.results import page as results_page_module
from gradmc.results import provenance, write_parquet
from gradmc.results.page import captions, expected_outputs, results_page, stage_times, write_results_page

REPO = Path(__file__).resolve().parents[1]
PNG = b"\x89PNG\r\n\x1a\n"  # the page links images; it never opens them


def _claims() -> pd.DataFrame:
    return pd.DataFrame({
        "experiment": ["rbm_sampling", "kmc_banana", "rbm_sampling", "ebm"],
        "origin": ["GWG", "KMC", "other", "GWG"],
        "paper": ["Fig. 3", "Fig. 3", "-", "Table 2"],
        "claim": ["GWG mixes faster | than Gibbs-1", "KMC accepts more", "sanity", "GWG beats Gibbs"],
        "effect": [1.5, 0.2, float("nan"), -0.0059],
        "ci_low": [1.1, -0.1, float("nan"), float("-inf")],
        "ci_high": [1.9, 0.5, float("nan"), float("inf")],
        "status": ["PASS", "INCONCLUSIVE", "NOT DECIDABLE AT THIS SCALE", "NOT DECIDABLE AT THIS SCALE"],
    })


@pytest.fixture()
def run(tmp_path: Path) -> Path:
    """A finished quick run as the pipeline leaves it, shrunk to one file of each kind."""
    run = tmp_path / "results" / "quick"
    for folder in ("figures", "tables", "logs", "rbm_sampling", "ebm/frey/GWG"):
        (run / folder).mkdir(parents=True)
    write_parquet(_claims(), run / "claims.parquet", provenance({"name": "quick"}))
    (run / "claims.md").write_text("# Claims of the papers, measured (quick config)\n")
    for stem in ("claims_dashboard", "fig3_rbm_sampling", "sampler_leaderboard", "fig6_ising_pcd_vs_steps"):
        (run / "figures" / f"{stem}.png").write_bytes(PNG)
    (run / "tables" / "fig3_rbm_sampling.md").write_text("| a |\n|--|\n| 1 |\n")
    (run / "tables" / "sampler_cost.md").write_text("| b |\n|--|\n| 2 |\n")
    (run / "logs" / "rbm_sampling.log").write_text("[gradmc] threads: 1\n[gradmc] run done in 12.5s (pid 7)\n")
    (run / "logs" / "ais_ebm_frey_GWG.log").write_text("[gradmc] run done in 99.0s (pid 8)\n")
    (run / "logs" / "fetch_glass.log").write_text("downloading glass.data\n")
    metrics = pd.DataFrame({"metric": ["ess"], "value": [1.0]})
    write_parquet(metrics, run / "rbm_sampling" / "metrics.parquet", provenance({"name": "quick", "x": 1}))
    write_parquet(metrics, run / "ebm" / "frey" / "GWG" / "metrics.parquet", provenance({"name": "quick"}))
    return run


def test_page_holds_claims_figures_times_and_provenance(run):
    page = results_page(run)
    assert page.startswith("# Results of the `quick` config")
    assert "![claims dashboard](figures/claims_dashboard.png)" in page
    assert "| GWG | 1 | 0 | 0 | 1 | 0 | 0 |" in page  # one row of counts per origin, verdicts in order
    assert "| KMC | 0 | 0 | 1 | 0 | 0 | 0 |" in page
    assert "GWG mixes faster \\| than Gibbs-1" in page  # a "|" in a cell does not split the table
    assert "| 1.5 [1.1, 1.9] | PASS |" in page
    assert "| -0.0059 (no interval) | NOT DECIDABLE AT THIS SCALE |" in page and "inf]" not in page
    # each figure under its paper name, with the experiment folder's caption, the config name filled in
    assert "### GWG Fig. 3 / 9 (`fig3_rbm_sampling`)" in page
    assert "![fig3_rbm_sampling](figures/fig3_rbm_sampling.png)" in page
    assert "(config `quick`)" in page and "snakemake.config" not in page
    assert "Config: " not in page  # each caption's config line is said once, at the top
    assert "Table: [`tables/fig3_rbm_sampling.md`](tables/fig3_rbm_sampling.md)" in page
    assert "(`sampler_leaderboard`)" in page and "(`fig6_ising_pcd_vs_steps`)" in page
    assert "GWG Fig. 6" in page  # an extra figure takes its experiment's caption
    assert "- [`tables/sampler_cost.md`](tables/sampler_cost.md)" in page
    # stage times, slowest first; a job that prints no time is left out
    assert page.index("| ais_ebm_frey_GWG | run | 99 |") < page.index("| rbm_sampling | run | 12 |")
    assert "fetch_glass" not in page
    assert "| package_version |" in page
    assert "`rbm_sampling/metrics.parquet`" in page and "`ebm/frey/GWG/metrics.parquet`" in page


def test_figures_are_in_paper_then_figure_number_order(run):
    for stem in ("gwg_fig14_ais", "gwg_fig8_samples", "kmc_fig2_trajectories", "fig2_rbm_relaxed",
                 "gwg_appj_text_ais", "kmc_fig4_abc"):
        (run / "figures" / f"{stem}.png").write_bytes(PNG)
    present = {p.stem for p in (run / "figures").glob("*.png")}
    shown = [s for s in re.findall(r"^### .* \(`(\w+)`\)$", results_page(run), re.M) if s in present]
    assert shown == ["fig2_rbm_relaxed", "fig3_rbm_sampling", "fig6_ising_pcd_vs_steps", "gwg_fig8_samples",
                     "gwg_fig14_ais", "gwg_appj_text_ais", "kmc_fig2_trajectories", "kmc_fig4_abc",
                     "sampler_leaderboard"]


def test_missing_figure_and_table_are_named_where_they_would_be(run):
    (run / "tables" / "fig4_ising_sampling.md").write_text("| c |\n|--|\n| 3 |\n")  # the figure alone is missing
    page = results_page(run)
    fig4 = page.split("(`fig4_ising_sampling`)", 1)[1].split("\n### ", 1)[0]
    assert "**Missing:** `figures/fig4_ising_sampling.png` (expected from the rule `figure_ising_sampling`)" in fig4
    assert "Table: [`tables/fig4_ising_sampling.md`](tables/fig4_ising_sampling.md)" in fig4
    fig3 = page.split("(`fig3_rbm_sampling`)", 1)[1].split("\n### ", 1)[0]
    assert "Missing" not in fig3  # the fixture's figure and table are there
    without = page.split("### Tables without a figure", 1)[1].split("\n## ", 1)[0]
    assert "fig4_ising_sampling" not in without
    assert "- **Missing:** `tables/gwg_table2_ebm.md` (expected from the rule `figure_ebm`)" in without
    # and listed near the top, before the claims, with how to make them
    top = page.split("## Claims", 1)[0]
    assert "## Missing outputs" in top and "`make reproduce CONFIG=quick` makes them again" in top
    assert "- `figures/fig4_ising_sampling.png` (rule `figure_ising_sampling`)" in top
    assert "- `figures/gwg_fig14_ais.png` (rule `figure_ebm`)" in top
    assert "fig3_rbm_sampling" not in top and "claims_dashboard" not in top


def test_a_run_with_every_output_has_no_missing_section(run):
    figures, tables = expected_outputs()
    for stem in figures:
        (run / "figures" / f"{stem}.png").write_bytes(PNG)
    for stem in tables:
        (run / "tables" / f"{stem}.md").write_text("| a |\n|--|\n| 1 |\n")
    page = results_page(run)
    assert "Missing" not in page


def test_expected_outputs_are_what_the_pipeline_rules_make():
    """The hand-written rules' figures and tables (literal paths in workflow/rules/*.smk) are the page's
    HAND_WRITTEN_OUTPUTS; the standard experiments' are the registry's."""
    found: dict[str, tuple[set, set]] = {}
    for smk in sorted((REPO / "workflow" / "rules").glob("*.smk")):
        for block in re.split(r"^rule ", smk.read_text(), flags=re.M)[1:]:
            rule = block.split(":", 1)[0]
            figures = set(re.findall(r"\{RESULTS\}/figures/(\w+)\.png", block)) - {"claims_dashboard"}
            tables = set(re.findall(r"\{RESULTS\}/tables/(\w+)\.md", block))
            if figures or tables:
                found[rule] = (figures, tables)
    assert found == {rule: (set(f), set(t)) for rule, (f, t) in results_page_module.HAND_WRITTEN_OUTPUTS.items()}
    figures, tables = expected_outputs()
    assert figures["fig4_ising_sampling"] == "figure_ising_sampling" and figures["gwg_fig14_ais"] == "figure_ebm"
    assert tables["fig6_ising_pcd_curves"] == "figure_ising_pcd" and "fig6_ising_pcd_vs_steps" in figures


@pytest.mark.parametrize("cells, expected", [
    ((1.5, 1.1, 1.9), "1.5 [1.1, 1.9]"),
    ((1.5, float("nan"), 1.9), "1.5 (no interval)"),
    ((1.5, 1.1, float("nan")), "1.5 (no interval)"),
    ((-0.0059, float("-inf"), float("inf")), "-0.0059 (no interval)"),
    ((2.0, 1.0, float("inf")), "2 (no interval)"),
    ((float("nan"), 1.0, 2.0), ""),
])
def test_effect_cell(cells, expected):
    assert results_page_module._effect_cell(*cells) == expected


def test_stage_times_reads_the_last_done_line(run):
    (run / "logs" / "train_ebm.log").write_text("[gradmc] run done in 3.0s\nresumed\n[gradmc] run done in 4.5s\n")
    times = stage_times(run)
    assert list(times["job"]) == ["ais_ebm_frey_GWG", "rbm_sampling", "train_ebm"]
    assert times.set_index("job").loc["train_ebm", "seconds"] == 4.5


def test_every_figure_of_the_registry_has_a_caption():
    known = captions()
    for stem in ("fig3_rbm_sampling", "kmc_fig3_banana", "gwg_fig14_ais", "sampler_leaderboard", "claims_dashboard"):
        assert known[stem].is_file(), stem


@pytest.mark.parametrize("missing", ["claims.parquet", "figures/claims_dashboard.png"])
def test_unfinished_run_is_refused_naming_what_is_missing(run, missing):
    (run / missing).unlink()
    with pytest.raises(InputError, match=rf"not a finished run \(missing {missing}\).*make reproduce CONFIG=quick"):
        results_page(run)


@pytest.mark.parametrize("keep", ["claims.parquet", "metrics"])
def test_unfinished_run_hint_names_the_recorded_config(run, tmp_path, keep):
    """The hint names the config the run's files record, not the folder's name (a copied or renamed folder)."""
    (run / "claims.md").unlink()
    if keep == "metrics":
        (run / "claims.parquet").unlink()
    renamed = run.rename(tmp_path / "copy-of-run")
    with pytest.raises(InputError, match=r"make reproduce CONFIG=quick` to the end first"):
        results_page(renamed)


def test_unfinished_run_hint_falls_back_to_the_folder_name(run, tmp_path):
    for path in [run / "claims.parquet", *run.glob("**/metrics.parquet")]:
        path.unlink()
    (run / "rbm_sampling" / "metrics.parquet").write_bytes(b"not parquet")
    with pytest.raises(InputError, match=r"make reproduce CONFIG=quick` to the end first"):
        results_page(run)


def test_odd_files_in_a_finished_run_give_a_page(run, tmp_path):
    """A folder where a job log belongs, and a claims footer whose config is not a mapping, do not stop the page."""
    (run / "logs" / "odd.log").mkdir()
    write_parquet(_claims(), run / "claims.parquet", {**provenance({"name": "quick"}), "config": ["not", "a", "map"]})
    page = results_page(run)
    assert page.startswith("# Results of the `quick` config") and "| rbm_sampling | run | 12 |" in page


def test_not_a_folder(tmp_path):
    with pytest.raises(InputError, match="is not a folder"):
        results_page(tmp_path / "nowhere")


def test_cli_writes_the_page_beside_the_run(run, tmp_path, capsys):
    assert main(["docs", str(run)]) == 0
    assert (run / "results.md").read_text() == results_page(run)
    out = tmp_path / "page.md"
    assert main(["docs", str(run), "--out", str(out)]) == 0 and out.is_file()
    (run / "claims.md").unlink()
    assert main(["docs", str(run)]) == 2
    assert "not a finished run (missing claims.md)" in capsys.readouterr().err


def test_write_is_atomic_and_returns_the_path(run, tmp_path):
    path = write_results_page(run, tmp_path / "x.md")
    assert path == tmp_path / "x.md" and not list(tmp_path.glob("*.tmp*"))


@pytest.mark.parametrize("frame, expected", [
    (pd.DataFrame({"experiment": ["x"], "verdict": ["PASS"]}), "lacks the columns origin, paper, claim, effect"),
    (_claims().assign(effect="big"), "the columns effect hold"),
])
def test_claims_table_of_another_shape_is_one_line(run, capsys, frame, expected):
    write_parquet(frame, run / "claims.parquet", provenance({"name": "quick"}))
    line = one_line_error(capsys, main(["docs", str(run)]))
    assert str(run / "claims.parquet") in line and expected in line and "make reproduce CONFIG=quick" in line
    assert not (run / "results.md").exists()


def test_out_naming_a_folder_is_one_line(run, tmp_path, capsys):
    folder = tmp_path / "pages"
    folder.mkdir()
    line = one_line_error(capsys, main(["docs", str(run), "--out", str(folder)]))
    assert f"--out {folder} is an existing folder: expected the path of a file to write" in line
    assert list(folder.iterdir()) == []


def _link_targets(page: Path) -> list[Path]:
    """The files the markdown links and images of ``page`` point to, resolved from its folder."""
    targets = re.findall(r"\]\(([^)]+)\)", page.read_text())
    return [page.parent / unquote(t) for t in targets]


@pytest.mark.parametrize("out", [None, "results.md", "site pages/quick.md", "elsewhere/deep/er/page.md"])
def test_links_of_a_page_written_anywhere_reach_the_run_files(run, tmp_path, out):
    path = write_results_page(run, None if out is None else (run / out if out == "results.md" else tmp_path / out))
    targets = _link_targets(path)
    assert len(targets) >= 5  # claims.md, the dashboard, figures and tables
    assert all(t.is_file() for t in targets), [t for t in targets if not t.is_file()]
    names = {t.resolve().relative_to(run.resolve()).as_posix() for t in targets}
    assert {"claims.md", "figures/claims_dashboard.png", "figures/fig3_rbm_sampling.png",
            "tables/sampler_cost.md"} <= names


def test_link_to_a_run_folder_with_a_space_is_quoted(run, tmp_path):
    spaced = run.rename(tmp_path / "my run")
    path = write_results_page(spaced, tmp_path / "page.md")
    assert "](my%20run/claims.md)" in path.read_text()
    assert all(t.is_file() for t in _link_targets(path))


def _readme_block(heading: str, language: str) -> str:
    """The first fenced ``language`` block of the README section ``## heading``."""
    section = (REPO / "README.md").read_text().split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    return re.search(rf"```{language}\n(.*?)```", section, re.S).group(1)


def test_readme_snippet_runs(capsys):
    exec(compile(_readme_block("A sampler on your own energy", "python"), "README.md", "exec"), {})
    value = float(capsys.readouterr().out.rsplit(":", 1)[1])
    assert 100 < value < 64 * 800 * 5  # pooled ESS of 64 chains x 800 kept draws: positive, finite


def test_readme_says_what_gradmc_samplers_lists(capsys):
    """`gradmc samplers` lists the discrete catalog only; the README says so and names the continuous kernels'
    home, whose classes exist."""
    import gradmc.samplers.continuous as continuous

    text = " ".join((REPO / "README.md").read_text().split())
    assert re.search(r"`gradmc samplers` lists every discrete sampler", text)
    assert main(["samplers"]) == 0
    states = {line.split()[1] for line in capsys.readouterr().out.splitlines()[1:]}
    assert states == {"binary", "categorical"}
    assert "classes of `gradmc.samplers.continuous`" in text
    assert {"HMC", "KMC", "KAMH", "HABC"} <= set(continuous.__all__)


def test_make_help_names_the_results_folders_the_readme_names():
    """Each make target of the README's table that names a folder under results/ says the same in `make help`
    (its ## comment in the Makefile)."""
    helps = dict(re.findall(r"^([a-z-]+):.*?## (.*)$", (REPO / "Makefile").read_text(), re.M))
    rows = re.findall(r"^\| `make ([a-z-]+)[^`]*` \| (.*) \|$", (REPO / "README.md").read_text(), re.M)
    checked = 0
    for target, text in rows:
        for path in re.findall(r"`(results/[^`]*)`", text):
            assert path.rstrip("/") in helps[target], (target, path, helps[target])
            checked += 1
    assert checked >= 5 and "results/$(CONFIG)/" in helps["reproduce"]


def test_readme_says_what_the_decide_config_is():
    readme = " ".join((REPO / "README.md").read_text().split())
    assert "extends: quick.yaml" in (REPO / "config" / "decide.yaml").read_text()
    assert "`config/decide.yaml` extends the quick config" in readme


def test_ci_runs_the_readme_test_commands():
    commands = [line.split("#")[0].strip() for line in _readme_block("Tests", "bash").splitlines() if line.strip()]
    ci = [line.split("#")[0].strip() for line in (REPO / ".ci" / "run").read_text().splitlines()]
    assert commands == [c for c in ci if c.startswith("make ")]
    assert {"make test", "make test-full", "make docs"} <= set(commands)
