"""``make gpu-check``: the smoke DAG on CUDA against the same DAG on the CPU, and GWG steps/s on the GPU.

In at most ``--time-limit`` seconds: both DAGs run at once from copies of ``config/smoke.yaml`` that differ
only in name and device (:mod:`.cli`); every per-chain statistic must have the same mean on both devices
within Monte Carlo error (a two-sample t test per statistic, Bonferroni over the run: :mod:`.compare`);
GWG is timed on the ``make bench`` RBM; one markdown table is printed and written with the JSON
(:mod:`.report`). docs/scale-out.md ("Checking a GPU machine") has the details. Exit status: 0 all passed; 1 a
DAG, a comparison or the time limit failed; 2 refused (no CUDA, see :func:`cuda_problem`).
"""

from __future__ import annotations

from gradmc.bench.gpu_check.cli import REPO, DagRun, bench_gwg_rbm, cuda_problem, derived_config, main, run_dags
from gradmc.bench.gpu_check.compare import (
    DEGENERATE_TOLERANCE,
    FAMILY_ALPHA,
    MIN_CHAINS,
    chain_statistics,
    compare_folders,
    compare_frames,
    load_results,
)
from gradmc.bench.gpu_check.compare import _plain as _plain  # private, re-exported for the tests
from gradmc.bench.gpu_check.compare import _summarise as _summarise  # private, re-exported for the tests
from gradmc.bench.gpu_check.report import _json_safe as _json_safe  # private, re-exported for the tests
from gradmc.bench.gpu_check.report import format_details, format_table

__all__ = ["FAMILY_ALPHA", "DEGENERATE_TOLERANCE", "MIN_CHAINS", "REPO", "DagRun", "cuda_problem", "derived_config",
           "chain_statistics", "compare_frames", "load_results", "compare_folders", "run_dags", "bench_gwg_rbm",
           "format_table", "format_details", "main"]
