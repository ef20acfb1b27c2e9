"""GWG paper Appendix J (EXPERIMENTS.md A8): the Penn Treebank text EBM's table, AIS convergence curve and samples.

The paper prints four test log-likelihoods (EBM, autoregressive LSTM, uniform, unigram; App. J, text only, no
figure), but every digit is lost in our copy of its text, so the table's ``paper`` column says so instead of
guessing. From the ``text_ebm`` metrics (:func:`gradmc.experiments.text_ebm.evaluate_stage`):

- ``<table_out>``.md/.csv: one row per model (:data:`~gradmc.experiments.text_ebm.MODELS`): test log-likelihood
  in nats per sentence (all models score the same V^L padded sequences, so the numbers compare directly), its
  standard error over test sentences (the EBM's also over AIS chains), nats per token (/ L). Above the table the
  run's sizes from the metrics' provenance config and which of them differ from the paper's; below it, given
  ``samples``, up to :data:`MAX_SAMPLES` decoded replay-buffer sentences.
- ``<out>``.pdf/.png: the EBM's estimate vs the number of AIS intermediate distributions (log axis; error bars
  +-2 AIS standard errors of log Z), with the baselines' exact values as horizontal lines. AIS underestimates
  log Z, so the EBM's values are optimistic (upper) estimates that fall as the levels grow.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from gradmc.atomic import atomic_path
from gradmc.errors import InputError, check_output_file
from gradmc.figures.style import plt, sampler_color, save_figure
from gradmc.results import read_parquet

__all__ = ["EXPERIMENT", "MODELS", "PAPER_SETTINGS", "MAX_SAMPLES", "table", "sizes", "figure"]

EXPERIMENT = "text_ebm"
MODELS = ("EBM (GWG)", "LSTM LM", "unigram", "uniform")  # = gradmc.experiments.text_ebm.MODELS (no torch import)
MAX_SAMPLES = 10
PAPER_VALUE = "printed in the paper; digits lost in our copy"
_COLOR = {"EBM (GWG)": "GWG"}  # the EBM is drawn in its sampler's colour
#: The paper's sizes (GWG App. J; training "identical to our image EBMs", App. I): (config path, paper value, label).
PAPER_SETTINGS = (
    (("data", "vocab_size"), 10_000, "vocabulary"), (("data", "max_length"), 20, "max sentence length"),
    (("data", "train_split"), "train", "training file"),
    (("model", "embed_dim"), 256, "EBM embedding"), (("model", "hidden"), 512, "EBM BiLSTM hidden"),
    (("model", "proj"), 512, "EBM projection"), (("lm", "embed_dim"), 256, "LM embedding"),
    (("lm", "hidden"), 512, "LM LSTM hidden"), (("train", "iterations"), 50_000, "training iterations (App. I)"),
    (("train", "num_steps"), 20, "GWG steps per iteration"), (("train", "buffer_size"), 1_000, "buffer"),
    (("train", "batch_size"), 100, "batch (App. I)"), (("train", "lr"), 1e-4, "lr (App. I)"),
    (("train", "warmup"), 10_000, "warm-up (App. I)"), (("train", "ema_decay"), 0.999, "EMA decay (App. I)"),
    (("train", "energy_l2"), 0.0, "energy_l2"),
)
_ROLES = {"train": "trains on ptb.train.txt, tests on ptb.test.txt (the paper's roles)",
          "valid": "trains on ptb.valid.txt, tests on ptb.test.txt (ptb.train.txt not used)"}


def _value(df: pd.DataFrame, model: str, metric: str) -> float:
    rows = df[(df["sampler"] == model) & (df["metric"] == metric)]["value"]
    return float(rows.iloc[-1]) if len(rows) else math.nan


def _levels(df: pd.DataFrame) -> str:
    """The EBM estimate's number of AIS intermediate distributions (its rows' ``step``), as text."""
    steps = df.loc[(df["sampler"] == "EBM (GWG)") & (df["metric"] == "test_log_likelihood"), "step"]
    return f"{int(steps.iloc[-1]):,}" if len(steps) else "not recorded"


def _check(df: pd.DataFrame, path) -> None:
    found = sorted(set(df["experiment"].astype(str))) if "experiment" in df else []
    if found != [EXPERIMENT]:
        raise InputError(f"{path} holds metrics of {found}, not of {EXPERIMENT!r} (GWG App. J text EBM)")
    repeated = df[df.duplicated(["sampler", "metric", "step"], keep=False)]
    if len(repeated):
        first = repeated.iloc[0]
        raise InputError(f"{path} holds {len(repeated)} rows that repeat a (model, metric, step), e.g. "
                         f"{first['sampler']} {first['metric']} at step {first['step']}: the metrics of two runs "
                         "concatenated? Expected one eval_text_ebm output")
    ll = set(df.loc[df["metric"] == "test_log_likelihood", "sampler"])
    missing = [m for m in MODELS if m not in ll]
    if missing:
        raise InputError(f"{path} lacks the test_log_likelihood of {', '.join(missing)} (a partial text_ebm run?); "
                         f"the table needs all of {', '.join(MODELS)}")


def table(df: pd.DataFrame) -> pd.DataFrame:
    """One row per model in :data:`MODELS` order: ``test_log_likelihood`` (nats per sentence), ``se`` (its
    standard error), ``per_token`` (nats per token), ``how`` (AIS or exact) and ``paper``."""
    rows = []
    levels = _levels(df)
    for model in MODELS:
        how = (f"AIS, {levels} levels (optimistic: AIS underestimates log Z)" if model == "EBM (GWG)" else "exact")
        rows.append({"model": model, "test_log_likelihood": _value(df, model, "test_log_likelihood"),
                     "se": _value(df, model, "test_log_likelihood_se"),
                     "per_token": _value(df, model, "test_log_likelihood_per_token"), "how": how,
                     "paper": PAPER_VALUE})
    return pd.DataFrame(rows)


def _get(spec: dict, path: tuple[str, ...]):
    for key in path:
        spec = spec.get(key) if isinstance(spec, dict) else None
    return spec


def _fmt(v) -> str:
    return f"{v:,}" if isinstance(v, int) and not isinstance(v, bool) else f"{v:g}" if isinstance(v, float) else str(v)


def sizes(config: dict, df: pd.DataFrame) -> list[str]:
    """Markdown bullet lines: the run's sizes (from the ``text_ebm`` section of the metrics' provenance
    ``config``; a missing key reads "not recorded"), AIS levels and chains, and the departures from the paper's."""
    spec = (config or {}).get(EXPERIMENT) or {}
    d, m, lm, t, ais = (spec.get(k) or {} for k in ("data", "model", "lm", "train", "ais"))

    def get(part: dict, key: str) -> str:
        return _fmt(part[key]) if key in part else "not recorded"

    split = d.get("train_split")
    iterations = _value(df, "EBM (GWG)", "train_iterations")
    lines = [f"- data: vocabulary {get(d, 'vocab_size')} words, sentences of at most {get(d, 'max_length')} words; "
             f"{_ROLES.get(split, f'train split {split!r}') if split else 'train/test roles not recorded'}",
             f"- EBM: BiLSTM correction over the unigram base, embedding {get(m, 'embed_dim')}, hidden "
             f"{get(m, 'hidden')}, projection {get(m, 'proj')}; PCD with categorical GWG, "
             f"{_fmt(int(iterations)) if math.isfinite(iterations) else 'not recorded'} iterations of "
             f"{get(t, 'num_steps')} steps, buffer {get(t, 'buffer_size')}, batch {get(t, 'batch_size')}",
             f"- LSTM LM: embedding {get(lm, 'embed_dim')}, hidden {get(lm, 'hidden')}",
             f"- AIS: {_levels(df)} intermediate distributions, "
             f"{get(ais, 'num_chains')} chains (the paper states no AIS size for text; its image EBMs used 300,000)"]
    differ = []
    for path, paper, label in PAPER_SETTINGS:
        ours = iterations if path == ("train", "iterations") and math.isfinite(iterations) else _get(spec, path)
        if isinstance(ours, float) and isinstance(paper, int) and ours.is_integer():
            ours = int(ours)
        if ours is not None and ours != paper:
            differ.append(f"{label} {_fmt(ours)} (paper {_fmt(paper)})")
    lines.append("- differs from the paper (GWG App. J): " + ("; ".join(differ) if differ else "none recorded"))
    return lines


def _samples_section(samples: str | Path) -> list[str]:
    path = Path(samples)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as err:
        raise InputError(f"cannot read the text EBM samples file {path}: {err}") from None
    shown = lines[:MAX_SAMPLES]
    body = ["".join(ch if ch.isprintable() else "\ufffd" for ch in line) if line.strip()
            else "(empty: the sentence starts with <eos>)" for line in shown]  # no control bytes in the report
    return ["", "## Samples", "",
            f"{len(shown)} of the {len(lines)} decoded replay-buffer sentences written after training ({path.name}; "
            "padding `<eos>` tokens dropped):", "", "```text", *body, "```"]


def _figure(df: pd.DataFrame, out, suffix: str) -> list[Path]:
    fig, ax = plt.subplots(figsize=(5.2, 3.6))
    ebm = df[df["sampler"] == "EBM (GWG)"]
    conv = ebm[ebm["metric"] == "convergence_log_likelihood"].set_index("step")["value"].sort_index()
    if not len(conv):  # no convergence rows: the estimate alone, at its level count
        est = ebm[ebm["metric"] == "test_log_likelihood"]
        conv = pd.Series(est["value"].to_numpy(), index=est["step"].to_numpy())
        se = pd.Series([_value(df, "EBM (GWG)", "log_z_se")], index=conv.index)
    else:
        se = ebm[ebm["metric"] == "convergence_log_z_se"].set_index("step")["value"].reindex(conv.index)
    ax.errorbar(conv.index, conv.to_numpy(), yerr=2 * se.fillna(0.0).to_numpy(), marker="o", capsize=3,
                color=sampler_color("GWG"), label="EBM (GWG), AIS (+-2 SE of log Z)")
    for model, style in (("LSTM LM", "-"), ("unigram", "--"), ("uniform", ":")):
        ax.axhline(_value(df, model, "test_log_likelihood"), color=sampler_color(model), linestyle=style,
                   label=f"{model} (exact)")
    ax.set_xscale("log")
    ax.set_xticks(list(conv.index), [f"{int(k):,}" for k in conv.index])
    ax.minorticks_off()
    ax.set_xlabel("AIS intermediate distributions")
    ax.set_ylabel("test log-likelihood (nats per sentence)")
    ax.legend(fontsize=7)
    ax.set_title(f"PTB text EBM: AIS convergence (GWG App. J){suffix}", fontsize=9)
    fig.tight_layout()
    return save_figure(fig, out)


def figure(metrics: str | Path, out: str | Path, table_out: str | Path, *, config_name: str = "",
           samples: str | Path | None = None) -> list[Path]:
    """Write the GWG App. J text-EBM table (``table_out``.md/.csv) and AIS convergence figure (``out``.pdf/.png)
    from the ``text_ebm`` metrics Parquet (module docstring); the .md also lists up to :data:`MAX_SAMPLES`
    sentences of ``samples`` (the ``.samples.txt`` that training writes beside its checkpoint), if given.

    Returns:
        The paths written.

    Raises:
        InputError: metrics of another experiment, metrics without one of :data:`MODELS`, or an unreadable
            samples file (each named).
    """
    df, prov = read_parquet(metrics)
    _check(df, metrics)
    suffix = f" [{config_name} config]" if config_name else ""
    tab = table(df)
    md_lines = [f"# GWG App. J: text EBM on Penn Treebank{suffix}", "",
                "Test log-likelihood per sentence (nats; higher is better) +- its standard error over test sentences "
                "(the EBM's also over AIS chains), and per token (nats, / max length). Every model scores the same "
                "padded sequences, so the values compare directly. The paper prints all four values, but their "
                "digits are lost in our copy of its text (column `paper`). Run sizes "
                f"(commit {str(prov.get('git_commit', '?'))[:8]}):", "",
                *sizes(prov.get("config") or {}, df), "", tab.to_markdown(index=False, floatfmt=".4g")]
    if samples is not None:
        md_lines += _samples_section(samples)
    csv, md = Path(f"{table_out}.csv"), Path(f"{table_out}.md")
    for path in (csv, md, Path(f"{out}.png"), Path(f"{out}.pdf")):  # before any write: a bad path loses nothing
        check_output_file(path, "--table-out" if path in (csv, md) else "--out")
    figures = _figure(df, out, suffix)
    with atomic_path(csv) as tmp:
        tab.to_csv(tmp, index=False)
    with atomic_path(md) as tmp:
        tmp.write_text("\n".join(md_lines) + "\n")
    return [*figures, csv, md]
