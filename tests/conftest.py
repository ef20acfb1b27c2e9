"""Shared fixtures: the real data (our copy in ../shared/data, else fetched, else skipped; under CI=true a
missing copy FAILS, so CI keeps proving the loaders on real data) and an isolated download env."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from _localdata import SHARED_DATA

from gradmc.data import download

#: set in a pytest-xdist worker (``make test`` runs the suite in ``-n 2`` workers): each gets one torch / OpenMP thread,
#: since OpenMP's spinning threads of two workers sharing 2 cores run 10-40x slower than one thread each.
XDIST_WORKER = os.environ.get("PYTEST_XDIST_WORKER")


def pytest_configure(config):
    if XDIST_WORKER:
        os.environ["OMP_NUM_THREADS"] = "1"  # the gradmc subprocesses and Ray workers a test starts inherit it


@pytest.fixture(autouse=True)
def _one_thread_per_xdist_worker():
    """In an xdist worker, one torch thread for every test (some test modules set their own at import)."""
    if XDIST_WORKER:
        import torch

        torch.set_num_threads(1)
    yield


def _missing(reason: str) -> None:
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"{reason} (CI=true: real data must be present)")
    pytest.skip(reason)


def _have_shared() -> bool:
    return (SHARED_DATA / "MANIFEST.tsv").is_file()


def _shared_copy() -> Path:
    if not _have_shared():
        _missing(f"real test data not present at {SHARED_DATA} (MANIFEST.tsv): this test reads that copy itself")
    return SHARED_DATA


@pytest.fixture(scope="session")
def shared() -> Path:
    """Our copy of the real data sets, ``<repo>/../shared/data`` (with MANIFEST.tsv and our ``.npz``
    conversions), for tests that check that copy itself. Absent: skipped, or FAILED under CI=true."""
    return _shared_copy()


@pytest.fixture(scope="session")
def shared_copy() -> Path:
    """``shared`` under a name that modules overriding ``shared`` with ``real_data`` still reach."""
    return _shared_copy()


@pytest.fixture(scope="session")
def real_data() -> Callable[..., Path]:
    """``real_data(*datasets) -> folder`` holding the canonical files of ``gradmc.data.catalog`` data sets:
    ``../shared/data`` when present; else fetched through gradmc's own fetch layer into the data folder
    (``$GRADMC_DATA_DIR`` or the user cache); else skipped with the reason (FAILED under CI=true)."""

    def get(*datasets: str) -> Path:
        if _have_shared():
            return SHARED_DATA
        from gradmc.data import fetch_cmd, registry

        folder = registry.data_dir()
        try:
            fetch_cmd.fetch_files(list(datasets), folder=folder, progress=lambda _msg: None)
        except (OSError, ValueError) as err:
            _missing(f"real data {datasets} is not at {SHARED_DATA} and could not be fetched into {folder}: {err}")
        return folder

    return get


@pytest.fixture
def download_env(monkeypatch):
    """No proxies (downloads go to 127.0.0.1 only) and no data-folder / mirror overrides."""
    for var in ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NO_PROXY", "*")
    monkeypatch.delenv("GRADMC_DATA_DIR", raising=False)
    monkeypatch.delenv(download.BASE_URL_ENV, raising=False)


@pytest.fixture(scope="module")
def ray_session():
    """A private 2-CPU Ray instance for the module (not a cluster: RAY_ADDRESS removed; the default shard
    executor: GRADMC_SHARD_EXECUTOR removed)."""
    from gradmc.distributed import ensure_ray, shutdown_ray

    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("RAY_ADDRESS", raising=False)
        mp.delenv("GRADMC_SHARD_EXECUTOR", raising=False)
        started = ensure_ray(num_cpus=2)
        yield
        if started:
            shutdown_ray()
