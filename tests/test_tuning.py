"""gradmc.tuning: the malloc thresholds are applied once on glibc and can be turned off."""

from __future__ import annotations

import platform
import subprocess
import sys

import pytest


def _run(code: str, env_extra: dict | None = None) -> str:
    import os

    env = {**os.environ, **(env_extra or {})}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout


@pytest.mark.skipif(platform.system() != "Linux" or platform.libc_ver()[0] != "glibc", reason="glibc only")
def test_tune_allocator_applies_on_glibc_and_is_idempotent():
    out = _run("from gradmc.tuning import tune_allocator; print(tune_allocator(), tune_allocator())")
    assert out.split() == ["True", "True"]


def test_tune_allocator_opt_out():
    out = _run("from gradmc.tuning import tune_allocator; print(tune_allocator())", {"GRADMC_MALLOC_TUNING": "0"})
    assert out.split() == ["False"]
