"""environment.yml mirrors constraints.txt exactly; the CI entry runs the README's test command."""

from __future__ import annotations

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
