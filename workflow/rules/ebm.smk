# GWG paper Table 2, Fig. 8, Fig. 14 (EXPERIMENTS.md A7): data -> train ResNet EBMs by PCD -> AIS -> table/figures.
# One training job and one AIS job per feasible (data set, sampler) (gradmc.specs.ebm_samplers.feasible):
# GWG and DMALA on every data set, Gibbs-1 and ACS only on binary data (categorical Gibbs is infeasible and
# reported as such; ACS has no categorical form). With equal_time every non-GWG run (Gibbs-1, DMALA, ACS) gets
# the GWG run's training time. Each sampler runs ebm.train.steps_by_sampler[<sampler>] steps per iteration when
# the config names it there, else ebm.train.num_steps.
import re as _re  # noqa: E402

from gradmc.specs.ebm_samplers import SAMPLERS as EBM_SAMPLERS, feasible as ebm_feasible  # noqa: E402
from gradmc.specs.ebm_samplers import sampler_steps as ebm_sampler_steps  # noqa: E402

EBM_DIR = f"{RESULTS}/ebm"
EBM_RUNS = [(d, s) for d in config["ebm"]["datasets"] for s in config["ebm"]["samplers"] if ebm_feasible(s, d)]
EBM_SAMPLER_PATTERN = "|".join(_re.escape(s) for s in EBM_SAMPLERS)
EBM_EQUAL_TIME = config["ebm"]["equal_time"]
EBM_SHAPES = {"frey": "28x20"}


# Fig. 8 reads the replay-buffer samples train_ebm writes beside its checkpoint (a figure reads no model)
EBM_SAMPLES = " ".join(f"{d}/{s}={EBM_DIR}/{d}/{s}/model.samples.npz:{EBM_SHAPES.get(d, '28x28')}"
                       for d, s in EBM_RUNS)


rule train_ebm:
    input:
        data=f"{RESULTS}/data/images/{{dataset}}.npz",
        budget=lambda wildcards: (
            [f"{EBM_DIR}/{wildcards.dataset}/GWG/model.pt"] if wildcards.sampler != "GWG" and EBM_EQUAL_TIME else []
        ),
    output:
        model=f"{EBM_DIR}/{{dataset}}/{{sampler}}/model.pt",
        samples=f"{EBM_DIR}/{{dataset}}/{{sampler}}/model.samples.npz",
    wildcard_constraints:
        sampler=EBM_SAMPLER_PATTERN,
    params:
        config=ebm_stage_config("train_ebm"),
        code=digest("gradmc.experiments.ebm"),
        budget=lambda wildcards, input: f"--budget-from {input.budget[0]}" if input.budget else "",
        iterations=lambda wildcards: (
            # equal_time: every sampler but GWG (Gibbs-1, DMALA, ACS) runs for the GWG run's training time
            "as many iterations as fit in the GWG run's training time" if wildcards.sampler != "GWG" and EBM_EQUAL_TIME
            else f'{ebm_setting("train", wildcards.dataset, "iterations")} iterations'
        ),
        # ebm.train.steps_by_sampler[sampler], else num_steps (what train_stage runs)
        steps=lambda wildcards: ebm_sampler_steps(for_dataset(config["ebm"]["train"], wildcards.dataset),
                                                  wildcards.sampler),
    benchmark:
        f"{RESULTS}/benchmarks/train_ebm_{{dataset}}_{{sampler}}.tsv"
    log:
        f"{LOGS}/train_ebm_{{dataset}}_{{sampler}}.log",
    message:
        "Training the ResNet EBM on {wildcards.dataset} with PCD-{wildcards.sampler} "
        "({params.iterations}, {params.steps} steps each)"
    # one thread on a 2-core machine (job_threads): two one-thread jobs side by side do more work there. With
    # equal_time the budget run trains on the thread count the GWG checkpoint records (train_stage).
    threads: job_threads(2)
    # first of all: the static-MNIST chain (GWG training -> Gibbs-1 training for GWG's seconds -> AIS) is the
    # pipeline's longest
    priority: 50
    shell:
        f"OMP_NUM_THREADS={{threads}} gradmc run train_ebm --config {CONFIG_FILE} --dataset {{wildcards.dataset}} "
        "--sampler {wildcards.sampler} --data {input.data} {params.budget} --out {output.model} "
        "2>&1 | joblog {log} train_ebm {wildcards.dataset} {wildcards.sampler}"


rule ais_ebm:
    input:
        model=rules.train_ebm.output[0],
        data=f"{RESULTS}/data/images/{{dataset}}.npz",
    output:
        f"{EBM_DIR}/{{dataset}}/{{sampler}}/metrics.parquet",
    wildcard_constraints:
        sampler=EBM_SAMPLER_PATTERN,
    params:
        config=ebm_stage_config("ais_ebm"),
        code=digest("gradmc.experiments.ebm"),
        levels=lambda wildcards: ebm_setting("ais", wildcards.dataset, "num_intermediate"),
        chains=lambda wildcards: ebm_setting("ais", wildcards.dataset, "num_chains"),
        convergence=lambda wildcards: " ".join(map(str, ebm_setting("ais", wildcards.dataset, "convergence"))),
    benchmark:
        f"{RESULTS}/benchmarks/ais_ebm_{{dataset}}_{{sampler}}.tsv"
    log:
        f"{LOGS}/ais_ebm_{{dataset}}_{{sampler}}.log",
    message:
        "AIS for the {wildcards.dataset} {wildcards.sampler} EBM ({params.levels} levels, "
        "{params.chains} chains; convergence at {params.convergence})"
    # one core each: a 32-chain AIS level costs only ~1.17x more on 1 thread than on 2 (static MNIST, CPU), so
    # the AIS jobs of a data set's models run side by side (2 on 2 cores in ~0.63x the time of one after the
    # other)
    threads: 1
    # the long AIS jobs (thousands of levels: static MNIST) right after their training, above the sweeps
    # (long_job_priority); the short ones (Frey, a few hundred levels) fill a core like any short job
    priority: lambda wildcards: 45 if ebm_setting("ais", wildcards.dataset, "num_intermediate") > 1000 else 10
    shell:
        f"OMP_NUM_THREADS={{threads}} gradmc run ais_ebm --config {CONFIG_FILE} --dataset {{wildcards.dataset}} "
        "--sampler {wildcards.sampler} --data {input.data} --model {input.model} --out {output} "
        "2>&1 | joblog {log} ais_ebm {wildcards.dataset} {wildcards.sampler}"


rule figure_ebm:
    input:
        metrics=[f"{EBM_DIR}/{d}/{s}/metrics.parquet" for d, s in EBM_RUNS],
        samples=[f"{EBM_DIR}/{d}/{s}/model.samples.npz" for d, s in EBM_RUNS],
    output:
        table=report(f"{RESULTS}/tables/gwg_table2_ebm.md", caption=caption("ebm", "gwg_table2_ebm"), category="Tables"),
        table_csv=f"{RESULTS}/tables/gwg_table2_ebm.csv",
        fig14=report(f"{RESULTS}/figures/gwg_fig14_ais.png", caption=caption("ebm", "gwg_fig14_ais"), category="GWG paper"),
        fig8=report(f"{RESULTS}/figures/gwg_fig8_samples.png", caption=caption("ebm", "gwg_fig8_samples"), category="GWG paper"),
        learning=report(f"{RESULTS}/figures/gwg_ebm_learning_curve.png", caption=caption("ebm", "gwg_ebm_learning_curve"),
                        category="GWG paper"),
        learning_pdf=f"{RESULTS}/figures/gwg_ebm_learning_curve.pdf",
        fig14_pdf=f"{RESULTS}/figures/gwg_fig14_ais.pdf",
        fig8_pdf=f"{RESULTS}/figures/gwg_fig8_samples.pdf",
        combined=f"{EBM_DIR}/metrics.parquet",
    params:
        code=digest("gradmc.experiments.ebm.figure"),
        name=config["name"],
        samples=EBM_SAMPLES,
        table=lambda wildcards, output: output.table.removesuffix(".md"),
        prefix=lambda wildcards, output: output.fig14_pdf.removesuffix("_fig14_ais.pdf"),
    log:
        f"{LOGS}/figure_ebm.log",
    message:
        "Assembling GWG Table 2, Fig. 8, Fig. 14 and the EBM learning curve"
    shell:
        "gradmc figure ebm --metrics {input.metrics} --samples {params.samples} --combined-out {output.combined} "
        "--config-name {params.name} --out {params.prefix} --table-out {params.table} 2>&1 | joblog {log} figure_ebm"
