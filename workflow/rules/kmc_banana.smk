# Kernel HMC paper Fig. 3 (EXPERIMENTS.md B2): 8-D banana, KMC finite vs n = m with HMC and RW references.
# Every (sampler, n, run) shard builds its target and history itself (generated target, no input files); Ray.
KMC_BANANA_DIR = f"{RESULTS}/kmc_banana"
ALL_TARGETS += [
    f"{RESULTS}/figures/kmc_fig3_banana.pdf",
    f"{RESULTS}/tables/kmc_fig3_banana.md",
    f"{KMC_BANANA_DIR}/metrics.parquet",
]
CLAIMS_INPUTS["kmc_banana"] = f"{KMC_BANANA_DIR}/metrics.parquet"


rule kmc_banana:
    output:
        f"{KMC_BANANA_DIR}/metrics.parquet",
    params:
        config=CONFIG_FILE,
        code=digest("gradmc.experiments.kmc_banana", "gradmc.distributed", "gradmc.results"),
        spec=config["kmc_banana"],
        device=config["device"],
    log:
        f"{LOGS}/kmc_banana.log",
    message:
        "Sampling the 8-D banana: {params.spec[samplers]}, KMC n = {params.spec[n]}, runs {params.spec[runs]}, "
        "{params.spec[num_burn_in]} + {params.spec[num_iterations]} iterations on Ray"
    threads: workflow.cores
    resources:
        ray_drivers=1,  # capped by the ray-cluster profile
    shell:
        "gradmc run kmc_banana --config {params.config} --workers {threads} --out {output} 2>&1 | joblog {log} kmc_banana"


rule figure_kmc_banana:
    input:
        rules.kmc_banana.output[0],
    output:
        pdf=f"{RESULTS}/figures/kmc_fig3_banana.pdf",
        png=report(f"{RESULTS}/figures/kmc_fig3_banana.png", caption="../report/kmc_fig3_banana.rst", category="Kernel HMC paper"),
        csv=f"{RESULTS}/tables/kmc_fig3_banana.csv",
        md=report(f"{RESULTS}/tables/kmc_fig3_banana.md", caption="../report/kmc_fig3_banana.rst", category="Tables"),
    params:
        code=digest("gradmc.figures.kmc_banana"),
        prefix=lambda wildcards, output: output.pdf.removesuffix(".pdf"),
        table=lambda wildcards, output: output.csv.removesuffix(".csv"),
        name=config["name"],
    log:
        f"{LOGS}/figure_kmc_banana.log",
    message:
        "Drawing KMC Fig. 3 (8-D banana)"
    shell:
        "gradmc figure kmc_banana --metrics {input} --config-name {params.name} --out {params.prefix} "
        "--table-out {params.table} 2>&1 | joblog {log} figure_kmc_banana"
