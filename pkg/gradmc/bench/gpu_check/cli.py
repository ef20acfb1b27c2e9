"""Command line of ``python -m gradmc.bench.gpu_check`` (``make gpu-check``): the refusal without CUDA, the
options, the two smoke DAGs and their comparison, the GWG timings, the table and the report files."""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
import warnings
from datetime import UTC, datetime
from pathlib import Path

from gradmc.bench.gpu_check._shared import _DEVICES, REPO, _plain
from gradmc.bench.gpu_check.compare import FAMILY_ALPHA, _summarise, compare_folders
from gradmc.bench.gpu_check.dags import DagRun, _prefetch, derived_config, run_dags
from gradmc.bench.gpu_check.gwg import bench_gwg_rbm
from gradmc.bench.gpu_check.report import _json_safe, format_details, format_table

__all__ = ["cuda_problem", "main"]


def cuda_problem() -> str | None:
    """None when torch sees a CUDA device; else the one-line reason naming what is missing and what to do."""
    import torch

    with warnings.catch_warnings():  # a CUDA build without a driver warns on stderr; the line below says it
        warnings.simplefilter("ignore")
        if torch.cuda.is_available():
            return None
        count = torch.cuda.device_count()
    build = torch.version.cuda
    if build is None:
        why = (f"torch {torch.__version__} is a CPU-only build (torch.version.cuda is None); on a machine with an "
               "NVIDIA GPU run `rm -rf .venv && make TORCH=cu126 venv` (or the CUDA version of its driver), "
               "then `make gpu-check`")
    else:
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        why = (f"torch {torch.__version__} is built for CUDA {build} but sees no GPU (torch.cuda.device_count() "
               f"= {count}, CUDA_VISIBLE_DEVICES={visible!r}); run it on a machine whose NVIDIA driver supports "
               f"CUDA {build} (`nvidia-smi` lists the GPU)")
    return f"gpu-check: CUDA is not available: torch.cuda.is_available() is False; {why}"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m gradmc.bench.gpu_check",
        description="CUDA check: the smoke DAG on CUDA vs CPU (same statistics within Monte Carlo error) and GWG "
                    "steps/s on the RBM 784x500; prints one markdown table. Needs a CUDA build of torch and a GPU.")
    parser.add_argument("--out", default="results/gpu-check",
                        help="folder under results/ for the two DAGs' results, gpu_check.md and .json "
                             "(default results/gpu-check)")
    parser.add_argument("--skip-smoke", action="store_true",
                        help="only the GWG timings: no smoke DAGs, no comparison")
    parser.add_argument("--chains", type=int, nargs="+", default=[100, 10_000],
                        help="chain counts of the CUDA GWG timings (default 100 10000)")
    parser.add_argument("--cpu-chains", type=int, default=100, help="chains of the CPU reference timing (100)")
    parser.add_argument("--threads", type=int, default=2, help="torch CPU threads of the CPU timing (2, as make bench)")
    parser.add_argument("--cores", type=int, default=os.cpu_count() or 2,
                        help="cores for the two DAGs together, split between them (default: all)")
    parser.add_argument("--gpus-per-shard", type=float, default=0.25,
                        help="GPU share each shard of the CUDA DAG requests (default 0.25)")
    parser.add_argument("--time-limit", type=float, default=300.0,
                        help="seconds for the whole check (default 300); a DAG still running is stopped in time "
                             "to leave the timings 45 s")
    return parser


def _results_name(out: Path, device: str, repo: Path) -> str:
    """The config name whose results folder (``results/<name>``) is ``out/<device>``; ``out`` lies under
    ``results/`` (checked by :func:`main`)."""
    return (out.resolve() / device).relative_to((repo / "results").resolve()).as_posix()


def _smoke(args, out: Path, deadline: float, repo: Path) -> dict:
    """Run both smoke DAGs and compare them; the report's ``smoke`` entry."""
    import yaml

    from gradmc.atomic import atomic_path
    from gradmc.config import read_config
    from gradmc.errors import UserError

    base = read_config(repo / "config" / "smoke.yaml")
    per_dag = max(args.cores // 2, 1)
    runs = []
    for dev in _DEVICES:
        config = derived_config(base, name=_results_name(out, dev, repo), device=dev,
                                gpus_per_shard=args.gpus_per_shard)
        path = out / "config" / f"{dev}.yaml"
        text = "# written by gradmc.bench.gpu_check: config/smoke.yaml with another name and device\n" + \
            yaml.safe_dump(config, sort_keys=False)
        if not path.exists() or path.read_text() != text:
            with atomic_path(path) as tmp:
                tmp.write_text(text)
        runs.append(DagRun(dev, path, out / dev, out / "logs" / f"snakemake_{dev}.log",
                           per_dag if dev == "cpu" else max(args.cores - per_dag, 1)))
    entry = {"skipped": False, "folder": _rel(out, repo), "runs": {}, "comparison": None}
    print(f"[gpu-check] smoke DAG on cpu and cuda at once ({runs[0].cores} + {runs[1].cores} cores); logs in "
          f"{_rel(out / 'logs', repo)}", flush=True)
    ok, message = _prefetch(runs[0].config_path, out / "logs" / "data_fetch.log", deadline=deadline, repo=repo)
    if not ok:
        entry["prefetch_error"] = message
        return entry
    run_dags(runs, deadline=deadline, repo=repo)
    for run in runs:
        entry["runs"][run.device] = {"returncode": run.returncode, "timed_out": run.timed_out,
                                     "seconds": run.seconds, "log": _rel(run.log_path, repo),
                                     "config": _rel(run.config_path, repo), "results": _rel(run.results, repo)}
        if not run.ok:
            tail = run.log_path.read_text(errors="replace").strip().splitlines()[-15:]
            print(f"[gpu-check] the {run.device} DAG {'timed out' if run.timed_out else 'failed'}; "
                  f"last lines of {_rel(run.log_path, repo)}:", *tail, sep="\n", file=sys.stderr, flush=True)
    if all(run.ok for run in runs):
        try:
            frame = compare_folders(out / "cpu", out / "cuda")
        except UserError as err:  # a corrupt or foreign Parquet file: named, no traceback
            entry["comparison"] = {"m": 0, "family_alpha": FAMILY_ALPHA, "files": {}, "rows": [], "passed": False,
                                   "error": str(err)}
            return entry
        rows = [] if frame.empty else [{k: _plain(v) for k, v in r.items()} for r in frame.to_dict("records")]
        entry["comparison"] = {"m": int(frame.attrs.get("m", 0)), "family_alpha": FAMILY_ALPHA,
                               "files": _summarise(frame), "rows": rows,
                               "passed": bool(rows) and all(r["passed"] for r in rows)}
    return entry


def _rel(path: Path, repo: Path) -> str:
    try:
        return path.resolve().relative_to(repo.resolve()).as_posix()
    except ValueError:
        return str(path)


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m gradmc.bench.gpu_check`` (``make gpu-check``); returns the exit status: 0 all
    passed, 1 something failed (DAG, comparison, timing, time bound), 2 refused (no CUDA; one line on stderr)."""
    args = _parser().parse_args(argv)
    problem = cuda_problem()
    if problem is not None:
        print(problem, file=sys.stderr, flush=True)
        return 2
    import torch

    from gradmc import __version__
    from gradmc.atomic import atomic_path

    start = time.monotonic()
    deadline = start + args.time_limit
    repo = REPO
    out = Path(args.out)
    out = out if out.is_absolute() else repo / out
    if not out.resolve().is_relative_to((repo / "results").resolve()) or out.resolve() == (repo / "results").resolve():
        print(f"gpu-check: --out {args.out} must be a folder under {repo / 'results'} (the Snakefile writes "
              "results/<config name>/)", file=sys.stderr, flush=True)
        return 2
    report = {"created_utc": datetime.now(UTC).isoformat(timespec="seconds"), "gradmc_version": __version__,
              "torch": torch.__version__, "torch_cuda": torch.version.cuda, "gpu": torch.cuda.get_device_name(0),
              "host_cpu": platform.processor() or platform.machine(), "cpu_count": os.cpu_count(),
              "time_limit_s": args.time_limit, "family_alpha": FAMILY_ALPHA}
    if args.skip_smoke:
        report["smoke"] = {"skipped": True, "reason": "skipped (--skip-smoke)"}
    else:
        try:
            report["smoke"] = _smoke(args, out, deadline - 45.0, repo)
        except KeyboardInterrupt:
            print("gpu-check: interrupted; the smoke DAGs were stopped (rerun to finish them)", file=sys.stderr,
                  flush=True)
            return 130
    report["bench"], report["bench_errors"] = [], []
    for device, chains, threads in [("cpu", args.cpu_chains, args.threads)] + [("cuda", c, None) for c in args.chains]:
        print(f"[gpu-check] GWG on the RBM 784x500: {device}, {chains} chains", flush=True)
        try:
            report["bench"].append(bench_gwg_rbm(device, chains, threads=threads))
        except torch.cuda.OutOfMemoryError as err:
            report["bench_errors"].append(f"{device}, {chains} chains: out of memory ({str(err).splitlines()[0]})")
    report["elapsed_s"] = time.monotonic() - start
    smoke = report["smoke"]
    smoke_ok = smoke.get("skipped") or (
        all(run["returncode"] == 0 and not run["timed_out"] for run in smoke["runs"].values())
        and len(smoke["runs"]) == 2 and smoke["comparison"] is not None and smoke["comparison"]["passed"])
    report["passed"] = bool(smoke_ok and not report["bench_errors"] and report["elapsed_s"] <= args.time_limit)
    table = format_table(report)
    print(table, end="", flush=True)
    details = format_details(report)
    md = f"# gpu-check ({report['created_utc']})\n\n{table}"
    if details:
        md += f"\n## Every comparison (mean over chains ± its standard error)\n\n{details}"
    with atomic_path(out / "gpu_check.md") as tmp:
        tmp.write_text(md)
    with atomic_path(out / "gpu_check.json") as tmp:
        tmp.write_text(json.dumps(_json_safe(report), indent=2, allow_nan=False) + "\n")
    print(f"[gpu-check] written {_rel(out / 'gpu_check.md', repo)} (every comparison) and gpu_check.json", flush=True)
    return 0 if report["passed"] else 1
