"""Side by side with Google's DISCS (``gradmc bench --suite peers``, ``make bench-peers DISCS_PYTHON=...``).

DISCS (Goshvadi et al. 2023) is the JAX benchmark suite of these samplers. gradmc never ships or copies its
code: this module runs a comparison harness from where the user has it (``--discs-harness``, else
``$DISCS_HARNESS``, else ``../shared/peers/discs`` beside the project), with DISCS in the user's JAX venv
(``--discs-python``, else ``$DISCS_PYTHON``). The harness (its ``compare.py``) checks both libraries compute
the same log p, then times DISCS's per-step jit loop ("loop"), DISCS's steps fused in one jitted loop ("scan")
and gradmc's ``make_sampler`` / ``step`` in alternated rounds, for GWG, DMALA, PAS-3 and systematic Gibbs on an
RBM 784x500 (100 chains) and a 40x40 lattice Ising (32 chains).

This module runs it once per thread count and writes ``peers.json`` (the harness's own results per thread
count, plus a tidy ``rows`` list) and ``peers.md`` (the table: medians [min, max] steps/s and the median of
the per-round ratios gradmc / DISCS). Run it on an idle machine: the harness pins the workers to the first
1 or 2 CPUs, and the ratios are only meaningful within one run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from gradmc.atomic import atomic_path
from gradmc.errors import InputError

__all__ = ["HOW_TO_ENABLE", "find_harness", "resolve_discs_python", "run_peers", "peers_table"]

HOW_TO_ENABLE = (
    "the DISCS comparison needs a JAX venv with DISCS's dependencies: python3.11 -m venv <dir> && "
    "<dir>/bin/pip install jax jaxlib flax ml_collections pyyaml numpy; then make bench-peers "
    "DISCS_PYTHON=<dir>/bin/python (or gradmc bench --suite peers --discs-python <dir>/bin/python), with the "
    "harness folder (compare.py, worker_discs.py, discs_src/) at ../shared/peers/discs or given by "
    "DISCS_HARNESS=<folder>")
_CASES = {"rbm": "RBM 784x500, 100 chains", "ising": "Ising 40x40 periodic, 32 chains",
          "ising_open": "Ising 40x40 open (DISCS's model), 32 chains"}


def find_harness(harness: str | Path | None = None) -> Path:
    """The harness folder: ``harness``, else ``$DISCS_HARNESS``, else ``../shared/peers/discs`` (from the
    current folder, the project root under make).

    Raises:
        InputError: the folder has no ``compare.py`` (the message says how to enable the comparison).
    """
    folder = Path(harness or os.environ.get("DISCS_HARNESS") or Path("..") / "shared" / "peers" / "discs")
    if not (folder / "compare.py").is_file():
        raise InputError(f"no DISCS comparison harness at {folder} (compare.py missing); {HOW_TO_ENABLE}")
    return folder.resolve()


def resolve_discs_python(discs_python: str | Path | None) -> Path:
    """The JAX venv's python: ``discs_python``, else ``$DISCS_PYTHON``.

    Raises:
        InputError: neither given, or the path does not exist (the message says how to enable it).
    """
    value = discs_python or os.environ.get("DISCS_PYTHON")
    if not value:
        raise InputError(f"no JAX python given; {HOW_TO_ENABLE}")
    path = Path(value).expanduser()
    if not path.exists():
        raise InputError(f"DISCS python {path} does not exist; {HOW_TO_ENABLE}")
    return path


def _tidy(result: dict, threads: int) -> list[dict]:
    rows = []
    for row in result["rows"]:
        rows.append({"threads": threads, "case": row["case"], "sampler": row["sampler"],
                     **{f"{who}_steps_per_s": row[key]["median"] for who, key in
                        (("discs_loop", "D"), ("discs_scan", "S"), ("gradmc", "G"))},
                     **{f"{who}_runs": row[key]["runs"] for who, key in
                        (("discs_loop", "D"), ("discs_scan", "S"), ("gradmc", "G"))},
                     "ratio_vs_loop": row["ratio_G_over_D_pairs"]["median"],
                     "ratio_vs_loop_range": [row["ratio_G_over_D_pairs"]["min"], row["ratio_G_over_D_pairs"]["max"]],
                     "ratio_vs_scan": row["ratio_G_over_S_pairs"]["median"],
                     "acceptance_discs": row["acceptance_mean"]["D"], "acceptance_gradmc": row["acceptance_mean"]["G"],
                     "load1_during": row["load1_during"]})
    return rows


def peers_table(rows: list[dict]) -> str:
    """Markdown table of :func:`run_peers`'s tidy rows: steps/s medians [min, max] and ratios."""
    def cell(runs):
        return f"{sorted(runs)[len(runs) // 2]:.0f} [{min(runs):.0f}, {max(runs):.0f}]"

    lines = ["| threads | case | sampler | DISCS loop | DISCS scan | gradmc | gradmc / DISCS loop [range] "
             "| gradmc / DISCS scan | acceptance DISCS / gradmc | load1 |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lo, hi = r["ratio_vs_loop_range"]
        lines.append(f"| {r['threads']} | {_CASES.get(r['case'], r['case'])} | {r['sampler']} | "
                     f"{cell(r['discs_loop_runs'])} | {cell(r['discs_scan_runs'])} | {cell(r['gradmc_runs'])} | "
                     f"{r['ratio_vs_loop']:.2f} [{lo:.2f}, {hi:.2f}] | {r['ratio_vs_scan']:.2f} | "
                     f"{r['acceptance_discs']:.2f} / {r['acceptance_gradmc']:.2f} | "
                     f"{min(r['load1_during']):.1f}-{max(r['load1_during']):.1f} |")
    return "\n".join(lines) + "\n"


def run_peers(out_dir: str | Path, *, discs_python: str | Path | None = None, harness: str | Path | None = None,
              threads: tuple[int, ...] = (2, 1), rounds: int = 5, steps: int = 300, only: str | None = None,
              progress: Callable[[str], None] | None = print) -> dict:
    """Run the DISCS harness once per thread count; write ``out_dir/peers.json`` and ``out_dir/peers.md``.

    Args:
        out_dir: output folder (``results/bench``).
        discs_python: the JAX venv's python (default ``$DISCS_PYTHON``); harness: see :func:`find_harness`.
        threads: thread counts to run (each 1 or 2: the harness pins the workers to that many CPUs).
        rounds, steps: alternated rounds, steps per timed run (the harness's defaults 5 and 300).
        only: the harness's ``--only`` (e.g. ``"rbm:PAS-3,ising:GWG"``); None: every case.

    Returns:
        {"created_utc", "harness", "threads", "rows" (tidy, one per thread count x case x sampler),
        "runs": {threads: the harness's JSON}}.

    Raises:
        InputError: no JAX python or harness (the message says how to enable it), a thread count not 1 or 2,
            or the harness failed (its exit status and last output lines).
    """
    python, folder = resolve_discs_python(discs_python), find_harness(harness)
    if not threads or any(t not in (1, 2) for t in threads):
        raise InputError(f"peers threads must each be 1 or 2, got {threads}")
    say = progress or (lambda line: None)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "DISCS_PYTHON": str(python), "GRADMC_PYTHON": sys.executable}
    runs, rows = {}, []
    for t in threads:
        with tempfile.TemporaryDirectory(prefix="gradmc_peers_") as tmp:
            raw = Path(tmp) / "compare.json"
            argv = [sys.executable, str(folder / "compare.py"), "--out", str(raw), "--threads", str(t),
                    "--rounds", str(rounds), "--steps", str(steps)] + (["--only", only] if only else [])
            say(f"[bench peers] {t} thread(s): {' '.join(argv[1:])}")
            lines = []
            with subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as proc:
                for line in proc.stdout:  # streamed: one line per measured case
                    lines.append(line.rstrip())
                    say(f"[bench peers]   {lines[-1]}")
            if proc.returncode or not raw.is_file():
                tail = "\n".join(lines[-15:])
                raise InputError(f"the DISCS harness failed (exit status {proc.returncode}):\n{tail}")
            runs[t] = json.loads(raw.read_text())
        rows += _tidy(runs[t], t)
    doc = {"created_utc": datetime.now(UTC).isoformat(timespec="seconds"), "harness": str(folder),
           "discs_python": str(python), "threads": list(threads), "rows": rows, "runs": runs}
    with atomic_path(out_dir / "peers.json") as tmp:
        tmp.write_text(json.dumps(doc, indent=1) + "\n")
    with atomic_path(out_dir / "peers.md") as tmp:
        tmp.write_text(f"# gradmc against DISCS ({doc['created_utc']})\n\n{peers_table(rows)}")
    say(f"[bench peers] wrote {out_dir / 'peers.json'} and {out_dir / 'peers.md'}")
    return doc
