"""The DISCS comparison wrapper (gradmc.bench.peers), against a stand-in harness: it runs the harness from
where the user has it once per thread count, turns its JSON into tidy rows and a table, and says how to enable
it when the JAX python or the harness is missing."""

from __future__ import annotations

import json
import sys

import pytest

from gradmc.bench.peers import HOW_TO_ENABLE, find_harness, run_peers
from gradmc.cli import main
from gradmc.errors import InputError

FAKE_COMPARE = r'''
import json, os, sys
args = sys.argv[1:]
out, threads = args[args.index("--out") + 1], int(args[args.index("--threads") + 1])
if os.environ.get("FAKE_FAIL"):
    print("worker D died"); sys.exit(3)
assert os.environ["DISCS_PYTHON"] and os.environ["GRADMC_PYTHON"]
s = lambda v: {"median": sorted(v)[len(v) // 2], "min": min(v), "max": max(v), "runs": v}
row = {"case": "rbm", "sampler": "PAS-3", "D": s([100.0, 110.0, 90.0]), "S": s([120.0, 130.0, 125.0]),
       "G": s([300.0 * threads, 310.0 * threads, 290.0 * threads]),
       "ratio_G_over_D_pairs": s([3.0 * threads, 2.8 * threads, 3.2 * threads]),
       "ratio_G_over_S_pairs": s([2.5, 2.4, 2.3]), "acceptance_mean": {"D": 0.61, "S": 0.61, "G": 0.6},
       "load1_during": [0.2, 0.4]}
print("rbm PAS-3 measured")
json.dump({"settings": {"threads": threads}, "rows": [row]}, open(out, "w"))
'''


@pytest.fixture
def harness(tmp_path):
    folder = tmp_path / "harness"
    folder.mkdir()
    (folder / "compare.py").write_text(FAKE_COMPARE)
    return folder


def test_runs_each_thread_count_and_writes_ratios(tmp_path, harness):
    lines = []
    doc = run_peers(tmp_path / "out", discs_python=sys.executable, harness=harness, threads=(2, 1), rounds=3,
                    steps=10, progress=lines.append)
    assert [(r["threads"], r["case"], r["sampler"]) for r in doc["rows"]] == [(2, "rbm", "PAS-3"), (1, "rbm", "PAS-3")]
    two, one = doc["rows"]
    assert two["ratio_vs_loop"] == 6.0 and one["ratio_vs_loop"] == 3.0 and two["ratio_vs_loop_range"] == [5.6, 6.4]
    assert two["gradmc_steps_per_s"] == 600.0 and two["discs_loop_steps_per_s"] == 100.0
    saved = json.loads((tmp_path / "out" / "peers.json").read_text())
    assert saved["rows"] == doc["rows"] and set(saved["runs"]) == {"2", "1"}
    table = (tmp_path / "out" / "peers.md").read_text()
    row = "| 2 | RBM 784x500, 100 chains | PAS-3 | 100 [90, 110] | 125 [120, 130] | 600 [580, 620] | 6.00 [5.60, 6.40]"
    assert row in table
    assert any("rbm PAS-3 measured" in line for line in lines)  # the harness's lines are passed on


def test_harness_failure_is_reported(tmp_path, harness, monkeypatch):
    monkeypatch.setenv("FAKE_FAIL", "1")
    with pytest.raises(InputError, match=r"harness failed \(exit status 3\):\nworker D died"):
        run_peers(tmp_path, discs_python=sys.executable, harness=harness, threads=(2,), progress=None)
    assert not (tmp_path / "peers.json").exists()


def test_missing_pieces_say_how_to_enable(tmp_path, harness, monkeypatch, capsys):
    monkeypatch.delenv("DISCS_PYTHON", raising=False)
    monkeypatch.delenv("DISCS_HARNESS", raising=False)
    with pytest.raises(InputError, match="no JAX python given.*pip install jax"):
        run_peers(tmp_path, harness=harness, progress=None)
    with pytest.raises(InputError, match="does not exist"):
        run_peers(tmp_path, discs_python=tmp_path / "nope" / "python", harness=harness, progress=None)
    with pytest.raises(InputError, match="no DISCS comparison harness at .*compare.py missing"):
        find_harness(tmp_path)
    with pytest.raises(InputError, match="each be 1 or 2"):
        run_peers(tmp_path, discs_python=sys.executable, harness=harness, threads=(4,), progress=None)
    assert main(["bench", "--out", str(tmp_path), "--suite", "peers"]) == 2
    assert HOW_TO_ENABLE in capsys.readouterr().err
    monkeypatch.setenv("DISCS_HARNESS", str(harness))
    assert find_harness() == harness.resolve()
