"""A claim of a paper as a measured effect with a 95% interval and a verdict; assembled into claims.md/.csv/.parquet.

Each claim quotes its source (``paper``: paper and figure; ``quote``: the sentence or table cell it tests;
``origin``: GWG, KMC, or "other" for sanity checks and the later samplers' own papers, which never count as a
reproduction of GWG or KMC), states its effect in words and as a number with a sign convention
(``effect_name``), an :class:`~gradmc.claims.stats.Interval` over independent replicates, and the test its
words call for (``test``: superiority, non-inferiority, equivalence or agreement with a printed number, with
its margin ``tolerance`` justified in ``margin_why``).

A claim also declares what it needs to be decided (:class:`Need`: a minimum size read from the config, e.g.
training iterations, or hardware the run does not have, e.g. timings of the paper's GPU code). The verdict
is never set by hand:

- NOT RUN: its inputs could not be had (``not_run`` says which and how to obtain them);
- NOT DECIDABLE ON THIS HARDWARE / AT THIS SCALE: a need is unmet, decided from the config alone, never
  from the result (our value still shows beside the paper's);
- otherwise PASS / FAIL / INCONCLUSIVE, computed from the interval by :func:`gradmc.claims.stats.decide`.
"""

from __future__ import annotations

import importlib
import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from gradmc.atomic import atomic_path
from gradmc.claims.stats import Interval, Verdict, decide
from gradmc.errors import InputError, unknown_name
from gradmc.results import PROVENANCE_COLUMNS, provenance, read_parquet, write_parquet
from gradmc.results.schema import validate_metrics

__all__ = ["Claim", "CLAIM_COLUMNS", "DECIDED", "NOT_DECIDABLE_HARDWARE", "NOT_DECIDABLE_SCALE", "NOT_RUN", "Need",
           "ORIGINS", "STATUSES", "agreement", "at_least", "claims_frame", "config_value", "hardware", "summary",
           "write_claims"]

DECIDED = ("PASS", "FAIL", "INCONCLUSIVE")
"""Verdicts of a claim the config can decide."""
NOT_DECIDABLE_SCALE = "NOT DECIDABLE AT THIS SCALE"
NOT_DECIDABLE_HARDWARE = "NOT DECIDABLE ON THIS HARDWARE"
NOT_RUN = "NOT RUN"
STATUSES = (*DECIDED, NOT_DECIDABLE_SCALE, NOT_DECIDABLE_HARDWARE, NOT_RUN)

ORIGINS = {"GWG": "Grathwohl et al. 2021, Oops I Took A Gradient (Gibbs-With-Gradients)",
           "KMC": "Strathmann et al. 2015, Gradient-free Hamiltonian Monte Carlo (Kernel HMC)",
           "other": "not a claim of GWG or KMC: sanity checks, and the later samplers' own papers"}
"""Where a claim comes from; only GWG and KMC claims count as a reproduction of those papers."""

CLAIM_COLUMNS = ["experiment", "origin", "paper", "quote", "claim", "test", "effect_name", "effect", "ci_low",
                 "ci_high", "replicates", "replicate_unit", "interval_method", "direction", "null", "tolerance",
                 "margin_why", "paper_value", "paper_source", "needs", "status", "measured", "note"]
"""Columns of claims.csv / claims.parquet (plus the provenance columns). ``tolerance`` is the test's margin
(band half-width of an equivalence/agreement test, or a non-inferiority margin; NaN for superiority)."""


@dataclass(frozen=True)
class Need:
    """What a claim needs to be decided, with what the config gives.

    Attributes:
        what: in words, e.g. "training iterations".
        needed: the least value that decides the claim (scale), or a description (hardware).
        have: the config's value (scale), True/False (hardware: whether this run has it), or None when no
            config was given (then the need is reported as unchecked and does not block the verdict).
        kind: "scale" or "hardware".
        key: the dotted config key ``have`` was read from ("" for hardware).
        why: where the requirement comes from (the paper's setting, a power estimate, ...).
    """

    what: str
    needed: float | str
    have: float | bool | None
    kind: str = "scale"
    key: str = ""
    why: str = ""

    @property
    def met(self) -> bool:
        """True when the config meets the need, or when no config was given to check it."""
        if self.have is None:
            return True
        if self.kind == "hardware":
            return bool(self.have)
        return float(self.have) >= float(self.needed)

    def text(self) -> str:
        """E.g. "training iterations >= 50,000 (config ebm.train.iterations = 1,800: unmet; the paper's setting)"."""
        if self.kind == "hardware":
            state = "unchecked" if self.have is None else ("available" if self.have else "not available here")
            return f"{self.what} ({state}" + (f"; {self.why})" if self.why else ")")
        have = "no config given: unchecked" if self.have is None else (
            f"config {self.key} = {self.have:,g}: {'met' if self.met else 'unmet'}")
        return f"{self.what} >= {float(self.needed):,g} ({have}" + (f"; {self.why})" if self.why else ")")


def config_value(config: dict | None, key: str) -> object:
    """The value at dotted ``key`` of ``config`` (e.g. "ebm.train.iterations"); None when config is None.

    Raises:
        InputError: a config was given but lacks the key (naming the key and the part that is missing).
    """
    if config is None:
        return None
    node = config
    for i, part in enumerate(key.split(".")):
        if not isinstance(node, dict) or part not in node:
            raise InputError(f"the config has no {'.'.join(key.split('.')[:i + 1])!r} (a claim reads {key!r})")
        node = node[part]
    return node


def at_least(config: dict | None, key: str, needed: float, what: str, why: str = "",
             reduce=None) -> Need:
    """A scale need read from the config: the value at ``key`` (``reduce`` applied, e.g. ``len`` of a seed list or
    ``max`` of a grid) must be >= ``needed``."""
    value = config_value(config, key)
    if value is not None and reduce is not None:
        value = reduce(value)
    return Need(what, float(needed), None if value is None else float(value), "scale", key, why)


def hardware(what: str, available: bool, why: str = "", config: dict | None = None) -> Need:
    """A hardware need, e.g. ``hardware("timings of the paper's GPU code", False)``; unchecked when ``config`` is
    None."""
    return Need(what, what, None if config is None else bool(available), "hardware", "", why)


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
        quote: the paper's sentence (or table cell) this claim tests, verbatim.
        origin: "GWG", "KMC" or "other" (:data:`ORIGINS`); "" takes the first word of ``paper`` when that is
            GWG or KMC, else "other".
        test: "superiority", "non-inferiority", "equivalence" or "agreement"
            (:data:`gradmc.claims.stats.TESTS`); "" infers superiority (direction +-1) or agreement (0).
        margin_why: the justification of ``tolerance`` (the paper's error bars, the effect size it calls
            meaningful, or the measured run-to-run spread).
        needs: what deciding the claim needs (:class:`Need`), read from the config.
        not_run: why the claim could not be run (inputs that cannot be had, and how to obtain them); "" if run.
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
    quote: str = ""
    origin: str = ""
    test: str = ""
    margin_why: str = ""
    needs: tuple[Need, ...] = ()
    not_run: str = ""

    @property
    def source(self) -> str:
        """"GWG", "KMC" or "other"."""
        if self.origin:
            if self.origin not in ORIGINS:
                raise ValueError(f"claim origin must be one of {', '.join(ORIGINS)}; got {self.origin!r}")
            return self.origin
        first = self.paper.split()[0] if self.paper else ""
        return first if first in ("GWG", "KMC") else "other"

    @property
    def kind(self) -> str:
        """The test (:data:`gradmc.claims.stats.TESTS`)."""
        return self.test or ("agreement" if self.direction == 0 else "superiority")

    @property
    def verdict(self) -> Verdict:
        """NOT RUN, NOT DECIDABLE (from the needs, i.e. the config), or PASS / FAIL / INCONCLUSIVE from the
        interval (:func:`gradmc.claims.stats.decide`)."""
        if self.not_run:
            return Verdict(NOT_RUN, self.not_run)
        for kind, status in (("hardware", NOT_DECIDABLE_HARDWARE), ("scale", NOT_DECIDABLE_SCALE)):
            unmet = [n.text() for n in self.needs if n.kind == kind and not n.met]
            if unmet:
                return Verdict(status, "needs " + "; ".join(unmet))
        return decide(self.interval, self.direction, self.null, self.tolerance, self.kind)

    @property
    def status(self) -> str:
        """"PASS", "FAIL" or "INCONCLUSIVE"."""
        return self.verdict.status

    @property
    def decidable(self) -> bool:
        """True when the verdict is PASS, FAIL or INCONCLUSIVE."""
        return self.status in DECIDED

    @property
    def passed(self) -> bool:
        """True for PASS only."""
        return self.status == "PASS"

    def row(self) -> dict:
        """The claim as one row of :data:`CLAIM_COLUMNS`."""
        verdict = self.verdict
        iv = self.interval
        note = "; ".join(p for p in (self.note, verdict.note) if p)
        return {"experiment": self.experiment, "origin": self.source, "paper": self.paper, "quote": self.quote,
                "claim": self.claim, "test": self.kind, "effect_name": self.effect_name, "effect": iv.effect,
                "ci_low": iv.low, "ci_high": iv.high, "replicates": iv.replicates, "replicate_unit": iv.unit,
                "interval_method": iv.method, "direction": self.direction, "null": self.null,
                "tolerance": math.nan if self.tolerance is None else float(self.tolerance),
                "margin_why": self.margin_why, "paper_value": float(self.paper_value),
                "paper_source": self.paper_source, "needs": "; ".join(n.text() for n in self.needs),
                "status": verdict.status, "measured": self.measured, "note": note}


def agreement(experiment: str, paper: str, what: str, ours: Interval, paper_value: float, tolerance: float,
              paper_source: str, units: str, why_tolerance: str, note: str = "", *, quote: str = "",
              needs: tuple[Need, ...] = (), origin: str = "") -> Claim:
    """A claim that our value of ``what`` agrees with the number the paper prints.

    Args:
        ours: our value's interval (effect = our estimate).
        paper_value: the paper's number; tolerance: the band half-width, in ``units``; why_tolerance:
            its justification (the paper's error bar, or a stated reason), kept as the claim's ``margin_why``.
        quote, needs, origin: as :class:`Claim`'s.

    Returns:
        Claim with effect = ours - paper_value (interval shifted likewise), direction 0, test "agreement".
    """
    shifted = Interval(ours.effect - paper_value, ours.low - paper_value, ours.high - paper_value, ours.replicates,
                       ours.unit, ours.method)
    return Claim(experiment, paper, f"our {what} agrees with the paper's {paper_value:g} {units}",
                 f"ours - paper's ({units}); agreement band +-{tolerance:g}", shifted, 0,
                 f"ours {ours.effect:.4g} [{ours.low:.4g}, {ours.high:.4g}] vs paper {paper_value:g}", note, 0.0,
                 tolerance, paper_value, paper_source, quote=quote, origin=origin, test="agreement",
                 margin_why=why_tolerance, needs=tuple(needs))


THEORY = ("theory.gwg_theorem1",)
"""Claims modules that read no metrics (under ``gradmc.claims.theory``): exact computations on small models,
``claims(config)``, computed whenever the claims are (:func:`claims_frame`)."""


_PACKAGE = Path(__file__).resolve().parents[1]  # .../gradmc


def claims_modules() -> dict[str, str]:
    """Experiment name -> its claims module, sorted by name: ``gradmc.experiments.<name>.claims`` of every
    experiment folder with a ``claims.py`` (standard experiments and hand-written stages such as ``ebm`` alike).
    Found by path, never imported here (the Snakefile reads the claims inputs from it); the claims stage reads each
    one's ``results/<config>/<name>/metrics.parquet``."""
    found = {path.parent.name: f"gradmc.experiments.{path.parent.name}.claims"
             for path in (_PACKAGE / "experiments").glob("*/claims.py")}
    return dict(sorted(found.items()))


_known = claims_modules


def larger_sizes(experiment: str, config: dict | None, larger: dict | None) -> list[str]:
    """The keys of ``experiment``'s config section whose value the ``larger`` config (e.g. the decide config) sets
    otherwise: where a larger run could decide what this one left INCONCLUSIVE. Empty when either config lacks the
    section, or both hold the same."""
    if config is None or larger is None or larger.get("name") == config.get("name"):
        return []
    mine, theirs = config.get(experiment), larger.get(experiment)
    if not isinstance(mine, dict) or not isinstance(theirs, dict):
        return []
    return [key for key in theirs if key in mine and theirs[key] != mine[key]]


def claims_frame(metrics: dict[str, str | Path], config: dict | None = None,
                 theory: bool = True, larger: tuple[str, dict] | None = None) -> tuple[pd.DataFrame, dict]:
    """Evaluate each experiment's ``claims(df, config)`` (its claims module,
    :func:`claims_modules`) on its metrics Parquet, and the :data:`THEORY` claims.

    Args:
        metrics: experiment name -> metrics Parquet path.
        config: the run's config (the parsed YAML); the claims read their needs from it (:class:`Need`).
            None leaves the needs unchecked (for a bare metrics file; the pipeline always passes it).
        theory: also compute the :data:`THEORY` claims (exact, about a second).
        larger: (its path, the parsed config) of a config that runs experiments at larger sizes (the decide
            config): an INCONCLUSIVE claim's note names it and the keys it sets otherwise
            (:func:`larger_sizes`).

    Returns:
        (frame, inputs): one row per claim with :data:`CLAIM_COLUMNS`; and, per experiment, the provenance
        of its metrics file (git commit, config hash), recorded in the claims' own provenance.

    Raises:
        InputError: an experiment without a claims module (the message lists the known ones), a file that
            holds another experiment's metrics, one that does not follow the metrics schema, or a config
            without a key a claim reads.
    """
    rows, inputs = [], {}
    known = _known()
    for experiment, path in metrics.items():
        if experiment not in known:
            raise InputError(unknown_name("experiment", experiment, known, label="experiments with claims"))
        module = importlib.import_module(known[experiment])
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
        try:
            made = module.claims(df, config)
        except ValueError as err:  # e.g. a non-finite replicate the schema let through
            raise InputError(f"{path}: the {experiment} claims cannot be computed from these metrics: {err}") from None
        _check_run_config(made, config, prov.get("config"), path)
        hint = ""
        if larger is not None and (keys := larger_sizes(experiment, config, larger[1])):
            hint = (f"{larger[0]} runs {experiment} at other sizes ({', '.join(keys)}), chosen to decide the claims "
                    "that need no GPU: run it there")
        for c in made:
            row = c.row()
            if hint and row["status"] == "INCONCLUSIVE":
                row["note"] = f"{row['note']}; {hint}" if row["note"] else hint
            rows.append(row)
    for name in THEORY if theory else ():
        rows += [c.row() for c in importlib.import_module(f"gradmc.claims.{name}").claims(config)]
    return pd.DataFrame(rows, columns=CLAIM_COLUMNS), inputs


def _check_run_config(made: list[Claim], config: dict | None, run_config: dict | None, path) -> None:
    """Refuse to judge a metrics file by a config it was not made with: every key a need reads that the file's
    own provenance config also holds must have the same value in both.

    Raises:
        InputError: naming the file, the key and both values.
    """
    if config is None or not isinstance(run_config, dict):
        return
    for key in sorted({n.key for c in made for n in c.needs if n.key}):
        try:
            theirs = config_value(run_config, key)
        except InputError:
            continue  # the file's config part does not hold this key (another stage's setting)
        ours = config_value(config, key)
        if theirs != ours:
            raise InputError(f"{path} was made with {key} = {theirs!r}, but the config given holds {ours!r}: its "
                             "claims would be judged against a run that did not happen; give the run's own config")


def _fmt(v: float) -> str:
    if not math.isfinite(v):
        return "-inf" if v < 0 else ("inf" if v > 0 else "nan")
    return f"{v:.3g}"


def summary(frame: pd.DataFrame) -> str:
    """Headline counts over decidable claims only, per origin, e.g. "GWG: 20 of 30 decidable claims PASS (3 FAIL,
    7 INCONCLUSIVE), 4 not decidable here; KMC: ...; other: ..."."""
    parts = []
    origins = frame["origin"] if "origin" in frame else pd.Series(["other"] * len(frame), index=frame.index)
    for origin in [o for o in ORIGINS if (origins == o).any()]:
        part = frame[origins == origin]
        counts = part["status"].value_counts()
        decided = int(sum(counts.get(s, 0) for s in DECIDED))
        rest = len(part) - decided
        text = (f"{origin}: {int(counts.get('PASS', 0))} of {decided} decidable claims PASS "
                f"({int(counts.get('FAIL', 0))} FAIL, {int(counts.get('INCONCLUSIVE', 0))} INCONCLUSIVE)")
        if rest:
            text += ", " + ", ".join(f"{int(counts[s])} {s.lower()}" for s in STATUSES[3:] if counts.get(s, 0))
        parts.append(text)
    return "; ".join(parts) if parts else "no claims"


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
             f"{summary(frame)}.", "",
             "Each claim quotes the sentence it tests and is tested the way its words say: superiority (the whole "
             "95% interval on the paper's side of the null), non-inferiority or equivalence (against a stated "
             "margin), or agreement with a printed number (inside a stated band). PASS / FAIL: the interval "
             "decides for or against; INCONCLUSIVE: it straddles, and the note estimates the replicates that "
             "would decide it. NOT DECIDABLE AT THIS SCALE / ON THIS HARDWARE: the config (never the result) "
             "does not meet what the claim needs; our value still shows beside the paper's. Only decidable "
             "claims enter the counts; only GWG and KMC claims count as a reproduction of those papers.", ""]
    if figure:
        lines += [f"![claims dashboard]({figure})", ""]
    table = frame.assign(
        interval=[f"{_fmt(e)} [{_fmt(lo)}, {_fmt(hi)}]" for e, lo, hi in
                  zip(frame["effect"], frame["ci_low"], frame["ci_high"], strict=True)],
        n=[f"{r} {u}" for r, u in zip(frame["replicates"], frame["replicate_unit"], strict=True)],
        test_margin=[t if not math.isfinite(m) else f"{t}, margin {m:g}" + (f" ({w})" if w else "")
                     for t, m, w in zip(frame["test"], frame["tolerance"], frame["margin_why"], strict=True)],
        paper_number=[("" if not math.isfinite(v) else f"{v:g} ({s})") for v, s in
                      zip(frame["paper_value"], frame["paper_source"], strict=True)],
        why=[("; ".join(p for p in (nd, nt) if p)) for nd, nt in zip(frame["needs"], frame["note"], strict=True)])
    columns = {"paper": "figure", "quote": "the paper says", "claim": "claim", "test_margin": "test",
               "effect_name": "effect", "interval": "effect [95% interval]", "n": "replicates", "status": "verdict",
               "paper_number": "paper value", "measured": "measured", "why": "needs and notes"}
    table[list(columns)] = table[list(columns)].apply(  # a "|" in a cell would split the markdown table's columns
        lambda col: col.astype(str).str.replace("|", "\\|", regex=False))
    for origin in [o for o in ORIGINS if (table["origin"] == o).any()]:
        part = table[table["origin"] == origin]
        lines += [f"## {origin}: {ORIGINS[origin]}", ""]
        for title, rows in (("Decided by this config", part[part["status"].isin(DECIDED)]),
                            ("Not decidable by this config, or not run", part[~part["status"].isin(DECIDED)])):
            if len(rows):
                lines += [f"### {title} ({len(rows)})", "",
                          rows[list(columns)].rename(columns=columns).to_markdown(index=False), ""]
    with atomic_path(md) as tmp:
        tmp.write_text("\n".join(lines) + "\n")
    with atomic_path(csv) as tmp:
        frame.assign(**{k: prov[k] for k in PROVENANCE_COLUMNS}).to_csv(tmp, index=False)
    write_parquet(frame, parquet, prov)
    return [md, csv, parquet]
