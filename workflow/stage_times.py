"""Per-stage wall times of a Snakemake run, read from Snakemake's own log (.snakemake/log/*.snakemake.log).

    python workflow/stage_times.py [LOG] [--out FILE.md]

LOG defaults to the newest log under .snakemake/log/ that ran a job (a no-op rerun's "Nothing to be done" log
is skipped, and the table names the log it read). Each job's wall time is the time from its "Job N:" line
to its "Finished jobid: N (Rule: R)" line (Snakemake stamps both, to the second); a stage (rule) sums its
jobs. The table also gives the run's total wall time (first job start to last job end). Jobs that started
but never finished (a failed or interrupted run) are listed as unfinished.
"""

from __future__ import annotations

import argparse
import re
import sys
from datetime import datetime
from pathlib import Path

_STAMP = re.compile(r"^\[(\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})\]$")
_START = re.compile(r"^(?:local)?[Jj]ob (\d+): ")
_RULE = re.compile(r"^(?:local)?rule (\S+):$")
_JOBID = re.compile(r"^\s+jobid: (\d+)$")
_FINISHED = re.compile(r"^Finished jobid: (\d+) \(Rule: (\S+)\)")


def stage_times(text: str) -> tuple[dict[str, tuple[int, float]], float, list[str]]:
    """Parse a Snakemake log.

    Returns:
        (stages, total_s, unfinished): rule -> (jobs, summed wall seconds); the run's wall seconds from the
        first job start to the last job end; the rules of jobs that started and never finished.

    Raises:
        ValueError: the text holds no timed job (not a Snakemake log, or a dry run).
    """
    stamp, started, names, pending_rule = None, {}, {}, None
    stages: dict[str, tuple[int, float]] = {}
    first = last = None
    for line in text.splitlines():
        if m := _STAMP.match(line):
            stamp = datetime.strptime(m.group(1), "%a %b %d %H:%M:%S %Y")
        elif (m := _START.match(line)) and stamp is not None:
            started[m.group(1)] = stamp
            first = stamp if first is None else min(first, stamp)
        elif m := _RULE.match(line):  # older log style: "rule R:" then "jobid: N"
            pending_rule = m.group(1)
        elif (m := _JOBID.match(line)) and pending_rule and stamp is not None:
            started.setdefault(m.group(1), stamp)
            names[m.group(1)] = pending_rule
            first = stamp if first is None else min(first, stamp)
            pending_rule = None
        elif (m := _FINISHED.match(line)) and m.group(1) in started:
            job, rule = m.group(1), m.group(2)
            seconds = (stamp - started.pop(job)).total_seconds()
            names.pop(job, None)
            jobs, total = stages.get(rule, (0, 0.0))
            stages[rule] = (jobs + 1, total + seconds)
            last = stamp if last is None else max(last, stamp)
    if not stages:
        raise ValueError("no finished job with time stamps found: not a Snakemake log of a real run?")
    unfinished = sorted(names.get(j, f"job {j}") for j in started)
    return stages, (last - first).total_seconds(), unfinished


def table(stages: dict[str, tuple[int, float]], total_s: float, unfinished: list[str]) -> str:
    """Markdown table of the stages, slowest first, with the run's wall time."""
    lines = ["| stage (rule) | jobs | wall time (s, summed over jobs) |", "|:--|--:|--:|"]
    for rule, (jobs, seconds) in sorted(stages.items(), key=lambda kv: -kv[1][1]):
        lines.append(f"| {rule} | {jobs} | {seconds:.0f} |")
    lines += ["", f"Run wall time: {total_s:.0f} s ({total_s / 60:.1f} min); jobs run in parallel, so the "
              "summed stage times exceed it."]
    if unfinished:
        lines.append(f"Unfinished jobs: {', '.join(unfinished)}.")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("log", nargs="?", help="Snakemake log (default: the newest .snakemake/log/*.log "
                        "that ran a job)")
    parser.add_argument("--out", help="write the markdown table here (default: stdout)")
    args = parser.parse_args(argv)
    if args.log:
        logs = [Path(args.log)]
    else:
        logs = sorted(Path(".snakemake/log").glob("*.snakemake.log"), key=lambda p: p.stat().st_mtime, reverse=True)
    if not logs or not logs[0].is_file():
        print(f"stage_times: no Snakemake log {'at ' + str(logs[0]) if logs else 'under .snakemake/log/'}",
              file=sys.stderr)
        return 2
    first_error = None
    for path in logs:  # newest first: the first log of a run that did work
        try:
            out = table(*stage_times(path.read_text(errors="replace")))
            break
        except ValueError as err:
            first_error = first_error or f"stage_times: {path}: {err}"
    else:
        print(first_error + ("" if args.log else f" (nor any of the {len(logs)} logs under .snakemake/log/)"),
              file=sys.stderr)
        return 2
    if not args.log:
        out = f"From `{path}`.\n\n" + out
    if args.out:
        Path(args.out).write_text(out)
    else:
        print(out, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
