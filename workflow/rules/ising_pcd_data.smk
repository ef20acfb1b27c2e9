# GWG paper Fig. 6 / Fig. 11 (EXPERIMENTS.md A5), the hand-written data stage: samples of every true Ising model
# (chromatic Gibbs, one process) -> one .npz, which the standard experiment ising_pcd (experiments.smk) reads.


rule ising_pcd_data:
    output:
        f"{RESULTS}/ising_pcd/data.npz",
    params:
        config=stage_config("ising_pcd_data"),
        code=digest("gradmc.experiments.ising_pcd_data"),
    benchmark:
        f"{RESULTS}/benchmarks/ising_pcd_data.tsv"
    log:
        f"{LOGS}/ising_pcd_data.log",
    message:
        "Sampling the true Ising models of GWG Fig. 6: lattices {params.config[ising_pcd][data][lattice_sides]} x "
        "thetas {params.config[ising_pcd][data][thetas]}"
        + (" and the Erdos-Renyi graph" if config["ising_pcd"]["data"].get("erdos_renyi") else "") + ", "
        "{params.config[ising_pcd][data][num_samples]} chains each"
    threads: job_threads()
    priority: long_job_priority("ising_pcd_data")
    shell:
        f"gradmc run ising_pcd_data --config {CONFIG_FILE} --out {{output}} 2>&1 | joblog {{log}} ising_pcd_data"
