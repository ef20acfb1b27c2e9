"""How many intra-op threads a gradmc compute process gives torch: the thread policy.

Torch's CPU kernels run on OpenMP (libgomp), whose threads busy-wait at the end of every parallel region.
On an idle machine that is the fastest setting. When another process holds one of the cores, a region
waits for the thread that shares that core, and a 2-thread sampler step on 2 cores became 5-10x slower
(RBM GWG 814 -> 164 steps/s); sleeping threads (``OMP_WAIT_POLICY=PASSIVE``) avoid the collapse but cost
2.5x on an idle machine, and no bounded spin (``GOMP_SPINCOUNT``) helps under load (``gradmc bench --suite
threads`` measures all of these). One thread per process never waits on another thread.

So the policy keeps torch's spinning threads but only as many as there are free cores when the process
starts: it samples the machine's CPU use for :data:`PROBE_SECONDS` (``/proc/stat``, the CPUs this process
may run on, minus its own use; when that finds cores busy it looks again, :data:`RECHECKS` times, and keeps
the least busy reading, so a load that ends within a second does not count) and runs
``min(requested, round(free cores))`` threads, at least one. On an idle machine that is the requested count
(no cost); with a busy process on one of 2 cores it is one thread.
A load that starts after the probe is not seen.

``GRADMC_THREADS`` overrides it: ``auto`` (the default) is the policy above, an integer N >= 1 fixes N
threads without probing, ``torch`` leaves torch's own setting (``OMP_NUM_THREADS`` or the core count).
Applied by the ``gradmc`` CLI's compute commands (run, bench, check-sampler), by every Ray shard and actor
with more than one thread, and by ``gradmc bench`` (which records the choice).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from gradmc.errors import InputError

__all__ = ["ENV", "PROBE_SECONDS", "RECHECKS", "RECHECK_WAIT", "ThreadChoice", "busy_cores", "choose_threads",
           "apply_thread_policy"]

ENV = "GRADMC_THREADS"
#: seconds of CPU accounting the policy samples at start
PROBE_SECONDS = 0.15
#: the :class:`ThreadChoice` this process made last (None before the first), for the logs and the self-tests
last_choice: ThreadChoice | None = None
#: when the first probe finds fewer free cores than requested: more probes, RECHECK_WAIT seconds apart, and the
#: least busy reading counts (about 1 s at most, and only on a busy machine)
RECHECKS, RECHECK_WAIT = 2, 0.3


@dataclass(frozen=True)
class ThreadChoice:
    """What :func:`apply_thread_policy` did: ``threads`` set, out of ``requested``; ``busy`` cores used by
    other processes during the probe (None: not probed); ``mode`` "auto", "fixed" or "torch"; ``cpus`` the
    cores this process may use."""

    threads: int
    requested: int
    busy: float | None
    mode: str
    cpus: int = 1

    def describe(self) -> str:
        """One line for the logs, e.g. ``threads 1 of 2 (1.0 of 2 cores busy at start)``."""
        if self.busy is None:
            return f"threads {self.threads} ({self.mode})"
        return f"threads {self.threads} of {self.requested} ({self.busy:.1f} of {self.cpus} cores busy at start)"


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _cpu_times(cpus: set[int], stat: Path) -> tuple[float, float] | None:
    """(busy, total) jiffies summed over ``cpus`` from /proc/stat; None when unreadable."""
    try:
        lines = stat.read_text().splitlines()
    except OSError:
        return None
    busy = total = 0.0
    for line in lines:
        head, _, rest = line.partition(" ")
        if not head.startswith("cpu") or head == "cpu" or int(head[3:]) not in cpus:
            continue
        fields = [float(v) for v in rest.split()]
        idle = fields[3] + (fields[4] if len(fields) > 4 else 0.0)  # idle + iowait
        spent = sum(fields[:8])  # user nice system idle iowait irq softirq steal (guest is inside user)
        busy += spent - idle
        total += spent
    return (busy, total) if total > 0 else None


def busy_cores(seconds: float = PROBE_SECONDS, stat: str | Path = "/proc/stat") -> float | None:
    """Cores' worth of CPU that OTHER processes used over the next ``seconds``, on the CPUs this process may
    run on (its affinity); this process's own use in the window is subtracted.

    Returns:
        A float in [0, number of usable CPUs], or None where ``/proc/stat`` is not readable (not Linux).
    """
    try:
        cpus = os.sched_getaffinity(0)
    except AttributeError:
        return None
    stat = Path(stat)
    first, own0 = _cpu_times(cpus, stat), os.times()
    if first is None:
        return None
    time.sleep(seconds)
    second, own1 = _cpu_times(cpus, stat), os.times()
    if second is None or second[1] <= first[1]:
        return None
    busy = (second[0] - first[0]) / (second[1] - first[1]) * len(cpus)  # cores' worth busy in the window
    window = (second[1] - first[1]) / len(cpus) / os.sysconf("SC_CLK_TCK")  # seconds, from the same counters
    own = (own1.user + own1.system - own0.user - own0.system) / window
    return min(max(busy - own, 0.0), float(len(cpus)))


def choose_threads(requested: int, busy: float | None, cpus: int) -> int:
    """The policy: ``min(requested, round(cpus - busy))``, at least 1; ``requested`` when busy is None.

    Args:
        requested: the most threads wanted (>= 1); busy: cores used by others (:func:`busy_cores`);
            cpus: cores this process may use.

    Raises:
        ValueError: requested or cpus < 1.
    """
    if requested < 1 or cpus < 1:
        raise ValueError(f"requested and cpus must be >= 1, got {requested} and {cpus}")
    if busy is None:
        return requested
    return max(1, min(requested, int(cpus - busy + 0.5)))


def _setting() -> str:
    value = os.environ.get(ENV, "auto").strip().lower()
    if value in ("auto", "torch") or (value.isdigit() and int(value) >= 1):
        return value
    raise InputError(f"{ENV}={os.environ[ENV]!r}: expected 'auto', 'torch' or a whole number of threads >= 1")


def apply_thread_policy(requested: int | None = None) -> ThreadChoice:
    """Set torch's intra-op threads by the policy of this module (and ``GRADMC_THREADS``).

    Args:
        requested: the most threads wanted; default torch's current count (``OMP_NUM_THREADS`` or the cores).
            One thread (or fewer usable CPUs than 2) skips the probe.

    Returns:
        The :class:`ThreadChoice` made (torch.get_num_threads() equals its ``threads``).

    Raises:
        InputError: ``GRADMC_THREADS`` is not auto, torch or an integer >= 1.
    """
    global last_choice
    last_choice = _apply(_setting(), torch.get_num_threads() if requested is None else int(requested))
    return last_choice


def _apply(setting: str, requested: int) -> ThreadChoice:
    if setting == "torch":
        return ThreadChoice(torch.get_num_threads(), requested, None, "torch", _cpus())
    if setting != "auto":
        torch.set_num_threads(int(setting))
        return ThreadChoice(int(setting), int(setting), None, "fixed", _cpus())
    cpus = _cpus()
    busy = busy_cores() if requested > 1 and cpus > 1 else None
    for _ in range(RECHECKS):  # a load that ends within a second (the previous job's teardown) is forgiven
        if busy is None or choose_threads(requested, busy, cpus) == requested:
            break
        time.sleep(RECHECK_WAIT)
        again = busy_cores()
        busy = busy if again is None else min(busy, again)
    threads = choose_threads(requested, busy, cpus)
    if threads != torch.get_num_threads():
        torch.set_num_threads(threads)
    return ThreadChoice(threads, requested, busy, "auto", cpus)
