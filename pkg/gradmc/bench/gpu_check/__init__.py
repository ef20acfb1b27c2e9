"""``make gpu-check``: the smoke DAG on CUDA against the same DAG on the CPU, and GWG steps/s on the GPU.

What it does, in at most ``--time-limit`` seconds (default 300) on a one-GPU machine:

1. Writes two copies of ``config/smoke.yaml`` that differ only in ``device`` (and ``gpus_per_shard``) and in
   ``name``, ``gpu-check/cpu`` and ``gpu-check/cuda``, so the Snakefile writes them under
   ``results/gpu-check/cpu/`` and ``results/gpu-check/cuda/`` (``results/smoke/`` is never touched; the
   Snakefile refuses ``--config KEY=VALUE`` overrides, so a config file is the way to change the device).
   Both DAGs run at the same time, each on half of the cores: same shards, same seeds.
2. Compares the two result folders (:func:`compare_folders`): every metric recorded per chain (``chain >= 0``)
   by at least MIN_CHAINS = 4 chains of one shard is a statistic of independent replicates, so its mean over
   the chains has a standard error. CUDA draws other random numbers than the CPU, so the values differ; a correct
   sampler gives the same distribution on both devices. Each (file, shard, step, metric) is one two-sided
   two-sample t test, |mean_cpu - mean_cuda| <= t_crit * sqrt(se_cpu^2 + se_cuda^2) (the pooled form, equal
   to this for equal chain counts), where t_crit is the Student-t quantile with n_cpu + n_cuda - 2 degrees
   of freedom at level FAMILY_ALPHA / m (Bonferroni over the m comparisons of the run; family-wise
   false-alarm rate FAMILY_ALPHA = 0.01). With many chains t_crit is the Bonferroni z (3.8 for m = 30);
   the smoke config's 4 and 8 chains per shard give 7.3 and 4.7.
   Timing metrics (``*per_second*``, ``*time*``) are left out: they are meant to differ.
3. Times GWG on the RBM of ``make bench`` (784 x 500, W ~ N(0, 0.1^2), zero biases) with
   :func:`gradmc.evaluation.timing.time_sampler` (which synchronises CUDA): on CUDA at 100 and 10,000 chains, on
   the CPU (2 threads, as ``make bench``) at 100 chains.
4. Prints one markdown table (:func:`format_table`) and writes it with the per-comparison detail to
   ``<out>/gpu_check.md`` and everything to ``<out>/gpu_check.json``.

Exit status: 0 all passed; 1 a DAG failed, a comparison failed or the time limit was exceeded; 2 refused
(no CUDA: one line on stderr saying what is missing and what to do, see :func:`cuda_problem`).
"""

from __future__ import annotations

from gradmc.bench.gpu_check._shared import REPO
from gradmc.bench.gpu_check._shared import _plain as _plain  # private, re-exported for the tests
from gradmc.bench.gpu_check.cli import cuda_problem, main
from gradmc.bench.gpu_check.compare import (
    DEGENERATE_TOLERANCE,
    FAMILY_ALPHA,
    MIN_CHAINS,
    chain_statistics,
    compare_folders,
    compare_frames,
    load_results,
)
from gradmc.bench.gpu_check.compare import _summarise as _summarise  # private, re-exported for the tests
from gradmc.bench.gpu_check.dags import DagRun, derived_config, run_dags
from gradmc.bench.gpu_check.gwg import bench_gwg_rbm
from gradmc.bench.gpu_check.report import _json_safe as _json_safe  # private, re-exported for the tests
from gradmc.bench.gpu_check.report import format_details, format_table

__all__ = ["FAMILY_ALPHA", "DEGENERATE_TOLERANCE", "MIN_CHAINS", "REPO", "DagRun", "cuda_problem", "derived_config",
           "chain_statistics", "compare_frames", "load_results", "compare_folders", "run_dags", "bench_gwg_rbm",
           "format_table", "format_details", "main"]
