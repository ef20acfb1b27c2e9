"""Command line of ``python -m gradmc.bench.gpu_check`` (``make gpu-check``): the refusal without CUDA, the
two smoke DAGs (one config copy per device, run at once under a deadline) and their comparison, the GWG
timings, and the report files."""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import subprocess
import sys
import time
import warnings
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from gradmc.bench.gpu_check.compare import _DEVICES, FAMILY_ALPHA, _plain, _summarise, compare_folders
from gradmc.bench.gpu_check.report import _json_safe, format_details, format_table

__all__ = ["REPO", "cuda_problem", "derived_config", "DagRun", "run_dags", "bench_gwg_rbm", "main"]

#: the repository root (pkg/gradmc/bench/gpu_check/cli.py is four folders below it)
REPO = Path(__file__).resolve().parents[4]


def derived_config(base: dict, *, name: str, device: str, gpus_per_shard: float = 0.25) -> dict:
    """A copy of the config ``base`` with ``name`` (its results folder is ``results/<name>``) and ``device``;
    ``gpus_per_shard`` is set for cuda and dropped for cpu. Nothing else changes, so both DAGs run the same
    shards with the same seeds."""
    if device not in _DEVICES:
        raise ValueError(f"device must be one of {_DEVICES}, got {device!r}")
    config = {key: value for key, value in base.items() if key != "gpus_per_shard"} | {"name": name, "device": device}
    if device == "cuda":
        config["gpus_per_shard"] = float(gpus_per_shard)
    return config


@dataclass
class DagRun:
    """One Snakemake run of the smoke DAG: its config file, log, cores, and (after :func:`run_dags`) its
    exit status (None: killed at the deadline) and wall time."""

    device: str
    config_path: Path
    results: Path
    log_path: Path
    cores: int
    returncode: int | None = None
    seconds: float = 0.0
    timed_out: bool = False
    command: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """The DAG finished with status 0 within the deadline."""
        return self.returncode == 0 and not self.timed_out


def run_dags(runs: list[DagRun], *, deadline: float, repo: Path = REPO, progress=print,
             every: float = 20.0) -> list[DagRun]:
    """Run the Snakemake DAGs of ``runs`` at the same time (output to each run's log), from ``repo``, printing
    their progress ("12 of 35 steps") through ``progress`` every ``every`` seconds. A run still going at
    ``deadline`` (a ``time.monotonic()`` value) is stopped (its process group gets SIGTERM, then SIGKILL) and
    marked ``timed_out``; so is every run on KeyboardInterrupt, which is re-raised. A run whose ``command`` is
    set runs that command instead of Snakemake (the tests' stand-in). Returns ``runs`` with their status."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    active = []
    try:
        for run in runs:
            run.command = run.command or [sys.executable, "-m", "snakemake", "--workflow-profile",
                                          str(repo / "workflow" / "profiles" / "default"), "--cores",
                                          str(run.cores), "--configfile", str(run.config_path)]
            run.log_path.parent.mkdir(parents=True, exist_ok=True)
            with open(run.log_path, "w") as log:  # the child keeps its own copy of the descriptor
                proc = subprocess.Popen(run.command, cwd=repo, env=env, stdout=log, stderr=subprocess.STDOUT,
                                        start_new_session=True)  # its own process group, stopped as one
            active.append((run, proc, time.monotonic()))
        last = time.monotonic()
        while any(run.returncode is None and not run.timed_out for run, _, _ in active):
            time.sleep(0.5)
            now = time.monotonic()
            for run, proc, started in active:
                if run.returncode is None and not run.timed_out:
                    run.returncode = proc.poll()
                    if run.returncode is None and now >= deadline:
                        run.timed_out = True
                        _stop(proc)
                    run.seconds = time.monotonic() - started
            if progress is not None and now - last >= every:
                last = now
                progress("[gpu-check] " + ", ".join(f"{run.device} DAG: {_dag_progress(run)}" for run in runs))
    except BaseException:
        for run, proc, _ in active:
            if proc.poll() is None:
                run.timed_out = True
                _stop(proc)
        raise
    return runs


def _dag_progress(run: DagRun) -> str:
    """The last "N of M steps (x%) done" of a run's Snakemake log, or its state."""
    if run.timed_out:
        return "stopped"
    if run.returncode is not None:
        return "done" if run.returncode == 0 else f"failed (exit {run.returncode})"
    try:
        text = run.log_path.read_text(errors="replace")
    except OSError:
        return "starting"
    done = [line.strip() for line in text.splitlines() if " steps (" in line and line.strip().endswith("done")]
    return done[-1] if done else "starting"


def _stop(proc: subprocess.Popen) -> None:
    """SIGTERM to the process group we started (Snakemake and its jobs), SIGKILL after 20 s."""
    for sig, wait in ((signal.SIGTERM, 20), (signal.SIGKILL, 10)):
        try:
            os.killpg(proc.pid, sig)
            proc.wait(timeout=wait)
            return
        except (ProcessLookupError, subprocess.TimeoutExpired):
            continue


def _prefetch(config_path: Path, log_path: Path, *, deadline: float) -> tuple[bool, str]:
    """Fetch the data files the smoke config reads before the two DAGs start (both DAGs would otherwise
    schedule the same fetch jobs, and the second Snakemake would find their outputs locked). Returns
    (ok, last line of the output)."""
    cmd = [sys.executable, "-m", "gradmc.cli", "data", "fetch", "--config", str(config_path)]
    try:
        out = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True,
                             timeout=max(deadline - time.monotonic(), 1.0))
    except subprocess.TimeoutExpired:
        return False, "data fetch ran past the time limit"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log_path.write_text(out.stdout + out.stderr)
    lines = (out.stderr or out.stdout).strip().splitlines()
    return out.returncode == 0, lines[-1] if lines else ""


def bench_gwg_rbm(device: str, chains: int, *, threads: int | None = None) -> dict:
    """GWG steps/s (one step = one transition of all chains) on the ``make bench`` RBM (784 x 500) with
    ``chains`` chains on ``device``, timed by :func:`gradmc.evaluation.timing.time_sampler` at its defaults.
    ``threads`` sets torch's CPU threads. Returns time_sampler's dict plus device, chains, threads and
    chain_steps_per_s."""
    import torch

    from gradmc.bench.samplers import build_rbm
    from gradmc.evaluation.timing import time_sampler
    from gradmc.samplers.discrete.registry import make_sampler
    from gradmc.seeding import make_generator, seed_from

    if threads is not None:
        torch.set_num_threads(threads)
    rbm, x0 = build_rbm(make_generator(seed_from("gpu-check", "rbm")), num_chains=chains)
    generator = make_generator(seed_from("gpu-check", "gwg", device, chains), device)
    row = time_sampler(make_sampler("GWG"), rbm.to(device), x0.to(device), generator)
    return {"device": device, "chains": chains, "threads": torch.get_num_threads() if device == "cpu" else None,
            **row, "chain_steps_per_s": row["steps_per_s"] * chains}


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


def _smoke(args, out: Path, deadline: float) -> dict:
    """Run both smoke DAGs and compare them; the report's ``smoke`` entry."""
    import yaml

    from gradmc.atomic import atomic_path
    from gradmc.config import read_config
    from gradmc.errors import UserError

    base = read_config(REPO / "config" / "smoke.yaml")
    per_dag = max(args.cores // 2, 1)
    runs = []
    for dev in _DEVICES:
        name = (out.resolve() / dev).relative_to((REPO / "results").resolve()).as_posix()  # results/<name>
        config = derived_config(base, name=name, device=dev, gpus_per_shard=args.gpus_per_shard)
        path = out / "config" / f"{dev}.yaml"
        text = "# written by gradmc.bench.gpu_check: config/smoke.yaml with another name and device\n" + \
            yaml.safe_dump(config, sort_keys=False)
        if not path.exists() or path.read_text() != text:
            with atomic_path(path) as tmp:
                tmp.write_text(text)
        runs.append(DagRun(dev, path, out / dev, out / "logs" / f"snakemake_{dev}.log",
                           per_dag if dev == "cpu" else max(args.cores - per_dag, 1)))
    entry = {"skipped": False, "folder": _rel(out), "runs": {}, "comparison": None}
    print(f"[gpu-check] smoke DAG on cpu and cuda at once ({runs[0].cores} + {runs[1].cores} cores); logs in "
          f"{_rel(out / 'logs')}", flush=True)
    ok, message = _prefetch(runs[0].config_path, out / "logs" / "data_fetch.log", deadline=deadline)
    if not ok:
        entry["prefetch_error"] = message
        return entry
    run_dags(runs, deadline=deadline)
    for run in runs:
        entry["runs"][run.device] = {"returncode": run.returncode, "timed_out": run.timed_out,
                                     "seconds": run.seconds, "log": _rel(run.log_path),
                                     "config": _rel(run.config_path), "results": _rel(run.results)}
        if not run.ok:
            tail = run.log_path.read_text(errors="replace").strip().splitlines()[-15:]
            print(f"[gpu-check] the {run.device} DAG {'timed out' if run.timed_out else 'failed'}; "
                  f"last lines of {_rel(run.log_path)}:", *tail, sep="\n", file=sys.stderr, flush=True)
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


def _rel(path: Path) -> str:
    try:
        return path.resolve().relative_to(REPO.resolve()).as_posix()
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
    out, results = REPO / args.out, (REPO / "results").resolve()  # an absolute --out replaces REPO
    if not out.resolve().is_relative_to(results) or out.resolve() == results:
        print(f"gpu-check: --out {args.out} must be a folder under {REPO / 'results'} (the Snakefile writes "
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
            report["smoke"] = _smoke(args, out, deadline - 45.0)
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
    smoke = report["smoke"]  # a comparison is made only when both DAGs finished
    smoke_ok = smoke.get("skipped") or (smoke["comparison"] is not None and smoke["comparison"]["passed"])
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
    print(f"[gpu-check] written {_rel(out / 'gpu_check.md')} (every comparison) and gpu_check.json", flush=True)
    return 0 if report["passed"] else 1
