"""The whole DAG on the smoke config, config validation, and code-aware incremental reruns.

The pipeline runs in a copy of the workflow (Snakefile, workflow/, config/, pkg/) in a temporary
folder, so editing a copied source file shows which jobs the source digests schedule, without
touching this checkout. Jobs run the copy's gradmc (PYTHONPATH), so a shard's cache key sees an edit too.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from _localdata import SHARED_DATA, serve, write_canonical_mirror

from gradmc.results import read_parquet

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = [sys.executable, "-m", "snakemake"]


def _snakemake(workdir: Path, *args: str, timeout: int = 1200) -> subprocess.CompletedProcess:
    cmd = [*SNAKEMAKE, "-s", str(workdir / "Snakefile"), "--directory", str(workdir),
           "--configfile", str(workdir / "config" / "smoke.yaml"), "--cores", "2", *args]
    env = dict(os.environ, **DATA_ENV)  # the data folder (and mirror) of the smoke run
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(workdir / "pkg"), env.get("PYTHONPATH")]))
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=workdir, env=env)


#: GRADMC_DATA_DIR (and GRADMC_DATA_BASE_URL) of the module's pipeline runs, set by ``smoke_run``.
DATA_ENV: dict[str, str] = {"GRADMC_DATA_DIR": str(SHARED_DATA)}
#: The files the smoke config reads (gradmc.data.catalog): MNIST t10k (dynamic MNIST test split), UCI Glass, and
#: the synthetic Potts benchmark.
SMOKE_DATA = {"mnist/t10k-images-idx3-ubyte.gz", "mnist/t10k-labels-idx1-ubyte.gz", "glass/glass.data",
              "protein/persistent-vi/original_dataset.mat", "ptb/ptb.valid.txt", "ptb/ptb.test.txt"}


def _scheduled(workdir: Path) -> set[str]:
    """Rule names a dry run would execute (the 'all' target excluded)."""
    out = _snakemake(workdir, "--dry-run")
    assert out.returncode == 0, out.stdout + out.stderr
    text = out.stdout + out.stderr
    if "Nothing to be done" in text:
        return set()
    table = text.split("Job stats:", 1)[1].split("total", 1)[0]  # rows "<rule>  <count>"
    return set(re.findall(r"^(\w+)\s+\d+\s*$", table, flags=re.M)) - {"all"}


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory, real_data) -> Path:
    """The smoke DAG from an EMPTY data folder: its fetch rules download every file it reads from a 127.0.0.1
    mirror of ../shared/data (the real code path: pooch, checksums); without ../shared/data, from the files'
    own URLs through ``real_data`` (skipped when that fails, FAILED under CI=true)."""
    work = tmp_path_factory.mktemp("pipeline")
    data = work / "fetched-data"
    with contextlib.ExitStack() as stack:
        if (SHARED_DATA / "MANIFEST.tsv").is_file():
            mirror = write_canonical_mirror(SHARED_DATA, work / "mirror", convert=False)
            DATA_ENV.update(GRADMC_DATA_DIR=str(data), GRADMC_DATA_BASE_URL=stack.enter_context(serve(mirror)))
        else:
            DATA_ENV.update(GRADMC_DATA_DIR=str(real_data("mnist_test", "glass", "potts_synthetic")))
        yield _run_smoke(work)
    DATA_ENV.clear()
    DATA_ENV["GRADMC_DATA_DIR"] = str(SHARED_DATA)


def _run_smoke(work: Path) -> Path:
    for name in ("Snakefile", "environment.yml"):
        shutil.copy(REPO / name, work / name)
    for name in ("workflow", "config"):
        shutil.copytree(REPO / name, work / name)
    shutil.copytree(REPO / "pkg", work / "pkg", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    out = _snakemake(work)
    log_dir = work / "results" / "smoke" / "logs"
    logs = "\n".join(p.read_text() for p in log_dir.glob("*.log")) if log_dir.exists() else ""
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-4000:] + logs[-4000:]
    return work


@pytest.mark.slow
def test_smoke_run_fetched_exactly_its_data(smoke_run):
    if "GRADMC_DATA_BASE_URL" not in DATA_ENV and DATA_ENV["GRADMC_DATA_DIR"] != str(smoke_run / "fetched-data"):
        pytest.skip("no ../shared/data: the smoke run read an existing data folder, nothing was fetched")
    data = smoke_run / "fetched-data"
    fetched = {p.relative_to(data).as_posix() for p in data.rglob("*") if p.is_file()}
    assert fetched == SMOKE_DATA  # no partial, staging or extra files; each verified against its sha256
    for rel in SMOKE_DATA:
        assert (data / rel).read_bytes() == (SHARED_DATA / rel).read_bytes(), rel
    logs = smoke_run / "results" / "smoke" / "logs"
    for name in ("mnist_test_images", "mnist_test_labels", "glass", "potts_synthetic", "ptb_valid", "ptb_test"):
        assert "downloaded" in (logs / f"fetch_{name}.log").read_text(), name


@pytest.mark.slow
def test_report_collects_figures_tables_and_claims(smoke_run):
    out = _snakemake(smoke_run, "--report", str(smoke_run / "results" / "report.html"))
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    html = (smoke_run / "results" / "report.html").read_text(errors="replace")
    for name in ("fig3_rbm_sampling.png", "kmc_fig3_banana.png", "claims.md", "gwg_table2_ebm.md",
                 "gwg_appj_text_ebm.md", "gwg_appj_text_ais.png"):
        assert name in html, name
    assert "Config: " in html and "smoke" in html and "ESS" in html and "MMD" in html


def _smoke_config() -> dict:
    import yaml

    return yaml.safe_load((REPO / "config" / "smoke.yaml").read_text())


@pytest.mark.slow
def test_smoke_dag_produces_figure_and_metrics(smoke_run):
    res = smoke_run / "results" / "smoke"  # each config writes under results/<config name>/
    for rel in ("figures/fig3_rbm_sampling.pdf", "figures/fig3_rbm_sampling.png",
                "tables/fig3_rbm_sampling.csv", "tables/fig3_rbm_sampling.md",
                "rbm_sampling/rbm.pt", "rbm_sampling/reference.npz", "data/mnist.npz",
                "tables/sampler_cost.csv", "tables/sampler_cost.md", "claims.md", "claims.csv",
                "figures/fig2_rbm_relaxed.png", "figures/fig4_ising_sampling.png", "figures/fig5_fhmm_sampling.png",
                "tables/fig2_rbm_relaxed.md", "tables/fig4_ising_sampling.md", "tables/fig5_fhmm_sampling.md",
                "figures/kmc_fig2_trajectories.png", "tables/kmc_fig2_trajectories.md",
                "figures/kmc_fig3_banana.png", "tables/kmc_fig3_banana.md",
                "tables/gwg_table2_ebm.md", "figures/gwg_fig14_ais.png", "figures/gwg_fig8_samples.png",
                "figures/gwg_ebm_learning_curve.png",
                "ebm/metrics.parquet", "data/images/dynamic_mnist.npz.json",
                "tables/gwg_appj_text_ebm.md", "tables/gwg_appj_text_ebm.csv", "figures/gwg_appj_text_ais.png",
                "text_ebm/metrics.parquet", "text_ebm/ebm.pt.samples.txt", "data/ptb.npz.json",
                "figures/sampler_leaderboard.png", "tables/sampler_leaderboard.csv", "tables/sampler_leaderboard.md"):
        assert (res / rel).stat().st_size > 0, rel
    df, prov = read_parquet(res / "rbm_sampling" / "metrics.parquet")
    samplers = _smoke_config()["rbm_sampling"]["samplers"]  # every later sampler runs end to end in smoke
    assert set(df["sampler"]) == set(samplers) | {"Target"}
    mmd = df[df["metric"] == "log_mmd"]
    assert sorted(mmd["step"].unique()) == [0, 10, 20, 30, 40]
    assert mmd["value"].notna().all()
    ess = df[df["metric"] == "ess"]
    assert len(ess) == len(samplers) * 8 and (ess["value"] > 0).all()
    assert prov["config_hash"] and prov["package_version"]
    cost, _ = read_parquet(res / "sampler_cost" / "metrics.parquet")
    rel = cost[cost["metric"] == "relative_cost"].set_index(["target", "sampler"])["value"]
    assert set(rel.index.get_level_values("target")) == {"mnist_rbm", "ising_4x4"}
    assert (rel.xs("Gibbs-1", level="sampler") == 1.0).all() and (rel > 0).all()
    # every job wrote its log
    assert {p.stem for p in (res / "logs").glob("*.log")} >= {
        "prepare_mnist", "train_rbm", "rbm_reference", "rbm_sampling", "figure_rbm_sampling", "sampler_cost",
        "table_sampler_cost", "claims", "rbm_relaxed", "figure_rbm_relaxed", "fhmm_sampling", "figure_fhmm_sampling",
        "ising_sampling", "figure_ising_sampling", "kmc_trajectories", "figure_kmc_trajectories",
        "kmc_banana", "figure_kmc_banana", "prepare_ptb", "train_text_ebm", "train_text_lm", "eval_text_ebm",
        "figure_text_ebm"}
    claims = (res / "claims.md").read_text()
    assert "DMALA ESS > GWG ESS on the MNIST RBM" in claims
    assert "GWG ESS > Gibbs-1 ESS on the MNIST RBM" in claims and ("PASS" in claims or "FAIL" in claims)
    for figure in ("GWG Fig. 2", "GWG Fig. 4", "GWG Fig. 5", "KMC Fig. 2", "KMC Fig. 3"):
        assert figure in claims


@pytest.mark.slow
def test_complete_run_schedules_nothing(smoke_run):
    assert _scheduled(smoke_run) == set()


@pytest.mark.slow
def test_touching_a_source_file_schedules_nothing(smoke_run):
    (smoke_run / "pkg" / "gradmc" / "samplers" / "discrete" / "gwg.py").touch()
    (smoke_run / "pkg" / "gradmc" / "experiments" / "rbm_sampling" / "figure.py").touch()
    assert _scheduled(smoke_run) == set()


def _edited(path: Path, edit: str = "\n_EDITED_FOR_A_TEST = 1\n"):
    """Append ``edit`` to ``path`` (by default a line of code); returns the original text."""
    original = path.read_text()
    path.write_text(original + edit)
    return original


RBM_JOBS = {"rbm_sampling", "figure_rbm_sampling", "sampler_cost", "table_sampler_cost", "claims",
            "figure_leaderboard"}
# every sampling experiment runs GWG, so editing it reruns them all (and their figures), never data or training
# and the learning experiments that sample with it (PCD, EBM training and AIS), never data stages, the RBM's CD
# training or the KMC experiments (they use no discrete sampler)
SAMPLER_JOBS = RBM_JOBS | {"rbm_relaxed", "figure_rbm_relaxed", "fhmm_sampling", "figure_fhmm_sampling",
                           "ising_sampling", "figure_ising_sampling", "ising_pcd", "figure_ising_pcd",
                           "potts_proteins", "figure_potts_proteins", "train_ebm", "ais_ebm", "figure_ebm",
                           "train_text_ebm", "eval_text_ebm", "figure_text_ebm"}


@pytest.mark.slow
def test_comment_docstring_and_layout_edits_schedule_nothing(smoke_run):
    """Digests of meaning, not bytes: the most imported sampler and a figure module, edited in every way that leaves
    their code alone, schedule no job (every stored shard stays valid)."""
    edits = {
        "samplers/discrete/gwg.py": lambda t: "# a new first line\n" + t.replace('"""', '"""A docstring edit. ', 1),
        "figures/style.py": lambda t: t.replace("\n\n\n", "\n\n\n# a comment between definitions\n\n\n", 1),
        "samplers/base.py": lambda t: t.replace('    """', '    """An edited function docstring. ', 1) + "\n\n",
    }
    originals = {}
    try:
        for rel, edit in edits.items():
            path = smoke_run / "pkg" / "gradmc" / rel
            originals[path] = path.read_text()
            path.write_text(edit(originals[path]))
            assert path.read_text() != originals[path], rel
        assert _scheduled(smoke_run) == set()
    finally:
        for path, text in originals.items():
            path.write_text(text)


@pytest.mark.slow
def test_editing_a_sampler_reruns_sampling_and_figure_only(smoke_run):
    path = smoke_run / "pkg" / "gradmc" / "samplers" / "discrete" / "gwg.py"
    original = _edited(path)
    try:
        assert _scheduled(smoke_run) == SAMPLER_JOBS
    finally:
        path.write_text(original)
    assert _scheduled(smoke_run) == set()


@pytest.mark.slow
def test_editing_a_figure_module_reruns_only_that_figure(smoke_run):
    path = smoke_run / "pkg" / "gradmc" / "experiments" / "rbm_sampling" / "figure.py"
    original = _edited(path)
    try:
        assert _scheduled(smoke_run) == {"figure_rbm_sampling"}
    finally:
        path.write_text(original)


@pytest.mark.slow
def test_editing_training_code_reruns_training_and_downstream(smoke_run):
    path = smoke_run / "pkg" / "gradmc" / "training" / "cd.py"
    original = _edited(path)
    try:
        assert _scheduled(smoke_run) == {"train_rbm", "rbm_reference", *RBM_JOBS}
    finally:
        path.write_text(original)


@contextlib.contextmanager
def _config_edited(workdir: Path, edit):
    """The smoke config of ``workdir`` with ``edit(config_dict)`` applied (YAML rewritten), restored afterwards."""
    import yaml

    path = workdir / "config" / "smoke.yaml"
    original = path.read_text()
    config = yaml.safe_load(original)
    edit(config)
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    try:
        yield
    finally:
        path.write_text(original)


@pytest.mark.slow
def test_editing_a_config_key_reruns_exactly_the_jobs_that_read_it(smoke_run):
    def more_iterations(c):
        c["kmc_banana"]["num_iterations"] += 1

    with _config_edited(smoke_run, more_iterations):
        assert _scheduled(smoke_run) == {"kmc_banana", "figure_kmc_banana", "claims"}

    def thinner_benchmark(c):  # kmc_gpc_benchmark reads only kmc_gpc.benchmark; kmc_gpc reads all of kmc_gpc
        c["kmc_gpc"]["benchmark"]["thin"] += 1

    with _config_edited(smoke_run, thinner_benchmark):
        assert _scheduled(smoke_run) == {"kmc_gpc_benchmark", "kmc_gpc", "figure_kmc_gpc", "claims"}

    def other_gamma(c):  # a sampler setting never reruns the cached benchmark chains (smoke: the default 0.3)
        c["kmc_gpc"]["kamh_gamma"] = 0.6

    with _config_edited(smoke_run, other_gamma):
        assert _scheduled(smoke_run) == {"kmc_gpc", "figure_kmc_gpc", "claims"}
    assert _scheduled(smoke_run) == set()


@pytest.mark.slow
def test_writing_a_default_explicitly_or_reordering_keys_reruns_nothing(smoke_run):
    """Defaults live in the schema and are filled in when the config loads, so spelling one out is no change;
    a job's config part is compared with its keys sorted."""
    import yaml

    schema = yaml.safe_load((REPO / "pkg" / "gradmc" / "experiments" / "kmc_banana" / "schema.yaml").read_text())
    smoke = yaml.safe_load((smoke_run / "config" / "smoke.yaml").read_text())
    omitted = {k: v["default"] for k, v in schema["properties"].items()
               if "default" in v and k not in smoke["kmc_banana"]}
    assert omitted, "the smoke config spells out every kmc_banana key; this test needs one it leaves to the schema"

    def spell_out(c):
        c["kmc_banana"].update(omitted)

    with _config_edited(smoke_run, spell_out):
        assert _scheduled(smoke_run) == set()

    def reorder(c):  # the same keys and values in another order are no change either
        for section in ("kmc_banana", "kmc_gpc"):
            c[section] = dict(reversed(list(c[section].items())))

    with _config_edited(smoke_run, reorder):
        assert _scheduled(smoke_run) == set()


def test_invalid_config_stops_before_any_job(tmp_path):
    bad = tmp_path / "bad.yaml"
    text = (REPO / "config" / "smoke.yaml").read_text().replace("num_steps: 40", "num_steps: -5")
    bad.write_text(text)
    out = subprocess.run([*SNAKEMAKE, "-s", str(REPO / "Snakefile"), "--directory", str(tmp_path),
                          "--configfile", str(bad), "--cores", "1"], capture_output=True, text=True, timeout=120)
    assert out.returncode != 0
    text = out.stdout + out.stderr
    assert "rbm_sampling.num_steps" in text and "-5" in text and "minimum" in text
    assert not (tmp_path / "results").exists()


def test_a_module_that_is_not_valid_python_stops_planning_with_its_file_and_line(tmp_path):
    for name in ("Snakefile", "workflow", "config", "pkg"):
        (shutil.copytree if (REPO / name).is_dir() else shutil.copy)(REPO / name, tmp_path / name)
    path = tmp_path / "pkg" / "gradmc" / "samplers" / "discrete" / "gwg.py"
    lines = path.read_text().count("\n")
    path.write_text(path.read_text() + "def broken(:\n")
    out = subprocess.run([*SNAKEMAKE, "-s", str(tmp_path / "Snakefile"), "--directory", str(tmp_path), "--configfile",
                          str(tmp_path / "config" / "smoke.yaml"), "--cores", "1", "--dry-run"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode != 0
    assert f"{path}, line {lines + 1}: invalid syntax" in out.stdout + out.stderr
    assert not (tmp_path / "results").exists()


def test_snakemake_lint_is_clean():
    """`make lint`'s check: every Snakemake lint except "specify a conda environment or container" (the rules
    name none on purpose: environment.yml is for a conda env made by hand)."""
    out = subprocess.run([sys.executable, str(REPO / "workflow" / "lint.py"), "-s", str(REPO / "Snakefile"),
                          "--directory", str(REPO)], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Congratulations" in out.stdout + out.stderr


_SHARD_LINE = re.compile(r"^\[(\S+)\] shards: (\d+) computed, (\d+) from the cache", flags=re.M)
#: the samplers whose code includes samplers/discrete/factorised.py: its own kernels (DMALA, DULA, DLMC,
#: DLMC-Euler) and ACS, whose kernel builds on factorised.IndependentFlipMH
FACTORISED = {"DMALA", "DULA", "DLMC", "DLMC-Euler", "ACS"}


def _factorised(sampler: str) -> bool:
    """Whether a shard's sampler (options included, e.g. ``DMALA(adapt=1000)``) is one of the factorised kernels."""
    from gradmc.sampler_catalog import parse

    return parse(sampler)[0] in FACTORISED
SAMPLING = ("ising_sampling", "fhmm_sampling", "rbm_sampling")


def _shard_counts(workdir: Path, name: str) -> tuple[int, int]:
    found = _SHARD_LINE.findall((workdir / "results" / "smoke" / "logs" / f"{name}.log").read_text())
    assert found, f"no shard line in the {name} log"
    return int(found[-1][1]), int(found[-1][2])


def _shard_samplers(workdir: Path, name: str) -> list[str]:
    from gradmc.config import load_config
    from gradmc.experiments.standard import job_config
    from gradmc.registry import standard

    entry = standard(name)
    module = __import__(entry.module, fromlist=["shards"])
    inputs = {key: str(workdir / "results" / "smoke" / rel) for key, rel in entry.inputs.items()}
    config = job_config(name, load_config(workdir / "config" / "smoke.yaml"))
    return [shard.sampler for shard in module.shards(config, inputs)]


@pytest.mark.slow
def test_editing_one_sampler_recomputes_only_its_shards(smoke_run):
    """A real edit to the factorised kernels (DMALA, DULA, DLMC, DLMC-Euler; ACS imports them) reruns the sampling
    jobs, and inside them only those samplers' shards are computed; the other shards come from the cache with
    identical rows. Restoring the file finds every shard in the cache. Last in the module: it reruns jobs."""
    from gradmc.codedigest import code_manifest
    from gradmc.samplers.discrete.registry import sampler_modules

    run = {s for name in SAMPLING for s in _shard_samplers(smoke_run, name)}
    users = {s for s in run if "samplers/discrete/factorised.py" in code_manifest(*sampler_modules(s))}
    assert users == {s for s in run if _factorised(s)} and {"DMALA", "ACS"} <= users
    res = smoke_run / "results" / "smoke"
    targets = [f"results/smoke/{name}/metrics.parquet" for name in SAMPLING]  # relative to --directory
    before = {name: read_parquet(res / name / "metrics.parquet")[0] for name in SAMPLING}
    path = smoke_run / "pkg" / "gradmc" / "samplers" / "discrete" / "factorised.py"
    original = _edited(path)
    try:
        assert {"ising_sampling", "fhmm_sampling", "rbm_sampling"} <= _scheduled(smoke_run)
        out = _snakemake(smoke_run, *targets)
        assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
        for name in SAMPLING:
            samplers = _shard_samplers(smoke_run, name)
            edited = sum(map(_factorised, samplers))
            assert edited > 0 and edited < len(samplers), name
            assert _shard_counts(smoke_run, name) == (edited, len(samplers) - edited), name
            after = read_parquet(res / name / "metrics.parquet")[0]
            kept = sorted(s for s in set(samplers) if not _factorised(s))
            old = before[name][before[name]["sampler"].isin(kept)].reset_index(drop=True)
            new = after[after["sampler"].isin(kept)].reset_index(drop=True)
            pd.testing.assert_frame_equal(new, old)  # wall times too: the rows are the cached ones
            assert set(after["sampler"]) >= set(samplers)
    finally:
        path.write_text(original)
    out = _snakemake(smoke_run, *targets)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    for name in SAMPLING:
        assert _shard_counts(smoke_run, name) == (0, len(_shard_samplers(smoke_run, name))), name
