# GWG paper Fig. 5 (EXPERIMENTS.md A4): factorial HMM posterior sampling. Every (sampler, seed) shard
# draws its seed's model, x_true and y itself (generated target, no input files); runs on Ray.
FHMM_DIR = f"{RESULTS}/fhmm_sampling"
ALL_TARGETS += [
    f"{RESULTS}/figures/fig5_fhmm_sampling.pdf",
    f"{RESULTS}/tables/fig5_fhmm_sampling.md",
    f"{FHMM_DIR}/metrics.parquet",
]
CLAIMS_INPUTS["fhmm_sampling"] = f"{FHMM_DIR}/metrics.parquet"


rule fhmm_sampling:
    output:
        f"{FHMM_DIR}/metrics.parquet",
    params:
        config=CONFIG_FILE,
        code=digest("gradmc.experiments.fhmm_sampling", "gradmc.distributed", "gradmc.results"),
        spec=config["fhmm_sampling"],
        device=config["device"],
    log:
        f"{LOGS}/fhmm_sampling.log",
    message:
        "Sampling the FHMM posterior (L={params.spec[L]}, K={params.spec[K]}): {params.spec[samplers]} x seeds "
        "{params.spec[seeds]}, {params.spec[num_steps]} steps on Ray"
    threads: workflow.cores
    resources:
        ray_drivers=1,  # capped by the ray-cluster profile
    shell:
        "gradmc run fhmm_sampling --config {params.config} --workers {threads} --out {output} "
        "2>&1 | joblog {log} fhmm_sampling"


rule figure_fhmm_sampling:
    input:
        rules.fhmm_sampling.output[0],
    output:
        pdf=f"{RESULTS}/figures/fig5_fhmm_sampling.pdf",
        png=report(f"{RESULTS}/figures/fig5_fhmm_sampling.png", caption="../report/fig5_fhmm_sampling.rst", category="GWG paper"),
        csv=f"{RESULTS}/tables/fig5_fhmm_sampling.csv",
        md=report(f"{RESULTS}/tables/fig5_fhmm_sampling.md", caption="../report/fig5_fhmm_sampling.rst", category="Tables"),
    params:
        code=digest("gradmc.figures.fhmm_sampling"),
        prefix=lambda wildcards, output: output.pdf.removesuffix(".pdf"),
        table=lambda wildcards, output: output.csv.removesuffix(".csv"),
        name=config["name"],
    log:
        f"{LOGS}/figure_fhmm_sampling.log",
    message:
        "Drawing GWG Fig. 5 (factorial HMM posterior sampling)"
    shell:
        "gradmc figure fhmm_sampling --metrics {input} --config-name {params.name} --out {params.prefix} "
        "--table-out {params.table} 2>&1 | joblog {log} figure_fhmm_sampling"
