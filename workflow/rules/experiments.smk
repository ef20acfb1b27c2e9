# Every standard experiment of the registry (gradmc.registry: each folder pkg/gradmc/experiments/<name>/, its META
# literal) gets two rules here:
#   <name>         gradmc run <name>: all its shards on Ray -> results/<config>/<name>/metrics.parquet (or META output)
#   figure_<name>  gradmc figure <name>: the figure (.pdf, .png) and table (.csv, .md) of that Parquet, drawn by
#                  the folder's figure.py, with the folder's caption.rst in the report
# A run rule's params are the part of the config its job reads (META config_keys + device, gpus_per_shard), so it
# reruns exactly when that part changes, and the source digest of the modules it runs. Its inputs are the files
# META inputs names (made by the hand-written stages or another experiment) and the data files of its config section.
for _exp in _registry.experiments().values():
    _section = _exp.config_keys[0].split(".")[0]

    rule:
        name:
            _exp.name
        input:
            **{key: f"{RESULTS}/{rel}" for key, rel in _exp.inputs.items()},
            datafiles=config_data_inputs(_section),
        output:
            f"{RESULTS}/{_exp.output}",
        params:
            config=job_config(_exp.name),
            code=digest(_exp.module, "gradmc.experiments.standard", *_exp.uses),
            inputs=" ".join(f"--{key} {RESULTS}/{rel}" for key, rel in _exp.inputs.items()),
            name=_exp.name,
        benchmark:
            f"{RESULTS}/benchmarks/{_exp.name}.tsv"
        log:
            f"{LOGS}/{_exp.name}.log",
        message:
            job_message(_exp)
        threads: job_threads()
        priority: long_job_priority(_exp.name)
        resources:
            ray_drivers=1,  # capped by the ray-cluster profile
        shell:
            f"gradmc run {{params.name}} --config {CONFIG_FILE} --workers {{threads}} {{params.inputs}} "
            "--out {output} 2>&1 | joblog {log} {params.name}"

    if _exp.figure is None:
        continue
    _caption = os.path.relpath(_exp.caption_path, REPO / "workflow" / "rules")  # Snakemake: relative to this file
    if not _exp.caption_path.is_file():
        raise WorkflowError(f"gradmc.experiments.{_exp.name}: no report caption {_exp.caption_path} "
                            "(write one: `snakemake --report` needs it)")
    _figures = {"": _exp.figure, **{f"{s}_": f"{_exp.figure}_{s}" for s in _exp.extra_figures}}
    _tables = {"": _exp.figure, **{f"{s}_": f"{_exp.figure}_{s}" for s in _exp.extra_tables}}

    rule:
        name:
            f"figure_{_exp.name}"
        input:
            f"{RESULTS}/{_exp.output}",
        output:
            **{f"{key}pdf": f"{RESULTS}/figures/{stem}.pdf" for key, stem in _figures.items()},
            **{f"{key}png": report(f"{RESULTS}/figures/{stem}.png", caption=_caption, category=_exp.category)
               for key, stem in _figures.items()},
            csv=f"{RESULTS}/tables/{_exp.figure}.csv",
            md=report(f"{RESULTS}/tables/{_exp.figure}.md", caption=_caption, category="Tables"),
            **{f"{key}csv": f"{RESULTS}/tables/{stem}.csv" for key, stem in _tables.items() if key},
            **{f"{key}md": f"{RESULTS}/tables/{stem}.md" for key, stem in _tables.items() if key},
        params:
            code=digest(_exp.figure_module),
            prefix=lambda wildcards, output: output.pdf.removesuffix(".pdf"),
            table=lambda wildcards, output: output.csv.removesuffix(".csv"),
            config_name=config["name"],
            name=_exp.name,
        log:
            f"{LOGS}/figure_{_exp.name}.log",
        message:
            f"Drawing {_exp.title}".replace("{", "{{").replace("}", "}}")
        shell:
            "gradmc figure {params.name} --metrics {input} --config-name {params.config_name} --out {params.prefix} "
            "--table-out {params.table} 2>&1 | joblog {log} figure_{params.name}"
