# GWG paper Fig. 6 / Fig. 11 (EXPERIMENTS.md A5): learning Ising models with PCD, Gibbs-1 vs GWG.
# Data stage: samples of every true model (chromatic Gibbs, one process) -> one .npz; then every
# (model, sampler, K, seed) PCD shard on Ray; then the figures.
ISING_PCD_DIR = f"{RESULTS}/ising_pcd"
ALL_TARGETS += [
    f"{RESULTS}/figures/fig6_ising_pcd.pdf",
    f"{RESULTS}/figures/fig6_ising_pcd_vs_steps.pdf",
    f"{RESULTS}/tables/fig6_ising_pcd.md",
    f"{ISING_PCD_DIR}/metrics.parquet",
]
CLAIMS_INPUTS["ising_pcd"] = f"{ISING_PCD_DIR}/metrics.parquet"


rule ising_pcd_data:
    output:
        f"{ISING_PCD_DIR}/data.npz",
    params:
        config=CONFIG_FILE,
        code=digest("gradmc.experiments.ising_pcd_data"),
        spec=config["ising_pcd"]["data"],
        device=config["device"],
    log:
        f"{LOGS}/ising_pcd_data.log",
    message:
        "Sampling the true Ising models of GWG Fig. 6: lattices {params.spec[lattice_sides]} x thetas "
        "{params.spec[thetas]} and the Erdos-Renyi graph, {params.spec[num_samples]} chains each"
    threads: workflow.cores
    shell:
        "gradmc run ising_pcd_data --config {params.config} --out {output} 2>&1 | joblog {log} ising_pcd_data"


rule ising_pcd:
    input:
        data=rules.ising_pcd_data.output[0],
    output:
        f"{ISING_PCD_DIR}/metrics.parquet",
    params:
        config=CONFIG_FILE,
        code=digest("gradmc.experiments.ising_pcd", "gradmc.distributed", "gradmc.results"),
        spec=config["ising_pcd"],
        device=config["device"],
    log:
        f"{LOGS}/ising_pcd.log",
    message:
        "Training Ising models with PCD: {params.spec[samplers]} x K = {params.spec[steps]} x seeds "
        "{params.spec[seeds]}, {params.spec[num_iterations]} iterations on Ray"
    threads: workflow.cores
    resources:
        ray_drivers=1,  # capped by the ray-cluster profile
    shell:
        "gradmc run ising_pcd --config {params.config} --workers {threads} --input data={input.data} "
        "--out {output} 2>&1 | joblog {log} ising_pcd"


rule figure_ising_pcd:
    input:
        rules.ising_pcd.output[0],
    output:
        pdf=f"{RESULTS}/figures/fig6_ising_pcd.pdf",
        png=report(f"{RESULTS}/figures/fig6_ising_pcd.png", caption="../report/fig6_ising_pcd.rst", category="GWG paper"),
        steps_pdf=f"{RESULTS}/figures/fig6_ising_pcd_vs_steps.pdf",
        steps_png=report(f"{RESULTS}/figures/fig6_ising_pcd_vs_steps.png", caption="../report/fig6_ising_pcd.rst",
                         category="GWG paper"),
        csv=f"{RESULTS}/tables/fig6_ising_pcd.csv",
        md=report(f"{RESULTS}/tables/fig6_ising_pcd.md", caption="../report/fig6_ising_pcd.rst", category="Tables"),
        curves_csv=f"{RESULTS}/tables/fig6_ising_pcd_curves.csv",
        curves_md=f"{RESULTS}/tables/fig6_ising_pcd_curves.md",
    params:
        code=digest("gradmc.figures.ising_pcd"),
        prefix=lambda wildcards, output: output.pdf.removesuffix(".pdf"),
        table=lambda wildcards, output: output.csv.removesuffix(".csv"),
        name=config["name"],
    log:
        f"{LOGS}/figure_ising_pcd.log",
    message:
        "Drawing GWG Fig. 6 and Fig. 11 (PCD-trained Ising models)"
    shell:
        "gradmc figure ising_pcd --metrics {input} --config-name {params.name} --out {params.prefix} "
        "--table-out {params.table} 2>&1 | joblog {log} figure_ising_pcd"
