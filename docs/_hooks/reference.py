"""mkdocs hook: the reference pages, generated at build time from the code, so none is edited by hand.

- ``experiments/<name>.md``: one page per experiment folder of ``pkg/gradmc/experiments/``: its registry entry
  (``META``, read by :mod:`gradmc.registry` without importing the module), its report captions (``*.rst``), the
  paper quotes its claims test (``QUOTES``, read as a literal) and its config section (``schema.yaml``);
- ``reference/config.md``: every config key, from ``workflow/schemas/config.schema.yaml`` and the folders'
  ``schema.yaml`` files (type, default, description);
- ``reference/cli.md``: the help of every ``gradmc`` subcommand, from the argparse parser;
- ``api/<module>.md``: one mkdocstrings page per module of :data:`API_MODULES`.

The pages exist only in the build (``File.generated``); the nav entries ``experiments/index.md`` and
``api/index.md`` of mkdocs.yml are expanded into a section listing them.
"""

from __future__ import annotations

import ast
import json
import os
import re
import sys
from pathlib import Path

import yaml
from mkdocs.structure.files import File

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "pkg"))  # document this checkout's code, whichever gradmc the venv installed

from gradmc.config import SCHEMA_PATH, schema_parts  # noqa: E402
from gradmc.registry import EXPERIMENTS_DIR, experiments  # noqa: E402

#: Modules with an API page: what a researcher calls from Python, then the extension points.
API_MODULES = (
    "gradmc.samplers.discrete.registry", "gradmc.samplers.base", "gradmc.samplers.adaptation",
    "gradmc.samplers.exactness", "gradmc.targets", "gradmc.evaluation.ess", "gradmc.evaluation.mmd",
    "gradmc.core.exact", "gradmc.core.streams", "gradmc.seeding", "gradmc.sampler_catalog", "gradmc.registry",
    "gradmc.config", "gradmc.results", "gradmc.results.page", "gradmc.claims.base", "gradmc.errors",
    "gradmc.samplers.discrete.gwg", "gradmc.samplers.discrete.factorised", "gradmc.samplers.discrete.pas",
    "gradmc.samplers.discrete.gibbs", "gradmc.samplers.discrete.hamming_ball", "gradmc.samplers.continuous.hmc",
    "gradmc.samplers.continuous.kmc", "gradmc.core.incremental",
)


def _literal(path: Path, name: str):
    """The module-level literal ``name = ...`` of ``path`` (None if absent or not a literal)."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            try:
                return ast.literal_eval(node.value)
            except ValueError:
                return None
    return None


def _escape(text: str) -> str:
    """``text`` with ``<`` and ``>`` outside code spans written as entities (a placeholder such as <data> would
    otherwise be read as an HTML tag and vanish); code spans keep them, as code shows its text literally."""
    parts = re.split(r"(`[^`]*`)", text)
    return "".join(part if part.startswith("`") else part.replace("<", "&lt;").replace(">", "&gt;")
                   for part in parts)


def _cell(value) -> str:
    return _escape(str(value)).replace("|", "\\|").replace("\n", " ")


def _summary(doc: str) -> str:
    """The first paragraph of a module docstring on one line (a sentence may span lines, so not the first line)."""
    return " ".join(doc.split("\n\n", 1)[0].split())


def _type(schema: dict) -> str:
    if "$ref" in schema:
        return schema["$ref"].rsplit("/", 1)[-1]
    if "enum" in schema:
        return " \\| ".join(f"`{v}`" for v in schema["enum"])
    if "oneOf" in schema or "anyOf" in schema:
        return " or ".join(_type(s) for s in schema.get("oneOf", schema.get("anyOf")))
    kind = schema.get("type", "")
    if kind == "array" and isinstance(schema.get("items"), dict):
        return f"array of {_type(schema['items'])}"
    return " or ".join(kind) if isinstance(kind, list) else str(kind)


def schema_rows(schema: dict, prefix: str = "") -> list[str]:
    """Markdown table rows (key, type, default, description) of every property under ``schema``, depth first."""
    rows = []
    for key, sub in schema.get("properties", {}).items():
        if not isinstance(sub, dict):
            continue
        dotted = f"{prefix}{key}"
        default = f"`{json.dumps(sub['default'])}`" if "default" in sub and sub["default"] != {} else ""
        rows.append(f"| `{dotted}` | {_type(sub)} | {_cell(default)} | {_cell(sub.get('description', ''))} |")
        rows += schema_rows(sub, f"{dotted}.")
    return rows


def schema_table(schema: dict, prefix: str = "") -> str:
    """The table of :func:`schema_rows` with its header, or a sentence when the schema has no properties."""
    rows = schema_rows(schema, prefix)
    if not rows:
        return "No keys of its own.\n"
    return "\n".join(["| key | type | default | description |", "|:--|:--|:--|:--|", *rows]) + "\n"


def full_schema() -> tuple[dict, dict[str, dict]]:
    """The main config schema, and each experiment folder's section schema by its key."""
    main = yaml.safe_load(SCHEMA_PATH.read_text())
    parts = {key: yaml.safe_load(path.read_text()) for key, path in schema_parts().items()}
    return main, parts


def _rst(text: str) -> str:
    text = text.replace('{{ snakemake.config["name"] }}', "`<config>`").replace("``", "`")
    return "\n\n".join(_escape(" ".join(line.strip() for line in block.splitlines()))
                       for block in text.split("\n\n") if block.strip())


def experiment_page(folder: Path, main: dict, parts: dict[str, dict]) -> tuple[str, str]:
    """(title, markdown) of the page of one experiment folder."""
    name = folder.name
    exp = experiments().get(name)
    doc = ast.get_docstring(ast.parse((folder / "__init__.py").read_text(encoding="utf-8"))) or ""
    title = _summary(doc) or (exp.title if exp else name)
    lines = [f"# `{name}`", "", f"**{_escape(title)}**", ""]
    if exp:
        lines += ["| registry field | value |", "|:--|:--|", f"| category | {exp.category or ''} |",
                  f"| figure | {f'`{exp.figure}`' if exp.figure else 'none (an input of another stage)'} |"]
        for field in ("extra_figures", "extra_tables", "config_keys", "uses"):
            if getattr(exp, field):
                lines.append(f"| {field} | " + ", ".join(f"`{v}`" for v in getattr(exp, field)) + " |")
        for key, rel in exp.inputs.items():
            lines.append(f"| input `{key}` | `results/<config>/{rel}` |")
        lines += [f"| output | `results/<config>/{exp.output}` |", f"| CPU only | {exp.cpu_only} |"]
        if exp.plan.get("unit"):
            lines.append(f"| plan unit | {_cell(exp.plan['unit'])} |")
        lines += ["", "Run it alone:", "", "```bash",
                  f"gradmc run {name} --config config/quick.yaml "
                  + "".join(f"--{k} results/quick/{v} " for k, v in exp.inputs.items())
                  + f"--out results/quick/{exp.output}"]
        if exp.figure:
            lines.append(f"gradmc figure {name} --metrics results/quick/{exp.output} "
                         f"--out results/quick/figures/{exp.figure} --table-out results/quick/tables/{exp.figure}")
        lines += ["```", ""]
    captions = sorted(folder.glob("*.rst"))
    if captions:
        lines += ["## Figures and captions", ""]
        for path in captions:
            stem = exp.figure if exp and path.stem == "caption" else path.stem
            lines += [f"### `{stem}`", "", _rst(path.read_text()), ""]
    quotes = _literal(folder / "claims.py", "QUOTES") if (folder / "claims.py").is_file() else None
    if isinstance(quotes, dict) and quotes:
        lines += ["## Claims tested", "", "The papers' words each claim tests (`QUOTES` in `claims.py`):", "",
                  "| claim | the paper says |", "|:--|:--|"]
        lines += [f"| `{key}` | {_cell(value)} |" for key, value in quotes.items()]
        lines.append("")
    section = parts.get(name) or main.get("properties", {}).get(name)
    if section:
        lines += ["## Configuration", "", f"The config section `{name}` ({_cell(section.get('description', ''))}); "
                  "a config that leaves it out runs at these defaults, the papers' settings.", "",
                  schema_table(section, f"{name}.")]
    return title, "\n".join(lines)


def config_page(main: dict, parts: dict[str, dict]) -> str:
    """The configuration reference: every top-level key, then the shared definitions."""
    lines = ["# Configuration reference", "", _cell(main.get("description", "")), "",
             "Generated from `workflow/schemas/config.schema.yaml` and each experiment folder's `schema.yaml`. "
             "A key left out takes its default; the [configuration guide](../configs.md) explains overlays and "
             "`extends:`.", ""]
    for key, sub in main.get("properties", {}).items():
        lines += [f"## `{key}`", "", f"Type: {_type(sub)}." + (f" {_cell(sub['description'])}" if "description" in sub
                                                               else ""), ""]
        if "properties" in sub:
            lines.append(schema_table(sub, f"{key}."))
    for key, sub in parts.items():
        page = f" ([experiment page](../experiments/{key}.md))"
        lines += [f"## `{key}`", "", _cell(sub.get("description", "")) + page, "", schema_table(sub, f"{key}.")]
    for key, sub in main.get("$defs", {}).items():
        lines += [f"## Definition `{key}`", "", f"Type: {_type(sub)}. {_cell(sub.get('description', ''))}", ""]
    return "\n".join(lines)


def cli_page() -> str:
    """The help text of ``gradmc`` and of every subcommand, depth first."""
    import argparse

    from gradmc.cli.parser import build_parser

    os.environ["COLUMNS"] = "110"  # argparse wraps at the terminal width: fix it so the page is the same anywhere
    lines = ["# Command-line reference", "", "Generated from the `gradmc` argument parser "
             "(`pkg/gradmc/cli/parser.py`); `gradmc <command> --help` prints the same.", ""]

    def walk(parser: argparse.ArgumentParser, level: int) -> None:
        lines.extend([f"{'#' * min(level, 6)} `{parser.prog}`", "", "```text", parser.format_help().rstrip(), "```",
                      ""])
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub in dict.fromkeys(action.choices.values()):
                    walk(sub, level + 1)

    walk(build_parser(), 2)
    return "\n".join(lines)


def _folders() -> list[Path]:
    """Experiment folders with a page: every folder with an ``__init__.py`` and a figure, schema or claims."""
    return [p.parent for p in sorted(EXPERIMENTS_DIR.glob("*/__init__.py"))
            if any((p.parent / f).exists() for f in ("schema.yaml", "claims.py", "figure.py"))]


def _pages() -> dict[str, tuple[str, str]]:
    """src_uri -> (nav title, markdown) of every generated page."""
    main, parts = full_schema()
    pages = {}
    index = ["# Experiments", "", "One page per experiment folder of `pkg/gradmc/experiments/`, generated from its "
             "`META`, captions, claims and `schema.yaml`. How to add one: [Extending gradmc](../extending.md).", "",
             "| experiment | what it reproduces |", "|:--|:--|"]
    for folder in _folders():
        title, text = experiment_page(folder, main, parts)
        pages[f"experiments/{folder.name}.md"] = (folder.name, text)
        index.append(f"| [`{folder.name}`]({folder.name}.md) | {_cell(title)} |")
    pages["experiments/index.md"] = ("Overview", "\n".join(index) + "\n")
    pages["reference/config.md"] = ("Configuration", config_page(main, parts))
    pages["reference/cli.md"] = ("Command line", cli_page())
    api = ["# API reference", "", "Generated from the docstrings (mkdocstrings).", ""]
    for module in API_MODULES:
        pages[f"api/{module}.md"] = (module, f"# `{module}`\n\n::: {module}\n")
        api.append(f"- [`{module}`]({module}.md)")
    pages["api/index.md"] = ("Overview", "\n".join(api) + "\n")
    return pages


_PAGES: dict[str, tuple[str, str]] = {}


def _expand(nav):
    """The nav with ``experiments/index.md`` and ``api/index.md`` expanded into sections of generated pages."""
    if isinstance(nav, list):
        return [_expand(item) for item in nav]
    if isinstance(nav, dict):
        return {key: _expand(value) for key, value in nav.items()}
    if nav in ("experiments/index.md", "api/index.md"):
        folder = nav.split("/")[0]
        return [nav] + [{title: uri} for uri, (title, _) in _PAGES.items()
                        if uri.startswith(f"{folder}/") and uri != nav]
    return nav


def on_config(config):
    """Generate the pages once per build and expand their nav sections."""
    _PAGES.clear()
    _PAGES.update(_pages())
    config["nav"] = _expand(config["nav"])
    return config


#: a Sphinx role before a code span (``:func:`x```), which markdown shows as text: the role is dropped
_ROLE = re.compile(r":(?:py:)?(?:func|class|mod|meth|attr|data|exc|obj|const):(?=<code)")


def on_page_content(html, page, config, files):
    """Drop the Sphinx roles of docstrings (``:func:`name``` reads as the code span ``name``)."""
    return _ROLE.sub("", html)


def on_files(files, config):
    """Add the generated pages to the build."""
    for uri, (_, text) in _PAGES.items():
        files.append(File.generated(config, uri, content=text))
    return files
