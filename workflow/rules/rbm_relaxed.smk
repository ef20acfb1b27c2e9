# GWG paper Fig. 2 (EXPERIMENTS.md A2): random RBMs of growing dimension, GWG vs R-MALA, R-HMC, D-SVGD.
# One wave of (D, sampler, setting, seed) shards on Ray; each shard draws its own block-Gibbs ground truth.
RBM_RELAXED_DIR = f"{RESULTS}/rbm_relaxed"
ALL_TARGETS += [
    f"{RESULTS}/figures/fig2_rbm_relaxed.pdf",
    f"{RESULTS}/tables/fig2_rbm_relaxed.md",
    f"{RBM_RELAXED_DIR}/metrics.parquet",
]
CLAIMS_INPUTS["rbm_relaxed"] = f"{RBM_RELAXED_DIR}/metrics.parquet"


rule rbm_relaxed:
    output:
        f"{RBM_RELAXED_DIR}/metrics.parquet",
    params:
        config=CONFIG_FILE,
        code=digest("gradmc.experiments.rbm_relaxed", "gradmc.distributed", "gradmc.results"),
        spec=config["rbm_relaxed"],
        device=config["device"],
    log:
        f"{LOGS}/rbm_relaxed.log",
    message:
        "Random RBMs D={params.spec[dims]}: {params.spec[samplers]} x seeds {params.spec[seeds]} on Ray"
    threads: workflow.cores
    resources:
        ray_drivers=1,  # capped by the ray-cluster profile
    shell:
        "gradmc run rbm_relaxed --config {params.config} --workers {threads} --out {output} 2>&1 | joblog {log} rbm_relaxed"


rule figure_rbm_relaxed:
    input:
        rules.rbm_relaxed.output[0],
    output:
        pdf=f"{RESULTS}/figures/fig2_rbm_relaxed.pdf",
        png=report(f"{RESULTS}/figures/fig2_rbm_relaxed.png", caption="../report/fig2_rbm_relaxed.rst", category="GWG paper"),
        csv=f"{RESULTS}/tables/fig2_rbm_relaxed.csv",
        md=report(f"{RESULTS}/tables/fig2_rbm_relaxed.md", caption="../report/fig2_rbm_relaxed.rst", category="Tables"),
    params:
        code=digest("gradmc.figures.rbm_relaxed"),
        prefix=lambda wildcards, output: output.pdf.removesuffix(".pdf"),
        table=lambda wildcards, output: output.csv.removesuffix(".csv"),
        name=config["name"],
    log:
        f"{LOGS}/figure_rbm_relaxed.log",
    message:
        "Drawing GWG Fig. 2 (random RBMs vs relaxed samplers)"
    shell:
        "gradmc figure rbm_relaxed --metrics {input} --config-name {params.name} --out {params.prefix} "
        "--table-out {params.table} 2>&1 | joblog {log} figure_rbm_relaxed"
