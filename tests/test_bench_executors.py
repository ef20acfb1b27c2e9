"""The tasks-against-actors benchmark (``make bench``'s executors.json): every field present and consistent."""

from __future__ import annotations

import json

import pytest


@pytest.mark.slow
def test_run_executors_writes_consistent_timings(tmp_path, monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    from gradmc.bench.scaling import run_executors

    out = tmp_path / "executors.json"
    result = run_executors(out, workers=2, repeats=1, noop_shards=6, busy_shards=2, work_s=0.01, shared_shards=2,
                           shared_mib=1, progress=None)
    assert json.loads(out.read_text()) == result
    for sweep, shards in (("noop", 6), ("busy", 2), ("shared_input", 2)):
        for executor in ("tasks", "actors"):
            row = result["sweeps"][sweep][executor]
            assert len(row["wall_s"]) == 1 and row["median_s"] == row["wall_s"][0] > 0
            assert row["per_shard_ms"] == pytest.approx(1000 * row["median_s"] / shards)
        assert result["faster"][sweep] == min(("tasks", "actors"), key=lambda e: result["sweeps"][sweep][e]["median_s"])
    for executor in ("tasks", "actors"):
        assert 0 < result["startup_s"][executor] < result["sweeps"]["noop"][executor]["median_s"]
        assert result["marginal_ms_per_shard"][executor] > 0
    with pytest.raises(ValueError, match="must be >= 1"):
        run_executors(out, repeats=0, progress=None)
