# GWG paper Appendix J (EXPERIMENTS.md A8): PTB -> text EBM by PCD with categorical GWG, and the LSTM language model
# -> test log-likelihoods (EBM by AIS; LM, unigram and uniform exactly) -> table, AIS convergence figure, samples.
# With text_ebm.data.train_split: valid (quick, smoke) ptb.valid.txt trains and ptb.test.txt tests.
TEXT_DIR = f"{RESULTS}/text_ebm"


rule prepare_ptb:
    input:
        data_inputs("ptb_heldout" if config["text_ebm"]["data"]["train_split"] == "valid" else "ptb"),
    output:
        npz=f"{RESULTS}/data/ptb.npz",
        manifest=f"{RESULTS}/data/ptb.npz.json",
    params:
        config=stage_config("train_text_lm"),  # holds text_ebm.data, what this rule reads
        code=digest("gradmc.data.ptb"),
        spec=config["text_ebm"]["data"],
    benchmark:
        f"{RESULTS}/benchmarks/prepare_ptb.tsv"
    log:
        f"{LOGS}/prepare_ptb.log",
    message:
        "Preparing PTB for the text EBM (GWG App. J): train on ptb.{params.spec[train_split]}.txt, "
        "vocabulary {params.spec[vocab_size]}, sentences of at most {params.spec[max_length]} words"
    priority: DATA_PRIORITY
    shell:
        f"gradmc data prepare ptb --config {CONFIG_FILE} --out {{output.npz}} 2>&1 | joblog {{log}} prepare_ptb"


rule train_text_ebm:
    input:
        data=rules.prepare_ptb.output.npz,
    output:
        model=f"{TEXT_DIR}/ebm.pt",
        samples=f"{TEXT_DIR}/ebm.pt.samples.txt",
    params:
        config=stage_config("train_text_ebm"),
        code=digest("gradmc.experiments.text_ebm"),
        train=config["text_ebm"]["train"],
    benchmark:
        f"{RESULTS}/benchmarks/train_text_ebm.tsv"
    log:
        f"{LOGS}/train_text_ebm.log",
    message:
        "Training the PTB text EBM by PCD with categorical GWG ({params.train[iterations]} iterations, "
        "{params.train[num_steps]} steps each)"
    # one thread: the BiLSTM's ops are small, and on 2 threads beside another busy job a forward+backward pass took
    # 248 ms against 3.3 ms on 1 thread (quick sizes, 2 cores; OpenMP threads waiting on a taken core)
    threads: 1
    priority: 20
    shell:
        f"OMP_NUM_THREADS={{threads}} gradmc run train_text_ebm --config {CONFIG_FILE} --data {{input.data}} "
        "--out {output.model} 2>&1 | joblog {log} train_text_ebm"


rule train_text_lm:
    input:
        data=rules.prepare_ptb.output.npz,
    output:
        f"{TEXT_DIR}/lm.pt",
    params:
        config=stage_config("train_text_lm"),
        code=digest("gradmc.experiments.text_lm"),
        train=config["text_ebm"]["lm_train"],
    benchmark:
        f"{RESULTS}/benchmarks/train_text_lm.tsv"
    log:
        f"{LOGS}/train_text_lm.log",
    message:
        "Training the autoregressive LSTM language model on PTB ({params.train[iterations]} iterations)"
    threads: 1
    priority: 20  # as train_text_ebm: eval_text_ebm waits for both
    shell:
        f"OMP_NUM_THREADS={{threads}} gradmc run train_text_lm --config {CONFIG_FILE} --data {{input.data}} "
        "--out {output} 2>&1 | joblog {log} train_text_lm"


rule eval_text_ebm:
    input:
        data=rules.prepare_ptb.output.npz,
        model=rules.train_text_ebm.output.model,
        lm=rules.train_text_lm.output[0],
    output:
        f"{TEXT_DIR}/metrics.parquet",
    params:
        config=stage_config("eval_text_ebm"),
        code=digest("gradmc.experiments.text_ebm"),
        ais=config["text_ebm"]["ais"],
    benchmark:
        f"{RESULTS}/benchmarks/eval_text_ebm.tsv"
    log:
        f"{LOGS}/eval_text_ebm.log",
    message:
        "Test log-likelihoods on PTB: the text EBM by AIS ({params.ais[num_intermediate]} levels, "
        "{params.ais[num_chains]} chains), the LSTM LM, unigram and uniform"
    threads: 1
    priority: long_job_priority("eval_text_ebm")
    shell:
        f"OMP_NUM_THREADS={{threads}} gradmc run eval_text_ebm --config {CONFIG_FILE} --data {{input.data}} "
        "--model {input.model} --lm {input.lm} --out {output} 2>&1 | joblog {log} eval_text_ebm"


rule figure_text_ebm:
    input:
        metrics=rules.eval_text_ebm.output[0],
        samples=rules.train_text_ebm.output.samples,
    output:
        table=report(f"{RESULTS}/tables/gwg_appj_text_ebm.md", caption=caption("text_ebm", "gwg_appj_text_ebm"),
                     category="Tables"),
        table_csv=f"{RESULTS}/tables/gwg_appj_text_ebm.csv",
        figure=report(f"{RESULTS}/figures/gwg_appj_text_ais.png", caption=caption("text_ebm", "gwg_appj_text_ais"),
                      category="GWG paper"),
        figure_pdf=f"{RESULTS}/figures/gwg_appj_text_ais.pdf",
    params:
        code=digest("gradmc.experiments.text_ebm.figure"),
        name=config["name"],
        table=lambda wildcards, output: output.table.removesuffix(".md"),
        prefix=lambda wildcards, output: output.figure_pdf.removesuffix(".pdf"),
    log:
        f"{LOGS}/figure_text_ebm.log",
    message:
        "Assembling the GWG App. J text-EBM table, AIS convergence curve and samples"
    shell:
        "gradmc figure text_ebm --metrics {input.metrics} --samples {input.samples} --config-name {params.name} "
        "--out {params.prefix} --table-out {params.table} 2>&1 | joblog {log} figure_text_ebm"
