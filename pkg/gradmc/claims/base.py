"""A claim of a paper as a measured effect with a 95% interval and a verdict; assembled into claims.md/.csv/.parquet.

Each claim states its effect in words and as a number with a sign convention (``effect_name``), an
:class:`~gradmc.claims.stats.Interval` over independent replicates, the paper's side of the null
(``direction``) or, for agreement with a number the paper prints, a tolerance band around the paper's
value. The verdict (PASS / FAIL / INCONCLUSIVE) is never set by hand: :func:`gradmc.claims.stats.decide`
computes it from the interval.
"""

from __future__ import annotations

import importlib
import math
import pkgutil
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from gradmc.atomic import atomic_path
from gradmc.claims.stats import Interval, Verdict, decide
from gradmc.errors import InputError
from gradmc.results import PROVENANCE_COLUMNS, provenance, read_parquet, write_parquet
from gradmc.results.schema import validate_metrics

__all__ = ["Claim", "CLAIM_COLUMNS", "STATUSES", "agreement", "claims_frame", "summary", "write_claims"]

STATUSES = ("PASS", "FAIL", "INCONCLUSIVE")

CLAIM_COLUMNS = ["experiment", "paper", "claim", "effect_name", "effect", "ci_low", "ci_high", "replicates",
                 "replicate_unit", "interval_method", "direction", "null", "tolerance", "paper_value",
                 "paper_source", "status", "measured", "note"]
"""Columns of claims.csv / claims.parquet (plus the provenance columns)."""


@dataclass(frozen=True)
class Claim:
    """One checkable statement of a paper, measured.

    Attributes:
        experiment: the experiment family (module name under gradmc.claims).
        paper: paper and figure, e.g. "GWG Fig. 3".
        claim: the statement, e.g. "GWG's ESS is larger than Gibbs-1's on the MNIST RBM".
        effect_name: the effect in words with its sign convention, e.g. "log(mean ESS GWG / mean ESS
            Gibbs-1); > 0: GWG larger".
        interval: the effect and its 95% interval over replicates.
        direction: +1 when the paper's side is effect > null, -1 when effect < null, 0 for agreement with
            ``paper_value`` (effect = ours - paper's, band +- ``tolerance``).
        measured: the numbers behind the effect, as text.
        note: context: sizes, why a tolerance was chosen, what the paper runs.
        null: the no-effect value (0).
        tolerance: the agreement band's half-width (agreement claims), with its justification in ``note``.
        paper_value: the paper's printed number where it prints one (NaN otherwise), in the units of
            ``measured``.
        paper_source: where the paper's value or threshold is printed, e.g. "GWG Table 2".
    """

    experiment: str
    paper: str
    claim: str
    effect_name: str
    interval: Interval
    direction: int
    measured: str = ""
    note: str = ""
    null: float = 0.0
    tolerance: float | None = None
    paper_value: float = math.nan
    paper_source: str = ""

    @property
    def verdict(self) -> Verdict:
        """PASS / FAIL / INCONCLUSIVE from the interval (:func:`gradmc.claims.stats.decide`)."""
        return decide(self.interval, self.direction, self.null, self.tolerance)

    @property
    def status(self) -> str:
        """"PASS", "FAIL" or "INCONCLUSIVE"."""
        return self.verdict.status

    @property
    def passed(self) -> bool:
        """True for PASS only."""
        return self.status == "PASS"

    def row(self) -> dict:
        """The claim as one row of :data:`CLAIM_COLUMNS`."""
        verdict = self.verdict
        iv = self.interval
        note = "; ".join(p for p in (self.note, verdict.note) if p)
        return {"experiment": self.experiment, "paper": self.paper, "claim": self.claim,
                "effect_name": self.effect_name, "effect": iv.effect, "ci_low": iv.low, "ci_high": iv.high,
                "replicates": iv.replicates, "replicate_unit": iv.unit, "interval_method": iv.method,
                "direction": self.direction, "null": self.null,
                "tolerance": math.nan if self.tolerance is None else float(self.tolerance),
                "paper_value": float(self.paper_value), "paper_source": self.paper_source,
                "status": verdict.status, "measured": self.measured, "note": note}


def agreement(experiment: str, paper: str, what: str, ours: Interval, paper_value: float, tolerance: float,
              paper_source: str, units: str, why_tolerance: str, note: str = "") -> Claim:
    """A claim that our value of ``what`` agrees with the number the paper prints.

    Args:
        ours: our value's interval (effect = our estimate).
        paper_value: the paper's number; tolerance: the band half-width, in ``units``; why_tolerance:
            its justification (the paper's error bar, or a stated reason).

    Returns:
        Claim with effect = ours - paper_value (interval shifted likewise), direction 0.
    """
    shifted = Interval(ours.effect - paper_value, ours.low - paper_value, ours.high - paper_value, ours.replicates,
                       ours.unit, ours.method)
    return Claim(experiment, paper, f"our {what} agrees with the paper's {paper_value:g} {units}",
                 f"ours - paper's ({units}); agreement band +-{tolerance:g}", shifted, 0,
                 f"ours {ours.effect:.4g} [{ours.low:.4g}, {ours.high:.4g}] vs paper {paper_value:g}",
                 "; ".join(p for p in (f"tolerance: {why_tolerance}", note) if p), 0.0, tolerance, paper_value,
                 paper_source)


def _known() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules(importlib.import_module("gradmc.claims").__path__)
                  if m.name not in ("base", "stats"))


def claims_frame(metrics: dict[str, str | Path]) -> tuple[pd.DataFrame, dict]:
    """Evaluate ``gradmc.claims.<experiment>.claims`` on each experiment's metrics Parquet.

    Args:
        metrics: experiment name -> metrics Parquet path.

    Returns:
        (frame, inputs): one row per claim with :data:`CLAIM_COLUMNS`; and, per experiment, the provenance
        of its metrics file (git commit, config hash), recorded in the claims' own provenance.

    Raises:
        InputError: an experiment without a claims module (the message lists the known ones), a file that
            holds another experiment's metrics, or one that does not follow the metrics schema.
    """
    rows, inputs = [], {}
    known = _known()
    for experiment, path in metrics.items():
        if experiment not in known:
            raise InputError(f"no claims for experiment {experiment!r}; known: {', '.join(known)}")
        module = importlib.import_module(f"gradmc.claims.{experiment}")
        df, prov = read_parquet(path)
        found = sorted(set(df["experiment"].astype(str))) if "experiment" in df else []
        if found != [experiment]:
            raise InputError(f"{path} holds metrics of {found}, not of {experiment!r}")
        try:
            validate_metrics(df)
        except ValueError as err:
            raise InputError(f"{path} is not a gradmc metrics file: {err}") from None
        inputs[experiment] = {"path": str(path), "git_commit": prov.get("git_commit"),
                              "config_hash": prov.get("config_hash")}
        rows += [c.row() for c in module.claims(df)]
    return pd.DataFrame(rows, columns=CLAIM_COLUMNS), inputs


def _fmt(v: float) -> str:
    if not math.isfinite(v):
        return "-inf" if v < 0 else ("inf" if v > 0 else "nan")
    return f"{v:.3g}"


def summary(frame: pd.DataFrame) -> str:
    """"31 PASS, 2 FAIL, 4 INCONCLUSIVE of 37 claims"."""
    counts = frame["status"].value_counts()
    return ", ".join(f"{int(counts.get(s, 0))} {s}" for s in STATUSES) + f" of {len(frame)} claims"


def write_claims(frame: pd.DataFrame, out_prefix: str | Path, config_name: str, inputs: dict | None = None,
                 figure: str | None = None) -> list[Path]:
    """Write ``out_prefix``.md (a table per paper), .csv and .parquet atomically; return the paths.

    The Parquet file carries the provenance footer and columns of every gradmc output
    (:func:`gradmc.results.write_parquet`), the CSV the same provenance columns; the provenance config
    names the config and each input metrics file's commit and config hash.
    """
    md, csv, parquet = Path(f"{out_prefix}.md"), Path(f"{out_prefix}.csv"), Path(f"{out_prefix}.parquet")
    prov = provenance({"name": config_name, "inputs": inputs or {}})
    label = f" ({config_name} config)" if config_name else ""
    lines = [f"# Claims of the papers, measured{label}", "",
             f"{summary(frame)}. Each effect has a 95% interval over independent replicates; PASS: the interval "
             "lies on the paper's side of the null (or inside the agreement band), FAIL: wholly on the other "
             "side (or outside the band), INCONCLUSIVE: it straddles, and the note estimates the replicates that "
             "would decide it.", ""]
    if figure:
        lines += [f"![claims dashboard]({figure})", ""]
    table = frame.assign(
        interval=[f"{_fmt(e)} [{_fmt(lo)}, {_fmt(hi)}]" for e, lo, hi in
                  zip(frame["effect"], frame["ci_low"], frame["ci_high"], strict=True)],
        n=[f"{r} {u}" for r, u in zip(frame["replicates"], frame["replicate_unit"], strict=True)],
        paper_number=[("" if not math.isfinite(v) else f"{v:g} ({s})") for v, s in
                      zip(frame["paper_value"], frame["paper_source"], strict=True)])
    for paper, part in table.groupby(table["paper"].str.split().str[0], sort=True):
        lines += [f"## {paper}", "", part[["paper", "claim", "effect_name", "interval", "n", "status", "paper_number",
                                           "measured", "note"]].rename(
            columns={"paper": "figure", "effect_name": "effect", "interval": "effect [95% interval]",
                     "n": "replicates", "paper_number": "paper value"}).to_markdown(index=False), ""]
    with atomic_path(md) as tmp:
        tmp.write_text("\n".join(lines) + "\n")
    with atomic_path(csv) as tmp:
        frame.assign(**{k: prov[k] for k in PROVENANCE_COLUMNS}).to_csv(tmp, index=False)
    write_parquet(frame, parquet, prov)
    return [md, csv, parquet]
