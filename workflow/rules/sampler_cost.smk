# Sampler cost per step relative to Gibbs-1 on the MNIST RBM and a lattice Ising model: a hand-written
# stage (in-process timing, no Ray) and its table.


rule sampler_cost:
    input:
        model=rules.train_rbm.output[0],
        data=rules.prepare_mnist.output.npz,
    output:
        f"{RESULTS}/sampler_cost/metrics.parquet",
    params:
        config=stage_config("sampler_cost"),
        code=digest("gradmc.experiments.sampler_cost", "gradmc.results"),
    benchmark:
        f"{RESULTS}/benchmarks/sampler_cost.tsv"
    log:
        f"{LOGS}/sampler_cost.log",
    message:
        "Timing samplers {params.config[sampler_cost][samplers]} (cost per step relative to Gibbs-1)"
    threads: 2
    shell:
        f"gradmc run sampler_cost --config {CONFIG_FILE} --model {{input.model}} --data {{input.data}} "
        "--out {output} 2>&1 | joblog {log} sampler_cost"


rule table_sampler_cost:
    input:
        rules.sampler_cost.output[0],
    output:
        csv=f"{RESULTS}/tables/sampler_cost.csv",
        md=report(f"{RESULTS}/tables/sampler_cost.md", caption=caption("sampler_cost", "sampler_cost"), category="Tables"),
    params:
        code=digest("gradmc.experiments.sampler_cost.figure"),
        prefix=lambda wildcards, output: output.md.removesuffix(".md"),
    log:
        f"{LOGS}/table_sampler_cost.log",
    message:
        "Assembling the sampler cost table"
    shell:
        "gradmc figure sampler_cost --metrics {input} --out {params.prefix} 2>&1 | joblog {log} table_sampler_cost"
