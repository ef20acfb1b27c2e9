"""Source digests follow transitive gradmc imports, and only content changes alter them."""

from __future__ import annotations

import shutil

import pytest

from gradmc.codedigest import PACKAGE_ROOT, source_digest, stage_modules


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


def test_digest_changes_with_content_not_mtime(tmp_path):
    root = tmp_path / "gradmc"
    shutil.copytree(PACKAGE_ROOT, root, ignore=shutil.ignore_patterns("__pycache__"))
    before = source_digest("gradmc.experiments.rbm_train", root=root)
    (root / "training" / "cd.py").touch()
    assert source_digest("gradmc.experiments.rbm_train", root=root) == before
    (root / "samplers" / "discrete" / "gwg.py").write_text("# unrelated edit\n")
    assert source_digest("gradmc.experiments.rbm_train", root=root) == before
    with open(root / "training" / "cd.py", "a") as fh:
        fh.write("\n# edit\n")
    assert source_digest("gradmc.experiments.rbm_train", root=root) != before


def test_unknown_module_is_an_error():
    with pytest.raises(ValueError, match="not a module"):
        stage_modules("gradmc.no_such_module")
