"""environment.yml mirrors constraints.txt exactly; the CI entry runs the README's test command; CITATION.cff
and LICENSE match pyproject."""

from __future__ import annotations

import tomllib
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]


def _pins(lines) -> dict[str, str]:
    pins = {}
    for line in lines:
        line = line.strip()
        if line and not line.startswith(("#", "-")) and "==" in line:
            name, version = line.split("==", 1)
            pins[name.lower().replace("_", "-")] = version
    return pins


def test_environment_pins_equal_constraints():
    env = yaml.safe_load((REPO / "environment.yml").read_text())
    pip_section = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    constraints = _pins((REPO / "constraints.txt").read_text().splitlines())
    assert _pins(pip_section) == constraints
    assert "python=3.11" in env["dependencies"]
    assert constraints["torch"] == "2.13.0"


def test_ci_runs_make_test_and_readme_documents_it():
    ci = (REPO / ".ci" / "run").read_text()
    assert "make test" in ci and "set -e" in ci
    readme = (REPO / "README.md").read_text()
    assert "make test" in readme and "make reproduce" in readme


def test_citation_cff_cites_gradmc_and_both_papers_and_license_is_mit():
    cff = yaml.safe_load((REPO / "CITATION.cff").read_text(encoding="utf-8"))
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert cff["cff-version"] == "1.2.0" and cff["type"] == "software"
    assert str(cff["version"]) == project["version"] and cff["license"] == project["license"] == "MIT"
    assert cff["authors"] == [{"name": "the gradmc developers"}]
    refs = {ref["title"]: ref for ref in cff["references"]}
    gwg = refs["Oops I Took A Gradient: Scalable Sampling for Discrete Distributions"]
    kmc = refs["Gradient-free Hamiltonian Monte Carlo with Efficient Kernel Exponential Families"]
    gwg_authors, kmc_authors = ([a["family-names"] for a in ref["authors"]] for ref in (gwg, kmc))
    assert gwg_authors == ["Grathwohl", "Swersky", "Hashemi", "Duvenaud", "Maddison"]
    assert kmc_authors == ["Strathmann", "Sejdinovic", "Livingstone", "Szabó", "Gretton"]
    assert (gwg["year"], gwg["volume"], kmc["year"]) == (2021, 139, 2015)
    assert (REPO / "LICENSE").read_text().splitlines()[0] == "MIT License"
