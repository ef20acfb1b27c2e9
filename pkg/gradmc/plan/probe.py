"""One probe in a child process, and its peak resident memory read by the parent.

The parent (:func:`run_probe`) writes the probe as JSON, starts ``python -m gradmc.plan.probe REQUEST RESULT``
with one CPU thread (``OMP_NUM_THREADS=1``, ``torch.set_num_threads(1)``) in its own session, and reaps it with
:func:`os.wait4`, whose resource usage is that child's alone: ``ru_maxrss``, its peak resident set size (the
child's own process; a probe starts no further processes). A probe past its timeout is killed (its whole
process group) and reported as such.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import traceback
from pathlib import Path

from gradmc.atomic import atomic_path

__all__ = ["run_probe", "ProbeResult"]

ProbeResult = dict


def _write_json(path, payload) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(payload, indent=1, default=str), encoding="utf-8")


def run_probe(probe: dict, folder: str | Path, timeout_s: float, name: str) -> ProbeResult:
    """Run ``probe`` (see :func:`gradmc.plan.measure.measure`) in a child process.

    Args:
        probe: JSON-able probe description.
        folder: where the request, result and the child's log go (``<name>.json``, ``.result.json``, ``.log``).
        timeout_s: wall seconds before the child is killed.
        name: file stem of this probe.

    Returns:
        The child's measurement plus ``status`` (``"ok"``, ``"error"`` or ``"timeout"``), ``error`` (the last
        line of the child's error, if any), ``peak_rss_mb`` (MiB, from ``os.wait4``, unless the measurement
        gives its own: a Snakemake ``benchmark:`` record of the job alone) and ``wall_s`` (seconds,
        the whole child including its start-up).
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    request, result, log = folder / f"{name}.json", folder / f"{name}.result.json", folder / f"{name}.log"
    result.unlink(missing_ok=True)
    _write_json(request, probe)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    start = time.perf_counter()
    with open(log, "wb") as fh:
        child = subprocess.Popen([sys.executable, "-m", "gradmc.plan.probe", str(request), str(result)],
                                 stdout=fh, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        timed_out = False
        while True:
            pid, status, usage = os.wait4(child.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() - start > timeout_s:
                timed_out = True
                os.killpg(child.pid, signal.SIGKILL)
                pid, status, usage = os.wait4(child.pid, 0)
                break
            time.sleep(0.1)
        child.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
    out: ProbeResult = json.loads(result.read_text(encoding="utf-8")) if result.is_file() else {}
    out["wall_s"] = time.perf_counter() - start
    if not isinstance(out.get("peak_rss_mb"), (int, float)):  # else: the job's own, from its benchmark: record
        out["peak_rss_mb"] = usage.ru_maxrss / 1024.0 if sys.platform != "darwin" else usage.ru_maxrss / 2**20
    if timed_out:
        out.update(status="timeout", error=f"killed after {timeout_s:.0f} s, peak RSS {out['peak_rss_mb']:.0f} MiB "
                                           f"so far (log: {log})")
    elif child.returncode != 0 or "error" in out:
        tail = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-1:] if log.is_file() else []
        out.update(status="error", error=out.get("error") or (tail[0] if tail else f"exit {child.returncode}"))
    else:
        out["status"] = "ok"
    return out


def _child(request: str, result: str) -> int:
    import torch

    torch.set_num_threads(1)
    from gradmc.config import load_config
    from gradmc.plan.measure import measure

    probe = json.loads(Path(request).read_text(encoding="utf-8"))
    try:
        out = measure(probe, load_config(probe["config_path"]))
    except Exception as err:  # reported in the plan; the other probes go on
        traceback.print_exc()
        _write_json(result, {"error": f"{type(err).__name__}: {err}".splitlines()[0][:500]})
        return 1
    _write_json(result, out)
    return 0


if __name__ == "__main__":
    sys.exit(_child(sys.argv[1], sys.argv[2]))
