# Kernel HMC paper Fig. 4 right (EXPERIMENTS.md B4): ABC posterior of a 10-D skew normal; KMC lite vs
# pseudo-marginal random walk and HABC, with the exact ABC marginal of theta_1 as reference. Every shard
# builds the target itself (generated target, no input files); runs on Ray.
KMC_ABC_DIR = f"{RESULTS}/kmc_abc"
ALL_TARGETS += [
    f"{RESULTS}/figures/kmc_fig4_abc.pdf",
    f"{RESULTS}/tables/kmc_fig4_abc.md",
    f"{KMC_ABC_DIR}/metrics.parquet",
]
CLAIMS_INPUTS["kmc_abc"] = f"{KMC_ABC_DIR}/metrics.parquet"


rule kmc_abc:
    output:
        f"{KMC_ABC_DIR}/metrics.parquet",
    params:
        config=CONFIG_FILE,
        code=digest("gradmc.experiments.kmc_abc", "gradmc.distributed", "gradmc.results"),
        spec=config["kmc_abc"],
        device=config["device"],
    log:
        f"{LOGS}/kmc_abc.log",
    message:
        "ABC skew normal: {params.spec[samplers]}, runs {params.spec[runs]}, "
        "{params.spec[num_burn_in]} + {params.spec[num_iterations]} iterations on Ray"
    threads: workflow.cores
    resources:
        ray_drivers=1,  # capped by the ray-cluster profile
    shell:
        "gradmc run kmc_abc --config {params.config} --workers {threads} --out {output} 2>&1 | joblog {log} kmc_abc"


rule figure_kmc_abc:
    input:
        rules.kmc_abc.output[0],
    output:
        pdf=f"{RESULTS}/figures/kmc_fig4_abc.pdf",
        png=report(f"{RESULTS}/figures/kmc_fig4_abc.png", caption="../report/kmc_fig4_abc.rst", category="Kernel HMC paper"),
        csv=f"{RESULTS}/tables/kmc_fig4_abc.csv",
        md=report(f"{RESULTS}/tables/kmc_fig4_abc.md", caption="../report/kmc_fig4_abc.rst", category="Tables"),
    params:
        code=digest("gradmc.figures.kmc_abc"),
        prefix=lambda wildcards, output: output.pdf.removesuffix(".pdf"),
        table=lambda wildcards, output: output.csv.removesuffix(".csv"),
        name=config["name"],
    log:
        f"{LOGS}/figure_kmc_abc.log",
    message:
        "Drawing KMC Fig. 4 right (ABC skew normal)"
    shell:
        "gradmc figure kmc_abc --metrics {input} --config-name {params.name} --out {params.prefix} "
        "--table-out {params.table} 2>&1 | joblog {log} figure_kmc_abc"
