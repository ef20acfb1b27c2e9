"""Test helper: SIGKILL the process that runs a shard, from outside, while the shard runs."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path


def kill_first_attempt(pid_file: Path, timeout_s: float = 60.0) -> tuple[threading.Thread, list[int]]:
    """Start a thread that waits until a ``ToyShard(pid_file=...)`` has written its process id (one line per
    attempt) and SIGKILLs that process once.

    Returns:
        The started thread (join it after the sweep) and the list it appends the killed pid to.
    """
    killed: list[int] = []

    def kill() -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and not (pid_file.exists() and pid_file.read_text().endswith("\n")):
            time.sleep(0.02)
        pid = int(pid_file.read_text().split()[0])
        os.kill(pid, signal.SIGKILL)  # the Ray worker or actor running the shard (it wrote its own pid)
        killed.append(pid)

    thread = threading.Thread(target=kill)
    thread.start()
    return thread, killed
