"""Source digests follow transitive gradmc imports, and only content changes alter them."""

from __future__ import annotations

import shutil

import pytest

from gradmc.codedigest import (
    PACKAGE_ROOT,
    code_manifest,
    load_manifest,
    normalised_source,
    record_manifest,
    source_digest,
    stage_modules,
)


def _rel(paths):
    return {str(p.relative_to(PACKAGE_ROOT)) for p in paths}


def test_training_stage_does_not_depend_on_other_samplers():
    deps = _rel(stage_modules("gradmc.experiments.rbm_train"))
    assert {"training/cd.py", "samplers/discrete/block_gibbs.py", "targets/rbm.py"} <= deps
    assert "samplers/discrete/gwg.py" not in deps
    assert "samplers/discrete/gibbs.py" not in deps


def test_sampling_stage_depends_on_samplers_and_metrics():
    deps = _rel(stage_modules("gradmc.experiments.rbm_sampling"))
    assert {"samplers/discrete/gwg.py", "samplers/discrete/gibbs.py", "evaluation/mmd.py"} <= deps
    assert "training/cd.py" not in deps


def test_no_experiment_depends_on_the_claims_or_figures():
    """A claim's or figure's edit re-judges or redraws (seconds), never reruns an experiment."""
    from gradmc.registry import experiments

    for exp in experiments().values():
        deps = _rel(stage_modules(exp.module, "gradmc.experiments.standard", *exp.uses))
        assert not {d for d in deps if d.startswith(("claims/", "figures/", "plan/", "cli/"))}, exp.name


def test_digest_changes_with_content_not_mtime(tmp_path):
    root = tmp_path / "gradmc"
    shutil.copytree(PACKAGE_ROOT, root, ignore=shutil.ignore_patterns("__pycache__"))
    before = source_digest("gradmc.experiments.rbm_train", root=root)
    (root / "training" / "cd.py").touch()
    assert source_digest("gradmc.experiments.rbm_train", root=root) == before
    (root / "samplers" / "discrete" / "gwg.py").write_text("UNRELATED_EDIT = 1\n")
    assert source_digest("gradmc.experiments.rbm_train", root=root) == before
    with open(root / "training" / "cd.py", "a") as fh:
        fh.write("\nEDIT = 1\n")
    assert source_digest("gradmc.experiments.rbm_train", root=root) != before


def test_unknown_module_is_an_error():
    with pytest.raises(ValueError, match="not a module"):
        stage_modules("gradmc.no_such_module")


def _copy(tmp_path):
    root = tmp_path / "gradmc"
    shutil.copytree(PACKAGE_ROOT, root, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def test_comments_docstrings_and_layout_do_not_change_the_digest(tmp_path):
    root = _copy(tmp_path)
    path = root / "samplers" / "discrete" / "gwg.py"
    before = source_digest("gradmc.experiments.rbm_sampling", root=root)
    text = path.read_text()
    edits = [
        text + "\n# a comment\n",
        text.replace('"""', '"""Docstring edit. ', 1),  # the module docstring
        text.replace("\n\n\n", "\n\n\n\n"),  # blank lines
        text + '\n"""A bare string statement is a no-op."""\n',
    ]
    for edited in edits:
        assert edited != text
        path.write_text(edited)
        assert source_digest("gradmc.experiments.rbm_sampling", root=root) == before
    # a class or function docstring too: the first string of every body
    assert '    """' in text
    path.write_text(text.replace('    """', '    """Edited: ', 1))
    assert source_digest("gradmc.experiments.rbm_sampling", root=root) == before


@pytest.mark.parametrize("old,new", [
    (".div_(self.temperature)", ".div_(self.num_draws)"),  # a name
    ("value=-2.0", "value=-2.5"),  # a constant
    ("f_new - f_x + log_rev", "f_new - f_x - log_rev"),  # an operator
    ("    temperature: float = 2.0\n", "    temperature: float = 2.0\n    extra: int = 0\n"),  # a new field
])
def test_every_code_change_changes_the_digest(tmp_path, old, new):
    root = _copy(tmp_path)
    path = root / "samplers" / "discrete" / "gwg.py"
    text = path.read_text()
    assert text.count(old) == 1, f"gwg.py should hold {old!r} once"
    before = source_digest("gradmc.experiments.rbm_sampling", root=root)
    path.write_text(text.replace(old, new))
    assert source_digest("gradmc.experiments.rbm_sampling", root=root) != before


def test_normalised_source_keeps_what_python_distinguishes():
    same = [("x = 1  # c\n", "x=1\n"), ('def f():\n    """doc"""\n    return 1\n', "def f():\n  return 1\n"),
            ("f(a,\n  b)\n", "f(a, b)\n")]
    for a, b in same:
        assert normalised_source(a) == normalised_source(b)
    different = [("x = 1\n", "x = 1.0\n"), ("x = 1\n", "x = True\n"), ("x = 'a'\n", "x = b'a'\n"),
                 ("f(a, b)\n", "f(b, a)\n"), ("x = None\n", "x = ...\n"), ("s = 'doc'\n", "'doc'\n")]
    for a, b in different:
        assert normalised_source(a) != normalised_source(b), (a, b)


def test_opaque_modules_are_hashed_but_not_followed():
    full = _rel(stage_modules("gradmc.experiments.ising_sampling"))
    opaque = _rel(stage_modules("gradmc.experiments.ising_sampling", opaque=("gradmc.samplers.discrete.registry",)))
    assert "samplers/discrete/registry.py" in opaque
    assert {"samplers/discrete/gwg.py", "samplers/discrete/factorised.py", "samplers/discrete/pas.py"} <= full
    assert not {"samplers/discrete/gwg.py", "samplers/discrete/factorised.py", "samplers/discrete/pas.py"} & opaque


def test_manifest_records_round_trip_and_refuse_damage(tmp_path):
    manifest = code_manifest("gradmc.experiments.rbm_train")
    digest = record_manifest(tmp_path, manifest)
    assert digest == source_digest("gradmc.experiments.rbm_train") and digest.startswith("code:")
    assert load_manifest(tmp_path, digest) == manifest
    (tmp_path / f"{digest}.json").write_text('{"training/cd.py": "0000000000000000"}')
    assert load_manifest(tmp_path, digest) is None  # its content no longer gives its name
    assert load_manifest(tmp_path, "code:../../etc") is None
    (tmp_path / "blocked").write_text("a file where a folder should be")
    assert record_manifest(tmp_path / "blocked", manifest) is None
