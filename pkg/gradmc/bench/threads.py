"""Thread-setting benchmark (``gradmc bench --suite threads``): GWG on the RBM 784x500 with 100 chains,
steps/s under each candidate thread setting, on an idle machine and beside a busy process.

Torch's OpenMP threads busy-wait between parallel regions (:mod:`gradmc.threads` explains why that collapses
when another process holds a core). Each candidate of :data:`CANDIDATES` runs in a fresh Python process
(``OMP_WAIT_POLICY`` and ``GOMP_SPINCOUNT`` are read when libgomp loads), builds the target, warms up, and
times ``repeats`` runs of ``steps`` steps; the result is its median steps/s. "Busy" starts one process that
spins in pure Python (one core's worth of load) before the candidate and stops it after. Rounds alternate the
candidates' order, and each condition's numbers come from the same rounds, so drift hits all alike.

Output (``threads.json``)::

    {"created_utc", "git_commit", "cpu_count", "steps", "repeats", "rounds", "loadavg_before", "loadavg_after",
     "results": {candidate: {"idle": {"steps_per_s": median, "runs": [...], "threads": [...]},
                             "busy": {...}, "idle_vs_default": ratio, "busy_vs_default_idle": ratio}}}

``idle_vs_default`` is the candidate's idle median over torch's default idle median; ``busy_vs_default_idle``
its busy median over the same (the thread policy's targets: >= 0.9 and >= 0.5).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from gradmc.atomic import atomic_path
from gradmc.errors import InputError

__all__ = ["CANDIDATES", "run_threads"]

#: candidate -> environment of its process (GRADMC_THREADS: "torch" keeps torch's default of one thread a core)
CANDIDATES: dict[str, dict[str, str]] = {
    "torch default (spin)": {"GRADMC_THREADS": "torch"},
    "OMP_WAIT_POLICY=PASSIVE": {"GRADMC_THREADS": "torch", "OMP_WAIT_POLICY": "PASSIVE"},
    "GOMP_SPINCOUNT=10000": {"GRADMC_THREADS": "torch", "GOMP_SPINCOUNT": "10000"},
    "one thread": {"GRADMC_THREADS": "1"},
    "gradmc policy (auto)": {"GRADMC_THREADS": "auto"},
}
_CLEARED = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "GRADMC_THREADS")
_SPIN = "import time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end:\n    pass\n"


def _worker(steps: int, repeats: int, warmup: int) -> dict:
    """In the candidate's process: the RBM GWG steps/s of each timed run, and the threads used."""
    import torch

    from gradmc.samplers.discrete.registry import make_sampler
    from gradmc.seeding import make_generator
    from gradmc.targets.rbm import RBM
    from gradmc.threads import apply_thread_policy

    choice = apply_thread_policy()
    generator = make_generator(0)
    target = RBM(784, 500, weight_std=0.01, generator=generator).requires_grad_(False)
    x0 = torch.bernoulli(torch.full((100, 784), 0.5), generator=generator)
    sampler = make_sampler("GWG")
    state = sampler.init(x0, target)
    for _ in range(warmup):
        state, _ = sampler.step(state, target, generator)
    runs = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(steps):
            state, _ = sampler.step(state, target, generator)
        runs.append(steps / (time.perf_counter() - start))
    return {"runs": runs, "threads": choice.threads, "busy": choice.busy}


def _run_candidate(env: dict[str, str], steps: int, repeats: int, warmup: int, busy: bool) -> dict:
    base = {k: v for k, v in os.environ.items() if k not in _CLEARED}
    code = f"import json, gradmc.bench.threads as t; print(json.dumps(t._worker({steps}, {repeats}, {warmup})))"
    spinner = None
    if busy:
        spinner = subprocess.Popen([sys.executable, "-c", _SPIN.format(seconds=600)])
        time.sleep(0.3)  # let the scheduler see it before the candidate starts
    try:
        done = subprocess.run([sys.executable, "-c", code], env={**base, **env}, capture_output=True, text=True,
                              timeout=600)
    finally:
        if spinner is not None:
            spinner.kill()
            spinner.wait()
    if done.returncode:
        raise RuntimeError(f"thread benchmark worker failed ({env}): {done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def run_threads(out_path: str | Path, *, steps: int = 100, repeats: int = 3, warmup: int = 20, rounds: int = 3,
                candidates: dict[str, dict[str, str]] | None = None,
                progress: Callable[[str], None] | None = print) -> dict:
    """Time every candidate idle and busy over ``rounds`` alternated rounds; write ``out_path`` atomically.

    Args:
        out_path: the JSON file (``results/bench/threads.json`` under ``make bench``).
        steps, repeats, warmup: per candidate process: timed runs of ``steps`` steps after ``warmup`` steps.
        rounds: processes per candidate and condition (the median is over all their runs).
        candidates: name -> environment (default :data:`CANDIDATES`; its first is the reference).

    Returns:
        The JSON's content (module docstring).

    Raises:
        InputError: steps, repeats or rounds < 1, or warmup < 0.
        RuntimeError: a candidate's process failed (its stderr is in the message).
    """
    for name, value, minimum in (("steps", steps, 1), ("repeats", repeats, 1), ("rounds", rounds, 1),
                                 ("warmup", warmup, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise InputError(f"threads benchmark {name} must be an integer >= {minimum}, got {value!r}")
    say = progress or (lambda line: None)
    candidates = dict(candidates or CANDIDATES)
    names = list(candidates)
    raw = {name: {"idle": [], "busy": []} for name in names}
    threads = {name: {"idle": [], "busy": []} for name in names}
    before = os.getloadavg()
    for r in range(rounds):
        order = names if r % 2 == 0 else names[::-1]
        for condition in ("idle", "busy") if r % 2 == 0 else ("busy", "idle"):
            for name in order:
                out = _run_candidate(candidates[name], steps, repeats, warmup, busy=condition == "busy")
                raw[name][condition] += out["runs"]
                threads[name][condition].append(out["threads"])
                say(f"[bench threads] round {r + 1}/{rounds} {condition:4s} {name}: "
                    f"{statistics.median(out['runs']):.0f} steps/s on {out['threads']} thread(s)")
    reference = statistics.median(raw[names[0]]["idle"])
    results = {}
    for name in names:
        idle, busy = statistics.median(raw[name]["idle"]), statistics.median(raw[name]["busy"])
        results[name] = {"env": candidates[name],
                         "idle": {"steps_per_s": idle, "runs": raw[name]["idle"], "threads": threads[name]["idle"]},
                         "busy": {"steps_per_s": busy, "runs": raw[name]["busy"], "threads": threads[name]["busy"]},
                         "idle_vs_default": idle / reference, "busy_vs_default_idle": busy / reference}
        say(f"[bench threads] {name}: idle {idle:.0f} ({idle / reference:.2f}x default), busy {busy:.0f} "
            f"({busy / reference:.2f}x default idle)")
    from gradmc.results.provenance import git_state

    commit, dirty = git_state()
    doc = {"created_utc": datetime.now(UTC).isoformat(timespec="seconds"), "git_commit": commit, "git_dirty": dirty,
           "cpu_count": os.cpu_count(), "case": "GWG, RBM 784x500 W ~ N(0, 0.01^2), 100 chains", "steps": steps,
           "repeats": repeats, "warmup": warmup, "rounds": rounds, "loadavg_before": before,
           "loadavg_after": os.getloadavg(), "reference": names[0], "results": results}
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(out_path) as tmp:
        tmp.write_text(json.dumps(doc, indent=1) + "\n")
    return doc
