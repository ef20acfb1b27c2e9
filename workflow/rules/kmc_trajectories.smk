# KMC paper Fig. 2 (EXPERIMENTS.md B1): acceptance along KMC finite vs HMC trajectories on random Gamma
# Gaussians over a (d, n = m) grid. Every (d, n, trial chunk) shard draws its targets itself (generated
# target, no input files); runs on Ray.
KMC_TRAJ_DIR = f"{RESULTS}/kmc_trajectories"
ALL_TARGETS += [
    f"{RESULTS}/figures/kmc_fig2_trajectories.pdf",
    f"{RESULTS}/tables/kmc_fig2_trajectories.md",
    f"{KMC_TRAJ_DIR}/metrics.parquet",
]
CLAIMS_INPUTS["kmc_trajectories"] = f"{KMC_TRAJ_DIR}/metrics.parquet"


rule kmc_trajectories:
    output:
        f"{KMC_TRAJ_DIR}/metrics.parquet",
    params:
        config=CONFIG_FILE,
        code=digest("gradmc.experiments.kmc_trajectories", "gradmc.distributed", "gradmc.results"),
        spec=config["kmc_trajectories"],
        device=config["device"],
    log:
        f"{LOGS}/kmc_trajectories.log",
    message:
        "KMC Fig. 2 trajectories: d in {params.spec[dims]} x n = m in {params.spec[num_samples]}, "
        "{params.spec[num_trials]} trials on Ray"
    threads: workflow.cores
    resources:
        ray_drivers=1,  # capped by the ray-cluster profile
    shell:
        "gradmc run kmc_trajectories --config {params.config} --workers {threads} --out {output} "
        "2>&1 | joblog {log} kmc_trajectories"


rule figure_kmc_trajectories:
    input:
        rules.kmc_trajectories.output[0],
    output:
        pdf=f"{RESULTS}/figures/kmc_fig2_trajectories.pdf",
        png=report(f"{RESULTS}/figures/kmc_fig2_trajectories.png", caption="../report/kmc_fig2_trajectories.rst", category="Kernel HMC paper"),
        csv=f"{RESULTS}/tables/kmc_fig2_trajectories.csv",
        md=report(f"{RESULTS}/tables/kmc_fig2_trajectories.md", caption="../report/kmc_fig2_trajectories.rst", category="Tables"),
    params:
        code=digest("gradmc.figures.kmc_trajectories", "gradmc.claims.kmc_trajectories"),
        prefix=lambda wildcards, output: output.pdf.removesuffix(".pdf"),
        table=lambda wildcards, output: output.csv.removesuffix(".csv"),
        name=config["name"],
    log:
        f"{LOGS}/figure_kmc_trajectories.log",
    message:
        "Drawing KMC Fig. 2 (trajectory acceptance in growing dimension)"
    shell:
        "gradmc figure kmc_trajectories --metrics {input} --config-name {params.name} --out {params.prefix} "
        "--table-out {params.table} 2>&1 | joblog {log} figure_kmc_trajectories"
