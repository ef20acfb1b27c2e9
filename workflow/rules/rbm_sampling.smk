# GWG paper Fig. 3 (EXPERIMENTS.md A1): train an MNIST RBM, draw block-Gibbs ground truth,
# run every (sampler, seed) shard on Ray, draw the figure.
RBM_DIR = f"{RESULTS}/rbm_sampling"
ALL_TARGETS += [
    f"{RESULTS}/figures/fig3_rbm_sampling.pdf",
    f"{RESULTS}/tables/fig3_rbm_sampling.md",
    f"{RBM_DIR}/metrics.parquet",
]
CLAIMS_INPUTS["rbm_sampling"] = f"{RBM_DIR}/metrics.parquet"


rule train_rbm:
    input:
        data=rules.prepare_mnist.output.npz,
    output:
        f"{RBM_DIR}/rbm.pt",
    params:
        config=CONFIG_FILE,
        code=digest("gradmc.experiments.rbm_train"),
        spec={k: config["rbm_sampling"][k] for k in ("num_hidden", "train")},
    log:
        f"{LOGS}/train_rbm.log",
    message:
        "Training the MNIST RBM ({params.spec[num_hidden]} hidden) with CD-{params.spec[train][cd_steps]}"
    threads: 2
    shell:
        "OMP_NUM_THREADS={threads} gradmc run train_rbm --config {params.config} --data {input.data} "
        "--out {output} 2>&1 | joblog {log} train_rbm"


rule rbm_reference:
    input:
        model=rules.train_rbm.output[0],
        data=rules.prepare_mnist.output.npz,
    output:
        f"{RBM_DIR}/reference.npz",
    params:
        config=CONFIG_FILE,
        code=digest("gradmc.experiments.rbm_reference"),
        spec=config["rbm_sampling"]["reference"],
        device=config["device"],
    log:
        f"{LOGS}/rbm_reference.log",
    message:
        "Block-Gibbs ground truth: {params.spec[num_samples]} samples x 2 after {params.spec[num_steps]} sweeps"
    threads: 2
    shell:
        "OMP_NUM_THREADS={threads} gradmc run rbm_reference --config {params.config} --model {input.model} "
        "--data {input.data} --out {output} 2>&1 | joblog {log} rbm_reference"


rule rbm_sampling:
    input:
        model=rules.train_rbm.output[0],
        reference=rules.rbm_reference.output[0],
        data=rules.prepare_mnist.output.npz,
    output:
        f"{RBM_DIR}/metrics.parquet",
    params:
        config=CONFIG_FILE,
        code=digest("gradmc.experiments.rbm_sampling", "gradmc.distributed", "gradmc.results"),
        spec={k: v for k, v in config["rbm_sampling"].items() if k not in ("train", "reference")},
        device=config["device"],
    log:
        f"{LOGS}/rbm_sampling.log",
    message:
        "Sampling the RBM: {params.spec[samplers]} x seeds {params.spec[seeds]} on Ray"
    threads: workflow.cores
    resources:
        ray_drivers=1,  # capped by the ray-cluster profile
    shell:
        "gradmc run rbm_sampling --config {params.config} --model {input.model} --reference {input.reference} "
        "--data {input.data} --workers {threads} --out {output} 2>&1 | joblog {log} rbm_sampling"


rule figure_rbm_sampling:
    input:
        rules.rbm_sampling.output[0],
    output:
        pdf=f"{RESULTS}/figures/fig3_rbm_sampling.pdf",
        png=report(f"{RESULTS}/figures/fig3_rbm_sampling.png", caption="../report/fig3_rbm_sampling.rst", category="GWG paper"),
        csv=f"{RESULTS}/tables/fig3_rbm_sampling.csv",
        md=report(f"{RESULTS}/tables/fig3_rbm_sampling.md", caption="../report/fig3_rbm_sampling.rst", category="Tables"),
    params:
        code=digest("gradmc.figures.rbm_sampling"),
        prefix=lambda wildcards, output: output.pdf.removesuffix(".pdf"),
        table=lambda wildcards, output: output.csv.removesuffix(".csv"),
        name=config["name"],
    log:
        f"{LOGS}/figure_rbm_sampling.log",
    message:
        "Drawing GWG Fig. 3 (RBM sampling)"
    shell:
        "gradmc figure rbm_sampling --metrics {input} --config-name {params.name} --out {params.prefix} "
        "--table-out {params.table} 2>&1 | joblog {log} figure_rbm_sampling"
