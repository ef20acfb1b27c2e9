# Shared helpers: config loading and validation, source digests, paths.
import copy as _copy
import os
import sys

sys.path.insert(0, str(REPO / "pkg"))  # gradmc from this checkout, even outside the venv

from gradmc import registry as _registry  # noqa: E402
from gradmc.codedigest import code_manifest, digest_of_manifest, record_manifest  # noqa: E402
from gradmc.config import for_dataset, load_config, select  # noqa: E402
from gradmc.errors import UserError  # noqa: E402


def _config_file():
    cli_files = list(workflow.overwrite_configfiles or [])
    if len(cli_files) > 1:
        raise WorkflowError("give exactly one --configfile (config/quick.yaml, paper.yaml or smoke.yaml)")
    if workflow.config_settings.config:
        raise WorkflowError(
            "--config KEY=VALUE overrides are not supported: every job reads its settings from the config "
            "file, so copy one of config/*.yaml and edit it instead"
        )
    return Path(cli_files[0]).resolve() if cli_files else REPO / "config" / "quick.yaml"


CONFIG_FILE = _config_file()
try:
    config.clear()
    config.update(load_config(CONFIG_FILE))
except UserError as err:
    raise WorkflowError(f"invalid configuration {CONFIG_FILE}: {err}") from None
except SyntaxError as err:  # the sampler catalog reads the kernels' syntax trees (gradmc.sampler_catalog)
    raise WorkflowError(f"{err.filename}, line {err.lineno}: {err.msg} (a gradmc module must be valid Python "
                        "before any job can be planned: the sampler catalog reads its syntax tree)") from None
try:
    _registry.experiments()
except _registry.RegistryError as err:
    raise WorkflowError(f"experiment registry: {err}") from None

# Every config writes under its own folder, so a smoke or paper run never overwrites the quick results.
RESULTS = f"results/{config['name']}"
LOGS = f"{RESULTS}/logs"
# The data folder ($GRADMC_DATA_DIR, else the user cache): every job reads the folder the fetch rules write to.
from gradmc.data import catalog as _catalog  # noqa: E402
from gradmc.data.registry import data_dir as _data_dir  # noqa: E402

DATA_DIR = _data_dir().resolve()
os.environ["GRADMC_DATA_DIR"] = str(DATA_DIR)


envvars:
    "PATH",
    "GRADMC_DATA_DIR",


# Jobs call the `gradmc` console script of the Python running Snakemake (the venv's), activated or not.
os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
# The rules name no conda environment: environment.yml is for a conda env made by hand (its `-e .` needs the
# repository root, not Snakemake's copy of the file), and a named env makes every job run `conda env export`.
# So plain `snakemake --lint` asks for one per rule; `make lint` runs workflow/lint.py, which omits that lint.

# Every job's output goes complete to its log file and, each line prefixed with "[<rule> <wildcards>]", to the
# terminal, so long jobs show their progress:  shell: "gradmc ... 2>&1 | joblog {log} <rule> {wildcards.x} ..."
# (spelled out, since Snakemake's linter flags "{rule}" in a shell command).
# A shell.prefix replaces Snakemake's default bash strict mode, so it is restated: with pipefail a failing
# command still fails its job through the pipe. PYTHONUNBUFFERED: lines appear when printed, not in blocks.
_JOBLOG = r"""
joblog() {
    local log=$1 rule=$2 line tag
    shift 2
    tag="$rule${*:+ }$(IFS=/; echo "$*")"
    tee "$log" | while IFS= read -r line || [[ -n $line ]]; do printf '[%s] %s\n' "$tag" "$line"; done >&2
}
"""
_JOBLOG = _JOBLOG.replace("{", "{{").replace("}", "}}")  # shell.prefix formats its text like a shell command
shell.prefix(f"set -euo pipefail; export PYTHONUNBUFFERED=1; {_JOBLOG}")


def all_cores():
    """The cores a sweep's job may use: this Snakemake's --cores (`workflow.cores`). The submitting process of a
    cluster executor (the slurm profile) has none, and `workflow.cores` would stop the Snakefile there; it gets 1,
    which only labels the submission (the profile's cpus_per_task sizes the allocation), and each job's own
    Snakemake, run inside its allocation with --cores all, sees the allocation's cores."""
    cores = workflow.resource_settings.cores
    return cores if cores is not None and cores != sys.maxsize else 1


def job_threads(wanted=None):
    """Threads of a job that could use several: ``wanted`` (default: all cores) on a machine of more than 2 cores;
    1 on a machine of 2 or fewer. There two one-thread jobs side by side do more work than one job on both cores:
    a ResNet EBM training run takes 434 s on 1 thread and 357 s on 2 (quick config), a sweep's last shard and its
    Ray start-up leave the second core idle, and a 2-core job waits for both cores while one-thread jobs run."""
    cores = all_cores()
    if cores <= 2:
        return 1
    return cores if wanted is None else min(wanted, cores)


#: A scheduling hint only (results never depend on it): seconds the longest jobs took on the quick config, one
#: thread each on a 2-core machine, with their upstream stages. Snakemake starts ready jobs in priority order, so
#: the longest start first and the run does not end with one long job beside an idle core. Jobs not named here
#: take under a minute (figures, tables, claims), or have priorities of their own (EBM training and AIS).
LONG_JOB_SECONDS = {
    "train_rbm": 800, "rbm_reference": 800, "rbm_sampling": 800,  # the chain to GWG Fig. 3
    "ising_pcd_data": 740, "ising_pcd": 740,
    "kmc_gpc_benchmark": 600, "kmc_gpc": 400,
    "potts_proteins": 380, "kmc_banana": 310, "kmc_abc": 240, "ising_sampling": 200, "rbm_relaxed": 170,
    "eval_text_ebm": 120, "fhmm_sampling": 60, "kmc_trajectories": 30,  # short: they otherwise run last, beside
    # the figures and then an idle core
}


#: Priority of the data stage (fetches, prepared data sets): above every job, since Snakemake's priorities do not
#: pass to a job's upstream stages, and a high-priority job (EBM training) waits for its data like any other
DATA_PRIORITY = 60


def long_job_priority(name):
    """Snakemake priority of job ``name`` from :data:`LONG_JOB_SECONDS`: 10 + a minute's worth each (0 when not
    named), below the EBM training (50) and static-MNIST AIS (45) that make the pipeline's longest chain."""
    seconds = LONG_JOB_SECONDS.get(name)
    return 0 if seconds is None else 10 + seconds // 60


#: Where each code digest's per-file digests are recorded, so `make why` can name the files an edit changed.
CODE_RECORDS = Path(".snakemake") / "gradmc-code"


def caption(stage, stem):
    """The report caption ``<stem>.rst`` in a hand-written stage's experiment folder, as Snakemake wants it:
    relative to the rule files."""
    path = _registry.EXPERIMENTS_DIR / stage / f"{stem}.rst"
    if not path.is_file():
        raise WorkflowError(f"gradmc.experiments.{stage}: no report caption {path}")
    return os.path.relpath(path, REPO / "workflow" / "rules")


def digest(*modules):
    """Code digest (comments, docstrings and layout left out) of the gradmc modules a stage runs and all they
    import (gradmc.codedigest), its per-file digests recorded under CODE_RECORDS."""
    try:
        manifest = code_manifest(*modules, root=REPO / "pkg" / "gradmc")
    except SyntaxError as err:
        raise WorkflowError(f"{err.filename}, line {err.lineno}: {err.msg} (a gradmc module must be valid Python "
                            "before any job can be planned: its code digest reads its syntax tree)") from None
    return record_manifest(CODE_RECORDS, manifest) or digest_of_manifest(manifest)


def data_inputs(*datasets):
    """Rule inputs: the data files of ``datasets`` (gradmc.data.catalog names) in the data folder. ancient():
    a re-fetched file is verified to hold the same data, so its new mtime reruns nothing."""
    return [ancient(str(DATA_DIR / f.relpath)) for f in _catalog.resolve_names(list(datasets), DATA_DIR)]


def config_data_inputs(section):
    """data_inputs of what config section ``section`` reads (e.g. "potts_proteins", "kmc_gpc")."""
    return data_inputs(*_catalog.config_datasets({section: config[section]}))


def _canonical(value):
    """``value`` with every mapping's keys sorted: reordering keys in the YAML file is no change to rerun for."""
    if isinstance(value, dict):
        return {k: _canonical(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_canonical(v) for v in value]
    return value


def _part(pick, owner):
    try:
        return _canonical(pick(config))
    except KeyError as err:
        raise WorkflowError(f"{owner} declares {err.args[0]}; fix its META config_keys or the config") from None


def job_config(name):
    """The part of the config standard experiment ``name``'s job reads (its META config_keys plus device and
    gpus_per_shard; device cpu for a cpu_only job), keys sorted: its rerun trigger, and all that `gradmc run`
    gives the job."""
    return _part(_registry.standard(name).job_config, f"gradmc.experiments.{name}")


def stage_config(stage):
    """The part of the config hand-written stage ``stage`` reads (its module's META stages entry), keys sorted."""
    keys = _registry.stage_config_keys(stage)
    return _part(lambda whole: select(whole, keys), f"the stage {stage}")


def ebm_stage_config(stage):
    """stage_config(stage) for one (data set, sampler) job: ebm.train.steps_by_sampler (and any data set's
    override of it) kept at the job's sampler's entry only, and left out when it has none (that sampler runs
    num_steps), so changing Gibbs-1's step count reruns the Gibbs-1 jobs and not GWG's."""
    whole = stage_config(stage)

    def pick(wildcards):
        part = _copy.deepcopy(whole)
        train = part["ebm"]["train"]
        for settings in (train, *(train.get("overrides") or {}).values()):
            if "steps_by_sampler" in settings:
                mine = {k: v for k, v in settings["steps_by_sampler"].items() if k == wildcards.sampler}
                if mine:
                    settings["steps_by_sampler"] = mine
                else:
                    del settings["steps_by_sampler"]
        return part

    return pick


def job_message(exp):
    """The Snakemake message of experiment ``exp``: its META message formatted with its config section (the value
    at its first config key), braces escaped for Snakemake."""
    section = config.get(exp.name)
    if section is None:
        section = config
        for part in exp.config_keys[0].split("."):
            section = section[part]
    try:
        text = exp.message.format(**section)
    except (KeyError, IndexError, ValueError) as err:
        raise WorkflowError(f"gradmc.experiments.{exp.name}.META['message'] {exp.message!r} cannot be formatted "
                            f"with its config section ({type(err).__name__}: {err}); every {{placeholder}} must be "
                            "a key of that section") from None
    return text.replace("{", "{{").replace("}", "}}")


def final_outputs():
    """What a plain `snakemake` makes (the all target): every output of the figure_*, table_* and claims rules.
    Called after every rule file is included; no rule file keeps a list of targets."""
    return [str(path) for r in workflow.rules if r.name.startswith(("figure_", "table_")) or r.name == "claims"
            for path in r.output]


def ebm_setting(section, dataset, key):
    """ebm.<section>.<key> for one data set, as the stage reads it (gradmc.config.for_dataset)."""
    return for_dataset(config["ebm"][section], dataset)[key]
