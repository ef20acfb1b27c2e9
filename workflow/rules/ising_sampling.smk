# GWG paper Fig. 4 (EXPERIMENTS.md A3): lattice Ising ESS over a theta grid; every
# (side, theta, sampler, seed, chunk of chains) shard on Ray, then the figure.
ISING_DIR = f"{RESULTS}/ising_sampling"
ALL_TARGETS += [
    f"{RESULTS}/figures/fig4_ising_sampling.pdf",
    f"{RESULTS}/tables/fig4_ising_sampling.md",
    f"{ISING_DIR}/metrics.parquet",
]
CLAIMS_INPUTS["ising_sampling"] = f"{ISING_DIR}/metrics.parquet"


rule ising_sampling:
    output:
        f"{ISING_DIR}/metrics.parquet",
    params:
        config=CONFIG_FILE,
        code=digest("gradmc.experiments.ising_sampling", "gradmc.distributed", "gradmc.results"),
        spec=config["ising_sampling"],
        device=config["device"],
    log:
        f"{LOGS}/ising_sampling.log",
    message:
        "Sampling lattice Ising models: sides {params.spec[sides]} x thetas {params.spec[thetas]} x "
        "{params.spec[samplers]} x seeds {params.spec[seeds]} on Ray"
    threads: workflow.cores
    resources:
        ray_drivers=1,  # capped by the ray-cluster profile
    shell:
        "gradmc run ising_sampling --config {params.config} --workers {threads} --out {output} "
        "2>&1 | joblog {log} ising_sampling"


rule figure_ising_sampling:
    input:
        rules.ising_sampling.output[0],
    output:
        pdf=f"{RESULTS}/figures/fig4_ising_sampling.pdf",
        png=report(f"{RESULTS}/figures/fig4_ising_sampling.png", caption="../report/fig4_ising_sampling.rst", category="GWG paper"),
        csv=f"{RESULTS}/tables/fig4_ising_sampling.csv",
        md=report(f"{RESULTS}/tables/fig4_ising_sampling.md", caption="../report/fig4_ising_sampling.rst", category="Tables"),
    params:
        code=digest("gradmc.figures.ising_sampling"),
        prefix=lambda wildcards, output: output.pdf.removesuffix(".pdf"),
        table=lambda wildcards, output: output.csv.removesuffix(".csv"),
        name=config["name"],
    log:
        f"{LOGS}/figure_ising_sampling.log",
    message:
        "Drawing GWG Fig. 4 (lattice Ising ESS over theta)"
    shell:
        "gradmc figure ising_sampling --metrics {input} --config-name {params.name} --out {params.prefix} "
        "--table-out {params.table} 2>&1 | joblog {log} figure_ising_sampling"
