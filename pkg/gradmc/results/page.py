"""The results page of a finished pipeline run: one markdown file a reader opens first.

``gradmc docs results/<config>`` writes ``results/<config>/results.md`` from what the run left there:

- the claims summary and table (``claims.parquet``) with the claims dashboard (``figures/claims_dashboard.png``);
- every figure under ``figures/``, headed by the paper figure it reproduces and captioned with the report
  caption of its experiment folder (the same ``.rst`` text ``make report`` shows), with a link to its table;
- every figure and table the pipeline makes (:func:`expected_outputs`) that the run lacks, named where it
  would have been and listed under "Missing outputs" at the top, with the rule that makes it;
- the stage times, read from each job's log (``logs/<job>.log``, whose last ``[gradmc] ... done in Ns`` line
  the ``gradmc`` command prints when it ends);
- versions and provenance, from the Parquet footers (:func:`gradmc.results.read_provenance`): commit, config
  hash, gradmc, torch and Python versions, when each file was written.

Image and table links are relative to the folder the page is written in (the run's folder by default, or
that of ``--out``), so the page renders wherever it is written (a markdown viewer, or a documentation site
that copies the folders). A folder that is not a finished run is refused with an
:class:`~gradmc.errors.InputError` naming what is missing.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

import numpy as np
import pandas as pd

import gradmc
from gradmc.atomic import atomic_path
from gradmc.errors import InputError, check_output_file
from gradmc.registry import EXPERIMENTS_DIR, experiments
from gradmc.results.parquet import read_parquet, read_provenance

__all__ = ["FINISHED_MARKERS", "CLAIMS_COLUMNS", "HAND_WRITTEN_OUTPUTS", "captions", "expected_outputs",
           "stage_times", "results_page", "write_results_page"]

#: Files every finished run holds (the claims rule runs last, after every metrics file exists).
FINISHED_MARKERS = ("claims.md", "claims.parquet", "figures/claims_dashboard.png")
#: Captions of the figures no experiment folder owns (the claims dashboard, the leaderboard).
REPORT_DIR = Path(gradmc.__file__).resolve().parents[2] / "workflow" / "report"

_DONE = re.compile(r"\[gradmc\] (\S+) done in ([0-9.]+)s")
_JINJA = re.compile(r"\{\{\s*snakemake\.config\[\"name\"\]\s*\}\}")
#: Columns of ``claims.parquet`` the page reads (``gradmc claims`` writes them, with more).
CLAIMS_COLUMNS = ("experiment", "origin", "paper", "claim", "effect", "ci_low", "ci_high", "status")
_NUMERIC = ("effect", "ci_low", "ci_high")
#: Figures and tables of the hand-written stages, by the rule of ``workflow/rules/*.smk`` that makes them:
#: (figure stems, table stems). The standard experiments' come from the registry (:func:`expected_outputs`).
HAND_WRITTEN_OUTPUTS = {
    "figure_ebm": (("gwg_fig14_ais", "gwg_fig8_samples", "gwg_ebm_learning_curve"), ("gwg_table2_ebm",)),
    "figure_text_ebm": (("gwg_appj_text_ais",), ("gwg_appj_text_ebm",)),
    "figure_leaderboard": (("sampler_leaderboard",), ("sampler_leaderboard",)),
    "table_sampler_cost": ((), ("sampler_cost",)),
}
_VERDICTS = ("PASS", "FAIL", "INCONCLUSIVE", "NOT DECIDABLE AT THIS SCALE", "NOT DECIDABLE ON THIS HARDWARE", "NOT RUN")


def _rst_to_markdown(text: str, config_name: str) -> str:
    """A report caption (reST with Snakemake's Jinja) as markdown paragraphs: the config name filled in,
    ``literal`` as `literal`, lines of a paragraph joined; the caption's "Config: ..." paragraph is left out (the
    page says once which config it shows)."""
    text = _JINJA.sub(config_name, text).replace("``", "`")
    paragraphs = [" ".join(line.strip() for line in block.splitlines()) for block in re.split(r"\n\s*\n", text)]
    return "\n\n".join(p for p in paragraphs if p and not p.startswith("Config: "))


def captions() -> dict[str, Path]:
    """Figure stem -> its report caption file: a standard experiment's ``caption.rst`` for its figure and extra
    figures, a hand-written stage's ``<stem>.rst`` in its folder, ``workflow/report/<stem>.rst`` for the rest."""
    found = {path.stem: path for path in sorted(REPORT_DIR.glob("*.rst"))}
    found.update({path.stem: path for path in sorted(EXPERIMENTS_DIR.glob("*/*.rst")) if path.stem != "caption"})
    for exp in experiments().values():
        if exp.figure and exp.caption_path.is_file():
            for stem in (exp.figure, *(f"{exp.figure}_{suffix}" for suffix in exp.extra_figures)):
                found[stem] = exp.caption_path
    return found


def _caption_for(stem: str, known: dict[str, Path]) -> Path | None:
    """The caption of ``stem``, or of the longest known stem it extends (``fig6_ising_pcd_vs_steps``)."""
    if stem in known:
        return known[stem]
    prefixes = [k for k in known if stem.startswith(f"{k}_")]
    return known[max(prefixes, key=len)] if prefixes else None


def stage_times(run_dir: str | Path) -> pd.DataFrame:
    """Wall seconds of each job of the run, from the last ``[gradmc] <command> done in <s>s`` line of its log.

    Returns:
        One row per job log that has such a line: ``job`` (the log's name), ``command`` and ``seconds``,
        slowest first. Jobs whose command prints no time (data fetches) are left out.
    """
    rows = []
    for log in sorted((Path(run_dir) / "logs").glob("*.log")):
        try:
            matches = _DONE.findall(log.read_text(errors="replace"))
        except OSError:  # a folder or an unreadable file: no time to read
            continue
        if matches:
            command, seconds = matches[-1]
            rows.append({"job": log.stem, "command": command, "seconds": float(seconds)})
    frame = pd.DataFrame(rows, columns=["job", "command", "seconds"])
    return frame.sort_values("seconds", ascending=False, kind="stable").reset_index(drop=True)


def _check_finished(run: Path) -> None:
    if not run.is_dir():
        raise InputError(f"{run} is not a folder: give the results folder of a run, e.g. results/quick")
    missing = [name for name in FINISHED_MARKERS if not (run / name).is_file()]
    if missing:
        raise InputError(f"{run} is not a finished run (missing {', '.join(missing)}): run "
                         f"`make reproduce CONFIG={_recorded_config_name(run)}` to the end first")


def _recorded_config_name(run: Path) -> str:
    """The name of the config ``run`` was made with, as its Parquet footers record it (``claims.parquet`` first,
    then the metrics files); the folder's name where none can be read."""
    candidates = [run / "claims.parquet", *sorted(run.glob("*/metrics.parquet")),
                  *sorted(run.glob("*/*/*/metrics.parquet"))]
    for path in candidates:
        try:
            name = _config_name(read_provenance(path))
        except (InputError, OSError):  # absent or unreadable
            continue
        if name:
            return name
    return run.name


def _config_name(prov: dict) -> str | None:
    """The config name a Parquet footer's provenance records, or None where it records none."""
    config = prov.get("config")
    name = config.get("name") if isinstance(config, dict) else None
    return name if isinstance(name, str) and name else None


def _check_claims(claims: pd.DataFrame, path: Path, config_name: str) -> None:
    """Refuse a claims table the page cannot read: a column of :data:`CLAIMS_COLUMNS` missing, or an effect or
    interval column that is not numeric."""
    rebuild = f"delete it and rerun `make reproduce CONFIG={config_name}` (its claims rule writes it)"
    missing = [c for c in CLAIMS_COLUMNS if c not in claims.columns]
    if missing:
        raise InputError(f"{path} is not a claims table of `gradmc claims`: it lacks the columns {', '.join(missing)} "
                         f"(expected {', '.join(CLAIMS_COLUMNS)}); {rebuild}")
    text = [c for c in _NUMERIC if not pd.api.types.is_numeric_dtype(claims[c])]
    if text:
        raise InputError(f"{path}: the columns {', '.join(text)} hold {', '.join(str(claims[c].dtype) for c in text)}"
                         f" values, expected numbers; {rebuild}")


def _linker(run: Path, page_dir: Path) -> Callable[[str], str]:
    """The link target, from a page in ``page_dir``, of the run's file ``name`` (a path relative to ``run``):
    relative (:func:`os.path.relpath`), URL-quoted (a space would end a markdown link)."""
    base = os.path.abspath(page_dir)

    def link(name: str) -> str:
        target = os.path.abspath(run / name)
        try:
            target = os.path.relpath(target, base)
        except ValueError:  # another drive (Windows): no relative path exists
            pass
        return quote(Path(target).as_posix(), safe="/:")

    return link


def _escape(value) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def _fmt(x) -> str:
    return "" if pd.isna(x) else f"{x:.3g}"


def _effect_cell(effect, low, high) -> str:
    """The effect and its 95% interval; the effect alone where the claim has no finite interval (a claim not
    decidable at the run's scale, or one decided on a single number)."""
    if pd.isna(effect):
        return ""
    if not (np.isfinite(low) and np.isfinite(high)):  # NaN is not finite either
        return f"{_fmt(effect)} (no interval)"
    return f"{_fmt(effect)} [{_fmt(low)}, {_fmt(high)}]"


def _claims_section(claims: pd.DataFrame, link: Callable[[str], str]) -> list[str]:
    counts = claims["status"].value_counts()
    lines = ["## Claims", "", "| origin | " + " | ".join(_VERDICTS) + " |", "|:--|" + "--:|" * len(_VERDICTS)]
    for origin, part in claims.groupby("origin", sort=False):
        per = part["status"].value_counts()
        lines.append(f"| {origin} | " + " | ".join(str(int(per.get(v, 0))) for v in _VERDICTS) + " |")
    lines += ["", f"{len(claims)} claims, {int(counts.get('PASS', 0))} PASS. Only decidable claims (PASS, FAIL, "
              f"INCONCLUSIVE) count; [`claims.md`]({link('claims.md')}) has each claim's quote, test, margin, "
              "needs and notes.", "",
              f"![claims dashboard]({link('figures/claims_dashboard.png')})", "",
              "| experiment | figure | claim | effect [95% interval] | verdict |", "|:--|:--|:--|:--|:--|"]
    for row in claims.itertuples(index=False):
        interval = _effect_cell(row.effect, row.ci_low, row.ci_high)
        lines.append(f"| {_escape(row.experiment)} | {_escape(row.paper)} | {_escape(row.claim)} | {interval} | "
                     f"{row.status} |")
    return [*lines, ""]


def _natural(text: str) -> list:
    """Natural sort key: the digit runs of ``text`` compare as numbers (``fig8`` before ``fig14``)."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text)]


def _figure_order(stem: str) -> tuple:
    """Sort key of a figure on the page: by paper (the GWG paper's ``fig<N>_*`` and ``gwg_*`` stems, then the
    Kernel HMC paper's ``kmc_*``, then figures of no paper such as the leaderboard), then by the paper's figure
    number as a number (``gwg_fig8_samples`` before ``gwg_fig14_ais``; unnumbered ones after), then naturally
    by stem."""
    paper = 1 if stem.startswith("kmc_") else 0 if stem.startswith(("fig", "gwg_")) else 2
    number = re.search(r"(?:^|_)fig(\d+)", stem)
    return paper, int(number.group(1)) if number else math.inf, _natural(stem)


def expected_outputs() -> tuple[dict[str, str], dict[str, str]]:
    """The figures and tables every finished run holds, each with the pipeline rule that makes it.

    A standard experiment's come from the registry (``figure_<name>``: its ``figure`` with its
    ``extra_figures``, and the tables of its ``figure`` and ``extra_tables``); the hand-written stages' from
    :data:`HAND_WRITTEN_OUTPUTS`. The claims dashboard is left out (a run without it is not finished).

    Returns:
        (figures, tables): stem -> rule name, for ``figures/<stem>.png`` and ``tables/<stem>.md``.
    """
    figures: dict[str, str] = {}
    tables: dict[str, str] = {}
    for exp in experiments().values():
        if exp.figure:
            rule = f"figure_{exp.name}"
            figures.update({stem: rule for stem in (exp.figure, *(f"{exp.figure}_{s}" for s in exp.extra_figures))})
            tables.update({stem: rule for stem in (exp.figure, *(f"{exp.figure}_{s}" for s in exp.extra_tables))})
    for rule, (rule_figures, rule_tables) in HAND_WRITTEN_OUTPUTS.items():
        figures.update(dict.fromkeys(rule_figures, rule))
        tables.update(dict.fromkeys(rule_tables, rule))
    return figures, tables


def _missing(run: Path) -> list[tuple[str, str]]:
    """The expected outputs (:func:`expected_outputs`) that ``run`` lacks: (path under the run, rule)."""
    figures, tables = expected_outputs()
    paths = [(f"figures/{stem}.png", rule) for stem, rule in figures.items()]
    paths += [(f"tables/{stem}.md", rule) for stem, rule in tables.items()]
    return sorted(((path, rule) for path, rule in paths if not (run / path).is_file()),
                  key=lambda item: (item[0].split("/")[0], _figure_order(Path(item[0]).stem)))


def _missing_line(path: str, rule: str) -> str:
    return f"**Missing:** `{path}` (expected from the rule `{rule}`)"


def _missing_section(run: Path, config_name: str) -> list[str]:
    missing = _missing(run)
    if not missing:
        return []
    lines = ["## Missing outputs", "", f"The run lacks {len(missing)} of the figures and tables the pipeline makes; "
             f"`make reproduce CONFIG={config_name}` makes them again (each rule named here):", ""]
    lines += [f"- `{path}` (rule `{rule}`)" for path, rule in missing]
    return [*lines, ""]


def _figures_section(run: Path, config_name: str, link: Callable[[str], str]) -> list[str]:
    known = captions()
    expected_figures, expected_tables = expected_outputs()
    stems = {png.stem for png in (run / "figures").glob("*.png")} - {"claims_dashboard"}
    stems |= set(expected_figures)
    lines = ["## Figures", ""]
    for stem in sorted(stems, key=_figure_order):
        caption = _caption_for(stem, known)
        text = _rst_to_markdown(caption.read_text(), config_name) if caption else ""
        title = text.split(":", 1)[0] if text and ":" in text.split("\n", 1)[0][:60] else stem
        lines += [f"### {title} (`{stem}`)", ""]
        if (run / "figures" / f"{stem}.png").is_file():
            lines += [f"![{stem}]({link(f'figures/{stem}.png')})", ""]
        else:
            lines += [_missing_line(f"figures/{stem}.png", expected_figures[stem]), ""]
        if text:
            lines += [text, ""]
        table = f"tables/{stem}.md"
        if (run / table).is_file():
            lines += [f"Table: [`{table}`]({link(table)})", ""]
        elif stem in expected_tables:
            lines += [_missing_line(table, expected_tables[stem]), ""]
    present = {t.stem for t in (run / "tables").glob("*.md") if t.is_file()}
    others = sorted((present | set(expected_tables)) - stems, key=_natural)
    if others:
        lines += ["### Tables without a figure", ""]
        for stem in others:
            table = f"tables/{stem}.md"
            lines.append(f"- [`{table}`]({link(table)})" if stem in present
                         else f"- {_missing_line(table, expected_tables[stem])}")
        lines.append("")
    return lines


def _stage_times_section(run: Path) -> list[str]:
    times = stage_times(run)
    if times.empty:
        return ["## Stage times", "", "No job log under `logs/` records its time.", ""]
    lines = ["## Stage times", "", f"Each job's own time (its `gradmc` command, from `logs/<job>.log`); jobs run in "
             f"parallel, so the sum ({times['seconds'].sum():.0f} s) exceeds the run's wall time, which "
             "`make stage-times` reads from Snakemake's log.", "", "| job | command | seconds |", "|:--|:--|--:|"]
    lines += [f"| {row.job} | {row.command} | {row.seconds:.0f} |" for row in times.itertuples(index=False)]
    return [*lines, ""]


def _provenance_section(run: Path, claims_prov: dict) -> list[str]:
    keys = ("git_commit", "git_dirty", "config_hash", "package_version", "torch_version", "python_version",
            "created_utc")
    lines = ["## Versions and provenance", "", "Of the claims table (it is written last):", "",
             "| key | value |", "|:--|:--|"]
    lines += [f"| {key} | `{claims_prov.get(key, '')}` |" for key in keys]
    lines += ["", "Of each metrics file (the full provenance, config included, is the JSON under `gradmc.provenance` "
              "in its Parquet footer: `gradmc.results.read_provenance(path)`):", "",
              "| file | commit | dirty | config hash | gradmc | torch | written (UTC) |",
              "|:--|:--|:--|:--|:--|:--|:--|"]
    for path in sorted(run.glob("*/metrics.parquet")) + sorted(run.glob("*/*/*/metrics.parquet")):
        try:
            prov = read_provenance(path)
        except InputError as err:
            lines.append(f"| `{path.relative_to(run)}` | unreadable: {_escape(err)} | | | | | |")
            continue
        cells = (f"`{str(prov.get('git_commit', ''))[:12]}`", prov.get("git_dirty", ""),
                 f"`{prov.get('config_hash', '')}`", prov.get("package_version", ""), prov.get("torch_version", ""),
                 prov.get("created_utc", ""))
        lines.append(f"| `{path.relative_to(run)}` | " + " | ".join(str(c) for c in cells) + " |")
    return [*lines, ""]


def results_page(run_dir: str | Path, page_dir: str | Path | None = None) -> str:
    """The markdown results page of the finished run in ``run_dir`` (``results/<config>``).

    Args:
        run_dir: the run's results folder.
        page_dir: the folder the page will be written in (default ``run_dir``); its links to the run's files are
            relative to it.

    Raises:
        gradmc.errors.InputError: ``run_dir`` is not a folder, or not a finished run (no claims table or
            dashboard), or its ``claims.parquet`` is unreadable or lacks a column of :data:`CLAIMS_COLUMNS`.
    """
    run = Path(run_dir)
    _check_finished(run)
    claims, prov = read_parquet(run / "claims.parquet")
    config_name = _config_name(prov) or run.name
    _check_claims(claims, run / "claims.parquet", config_name)
    lines = [f"# Results of the `{config_name}` config", "",
             f"Written by `gradmc docs {run}` from the files of the run (config `{config_name}`). The quick and "
             "smoke configs use reduced sizes: their numbers are not the papers'.", ""]
    link = _linker(run, Path(page_dir) if page_dir is not None else run)
    lines += _missing_section(run, config_name)
    lines += _claims_section(claims, link)
    lines += _figures_section(run, config_name, link)
    lines += _stage_times_section(run)
    lines += _provenance_section(run, prov)
    return "\n".join(lines)


def write_results_page(run_dir: str | Path, out: str | Path | None = None) -> Path:
    """Write :func:`results_page` of ``run_dir`` to ``out`` (default ``<run_dir>/results.md``) atomically, its
    links relative to the folder of ``out``.

    Returns:
        The path written.

    Raises:
        gradmc.errors.InputError: as :func:`results_page`; or the page's path is an existing folder or its folder
            cannot be written (checked after the run, so a refused run creates no folder).
    """
    path = Path(out) if out is not None else Path(run_dir) / "results.md"
    text = results_page(run_dir, path.parent)
    check_output_file(path, "--out" if out is not None else "the results page")
    with atomic_path(path) as tmp:
        tmp.write_text(text)
    return path
