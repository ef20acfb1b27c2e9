# KMC paper Fig. 4 left (EXPERIMENTS.md B3): pseudo-marginal GP classification on UCI Glass
# ($GRADMC_DATA_DIR/glass/glass.data). Two stages on Ray: long random-walk benchmark chains (cached; their
# params are only the `kmc_gpc.benchmark` sub-section, so sampler settings never rerun them), then one
# (sampler, run) shard per chain of KMC lite, KAMH and RW, compared to the benchmark by MMD.
KMC_GPC_DIR = f"{RESULTS}/kmc_gpc"
ALL_TARGETS += [
    f"{RESULTS}/figures/kmc_fig4_gpc.pdf",
    f"{RESULTS}/tables/kmc_fig4_gpc.md",
    f"{KMC_GPC_DIR}/metrics.parquet",
]
CLAIMS_INPUTS["kmc_gpc"] = f"{KMC_GPC_DIR}/metrics.parquet"


rule kmc_gpc_benchmark:
    input:
        config_data_inputs("kmc_gpc"),
    output:
        f"{KMC_GPC_DIR}/benchmark.parquet",
    params:
        config=CONFIG_FILE,
        code=digest("gradmc.experiments.kmc_gpc_benchmark", "gradmc.distributed", "gradmc.results"),
        spec=config["kmc_gpc"]["benchmark"],
    log:
        f"{LOGS}/kmc_gpc_benchmark.log",
    message:
        "GPC benchmark: {params.spec[num_chains]} pseudo-marginal RW chains of {params.spec[num_iterations]} "
        "iterations ({params.spec[num_burn_in]} burn-in, thin {params.spec[thin]}) on Ray"
    threads: workflow.cores
    resources:
        ray_drivers=1,  # capped by the ray-cluster profile
    shell:
        "gradmc run kmc_gpc_benchmark --config {params.config} --workers {threads} --out {output} "
        "2>&1 | joblog {log} kmc_gpc_benchmark"


rule kmc_gpc:
    input:
        benchmark=rules.kmc_gpc_benchmark.output[0],
        data=config_data_inputs("kmc_gpc"),
    output:
        f"{KMC_GPC_DIR}/metrics.parquet",
    params:
        config=CONFIG_FILE,
        code=digest("gradmc.experiments.kmc_gpc", "gradmc.experiments.kmc_gpc_benchmark", "gradmc.distributed",
                    "gradmc.results"),
        spec=config["kmc_gpc"],
    log:
        f"{LOGS}/kmc_gpc.log",
    message:
        "GPC sampling: {params.spec[samplers]} x runs {params.spec[runs]}, {params.spec[num_iterations]} "
        "iterations each, MMD to the benchmark, on Ray"
    threads: workflow.cores
    resources:
        ray_drivers=1,  # capped by the ray-cluster profile
    shell:
        "gradmc run kmc_gpc --config {params.config} --workers {threads} --input benchmark={input.benchmark} "
        "--out {output} 2>&1 | joblog {log} kmc_gpc"


rule figure_kmc_gpc:
    input:
        rules.kmc_gpc.output[0],
    output:
        pdf=f"{RESULTS}/figures/kmc_fig4_gpc.pdf",
        png=report(f"{RESULTS}/figures/kmc_fig4_gpc.png", caption="../report/kmc_fig4_gpc.rst", category="Kernel HMC paper"),
        csv=f"{RESULTS}/tables/kmc_fig4_gpc.csv",
        md=report(f"{RESULTS}/tables/kmc_fig4_gpc.md", caption="../report/kmc_fig4_gpc.rst", category="Tables"),
    params:
        code=digest("gradmc.figures.kmc_gpc"),
        prefix=lambda wildcards, output: output.pdf.removesuffix(".pdf"),
        table=lambda wildcards, output: output.csv.removesuffix(".csv"),
        name=config["name"],
    log:
        f"{LOGS}/figure_kmc_gpc.log",
    message:
        "Drawing KMC Fig. 4 left (GP classification on Glass)"
    shell:
        "gradmc figure kmc_gpc --metrics {input} --config-name {params.name} --out {params.prefix} "
        "--table-out {params.table} 2>&1 | joblog {log} figure_kmc_gpc"
