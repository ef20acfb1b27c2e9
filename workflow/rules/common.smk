# Shared helpers: config loading and validation, source digests, paths.
import os
import sys

sys.path.insert(0, str(REPO / "pkg"))  # gradmc from this checkout, even outside the venv

from gradmc.codedigest import source_digest  # noqa: E402
from gradmc.config import ConfigError, load_config, validate_config  # noqa: E402


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
except (ConfigError, FileNotFoundError) as err:
    raise WorkflowError(f"invalid configuration {CONFIG_FILE}: {err}") from None

# Every config writes under its own folder, so a smoke or paper run never overwrites the quick results.
RESULTS = f"results/{config['name']}"
LOGS = f"{RESULTS}/logs"
envvars:
    "PATH",


# Jobs call the `gradmc` console script of the Python running Snakemake (the venv's), activated or not.
os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
ENV_FILE = str(REPO / "environment.yml")
ALL_TARGETS = []
CLAIMS_INPUTS = {}  # experiment -> metrics Parquet checked by gradmc.claims.<experiment> (claims.smk)


def digest(*modules):
    """Source digest of the gradmc modules a stage runs (see gradmc.codedigest)."""
    return source_digest(*modules, root=REPO / "pkg" / "gradmc")
