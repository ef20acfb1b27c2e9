# gradmc pipeline: data -> training -> sampling (Ray) -> figures and tables.
#   snakemake --cores 2                                  # quick config (default)
#   snakemake --cores 2 --configfile config/paper.yaml   # the papers' settings
# See README.md. Rules live in workflow/rules/; the config schema in workflow/schemas/.
from pathlib import Path

from snakemake.utils import min_version

min_version("9.0")

REPO = Path(workflow.main_snakefile).resolve().parent


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/rbm_sampling.smk"
include: "workflow/rules/sampler_cost.smk"
include: "workflow/rules/rbm_relaxed.smk"
include: "workflow/rules/fhmm_sampling.smk"
include: "workflow/rules/ising_sampling.smk"
include: "workflow/rules/kmc_trajectories.smk"
include: "workflow/rules/kmc_banana.smk"
include: "workflow/rules/ebm.smk"
include: "workflow/rules/ising_pcd.smk"
include: "workflow/rules/kmc_abc.smk"
include: "workflow/rules/kmc_gpc.smk"
include: "workflow/rules/potts_proteins.smk"
include: "workflow/rules/claims.smk"  # last: it reads every experiment's CLAIMS_INPUTS entry


# Declared here, after the includes: Snakemake resets the default target on every include.
rule all:
    default_target: True
    input:
        ALL_TARGETS,
    message:
        "All figures and tables of the '{config[name]}' config are up to date"
