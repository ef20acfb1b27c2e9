"""Shared fixtures: the real data folder (a missing one FAILS, never skips) and an isolated download env."""

from __future__ import annotations

from pathlib import Path

import pytest
from _localdata import SHARED_DATA

from gradmc.data import download


@pytest.fixture(scope="session")
def shared() -> Path:
    if not (SHARED_DATA / "MANIFEST.tsv").is_file():
        pytest.fail(f"real test data missing: expected {SHARED_DATA}/MANIFEST.tsv (<repo>/../shared/data)")
    return SHARED_DATA


@pytest.fixture
def download_env(monkeypatch):
    """No proxies (downloads go to 127.0.0.1 only) and no data-folder / mirror overrides."""
    for var in ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NO_PROXY", "*")
    monkeypatch.delenv("GRADMC_DATA_DIR", raising=False)
    monkeypatch.delenv(download.BASE_URL_ENV, raising=False)
