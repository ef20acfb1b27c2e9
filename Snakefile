# gradmc pipeline: data -> training -> sampling (Ray) -> figures and tables.
#   snakemake --cores 2                                  # quick config (default)
#   snakemake --cores 2 --configfile config/paper.yaml   # the papers' settings
# See README.md and docs/. Rules live in workflow/rules/; the config schema in workflow/schemas/.
from pathlib import Path

from snakemake.utils import min_version

min_version("9.0")

REPO = Path(workflow.main_snakefile).resolve().parent


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/rbm.smk"  # hand-written stages: training, references, data, timing, EBMs
include: "workflow/rules/sampler_cost.smk"
include: "workflow/rules/ising_pcd_data.smk"
include: "workflow/rules/ebm.smk"
include: "workflow/rules/text_ebm.smk"  # GWG App. J: the PTB text EBM
include: "workflow/rules/experiments.smk"  # every standard experiment of the registry: run and figure rules
include: "workflow/rules/leaderboard.smk"  # the sampler leaderboard over the sampling experiments' metrics
include: "workflow/rules/claims.smk"


# Declared here, after the includes: Snakemake resets the default target on every include, and final_outputs()
# collects the figure, table and claims rules defined above.
rule all:
    default_target: True
    input:
        final_outputs(),
    message:
        "All figures and tables of the '{config[name]}' config are up to date"
