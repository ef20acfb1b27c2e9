# GWG paper Fig. 3 (EXPERIMENTS.md A1), the hand-written stages: train an MNIST RBM and draw its block-Gibbs
# ground truth. The sampling run (rbm_sampling) and its figure are a standard experiment (experiments.smk) that
# reads these two files; sampler_cost.smk times the samplers on the same RBM.
RBM_DIR = f"{RESULTS}/rbm_sampling"


rule train_rbm:
    input:
        data=rules.prepare_mnist.output.npz,
    output:
        f"{RBM_DIR}/rbm.pt",
    params:
        config=stage_config("train_rbm"),
        code=digest("gradmc.experiments.rbm_train"),
    benchmark:
        f"{RESULTS}/benchmarks/train_rbm.tsv"
    log:
        f"{LOGS}/train_rbm.log",
    message:
        "Training the MNIST RBM ({params.config[rbm_sampling][num_hidden]} hidden) with "
        "CD-{params.config[rbm_sampling][train][cd_steps]}"
    threads: job_threads(2)
    priority: long_job_priority("train_rbm")
    shell:
        f"OMP_NUM_THREADS={{threads}} gradmc run train_rbm --config {CONFIG_FILE} --data {{input.data}} "
        "--out {output} 2>&1 | joblog {log} train_rbm"


rule rbm_reference:
    input:
        model=rules.train_rbm.output[0],
        data=rules.prepare_mnist.output.npz,
    output:
        f"{RBM_DIR}/reference.npz",
    params:
        config=stage_config("rbm_reference"),
        code=digest("gradmc.experiments.rbm_reference"),
    benchmark:
        f"{RESULTS}/benchmarks/rbm_reference.tsv"
    log:
        f"{LOGS}/rbm_reference.log",
    message:
        "Block-Gibbs ground truth: {params.config[rbm_sampling][reference][num_samples]} samples x 2 after "
        "{params.config[rbm_sampling][reference][num_steps]} sweeps"
    threads: job_threads(2)
    priority: long_job_priority("rbm_reference")
    shell:
        f"OMP_NUM_THREADS={{threads}} gradmc run rbm_reference --config {CONFIG_FILE} --model {{input.model}} "
        "--data {input.data} --out {output} 2>&1 | joblog {log} rbm_reference"
