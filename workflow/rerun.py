"""What a pipeline run will redo and why (before), and how much of it the shard cache saved (after).

    python workflow/rerun.py plan   --configfile config/quick.yaml [--cores N] [--workflow-profile P]
    python workflow/rerun.py report --configfile config/quick.yaml [LOG]

``plan`` runs Snakemake's dry run and prints one line per job it would run, with the reason in words: the
gradmc files whose code changed (comments and docstrings do not count, :mod:`gradmc.codedigest`), the config
keys whose values changed, the inputs that changed or are rebuilt first, or the outputs that are missing. For
each standard experiment it also counts the shards the shard cache already holds
(:mod:`gradmc.distributed.shard_cache`), which the job will not recompute.

``report`` reads Snakemake's log of the last run that executed jobs (LOG: default the newest under
.snakemake/log/) and, for each standard experiment it ran, the job log's shard line: shards computed, shards
taken from the cache.

Both read only what Snakemake and the jobs already record (Snakemake's dry-run reasons, which carry each
changed param's old and new value; the per-file digests :func:`gradmc.codedigest.record_manifest` keeps
under .snakemake/gradmc-code/; the job logs), and change nothing.
"""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "pkg"))  # gradmc from this checkout, as the Snakefile does

from gradmc.codedigest import DIGEST_PREFIX, load_manifest  # noqa: E402

CODE_RECORDS = Path(".snakemake") / "gradmc-code"
_JOB = re.compile(r"^(?:local)?[Jj]ob (\d+): (.*)$")
_RULE = re.compile(r"^(?:local)?rule (\S+):$")
_LOG = re.compile(r"\| joblog (\S+) ")
_PARAMS = "Params have changed since last execution: "
_SHARDS = re.compile(r"^\[(\S+)\] shards: (\d+) computed, (\d+) from the cache")


@dataclass
class Job:
    """One job of a dry run: its name (the stem of its log file), message and Snakemake's reason."""

    name: str
    message: str
    reason: str = ""
    shell: bool = False


def parse_dry_run(text: str) -> list[Job]:
    """The jobs of Snakemake's dry-run output (run with ``--printshellcmds``), in its order. A job is named by the
    stem of its log file (``joblog <log>`` in its shell command), else by its rule (a ``rule R:`` line before
    it), else ``job <N>``. Jobs without a shell command (the ``all`` target, which only collects outputs) are
    left out."""
    jobs: list[Job] = []
    current: Job | None = None
    rule = None
    for line in text.splitlines():
        if m := _RULE.match(line):
            rule = m.group(1)
        elif m := _JOB.match(line):
            current = Job(name=rule or f"job {m.group(1)}", message=m.group(2))
            jobs.append(current)
            rule = None
        elif current is not None and line.startswith("Reason: "):
            current.reason = line[len("Reason: "):]
        elif current is not None and line.startswith("Shell command: "):
            current.shell = line != "Shell command: None"  # the all target prints None
            if m := _LOG.search(line):
                current.name = Path(m.group(1)).stem
    return [job for job in jobs if job.shell]


def _values(text: str) -> list:
    """The param values of one side of Snakemake's params-change text (reprs joined by commas)."""
    text = text.strip()
    if not text or text == "<nothing exclusive>":
        return []
    try:
        return list(ast.literal_eval(f"[{text}]"))
    except (ValueError, SyntaxError):
        return [text]


def _params_change(reason: str) -> tuple[list, list] | None:
    """(old values, new values) of the params that changed, from a reason line; None if none did."""
    if _PARAMS not in reason:
        return None
    rest = reason.split(_PARAMS, 1)[1]
    rest = rest.split("; Software environment definition", 1)[0]
    body = rest.split("across all output: ", 1)[-1]
    if " now: " not in body:
        return [], []
    before, now = body.split(" now: ", 1)
    return _values(before.removeprefix("before: ")), _values(now)


def changed_keys(old, new, prefix: str = "") -> list[str]:
    """Dotted keys whose values differ between two config parts (added and removed keys included)."""
    if isinstance(old, dict) and isinstance(new, dict):
        keys = []
        for key in sorted(set(old) | set(new), key=str):
            keys += changed_keys(old.get(key), new.get(key), f"{prefix}{key}.")
        return keys
    return [] if old == new else [prefix.rstrip(".") or "(whole value)"]


def changed_files(old_digest: str, new_digest: str, records: Path = CODE_RECORDS) -> list[str] | None:
    """The gradmc files (relative to the repository) whose code differs between two code digests, from their recorded
    manifests; None when either record is missing (a run from before records were kept)."""
    old, new = load_manifest(records, old_digest), load_manifest(records, new_digest)
    if old is None or new is None:
        return None
    changed = [f for f in sorted(set(old) | set(new)) if old.get(f) != new.get(f)]
    return [f"pkg/gradmc/{f}" + ("" if f in new else " (no longer used)") + ("" if f in old else " (newly used)")
            for f in changed]


def _is_digest(value) -> bool:
    return isinstance(value, str) and re.fullmatch(r"(code:)?[0-9a-f]{16}", value) is not None


def explain_params(old: list, new: list, records: Path = CODE_RECORDS) -> list[str]:
    """Phrases for the changed params: code (files), config (keys), anything else (old -> new)."""
    phrases = []
    old_code = [v for v in old if _is_digest(v)]
    new_code = [v for v in new if _is_digest(v)]
    if old_code or new_code:
        files = changed_files(old_code[0], new_code[0], records) if old_code and new_code else None
        if files:
            phrases.append(f"code of {', '.join(files)} changed")
        elif old_code and not old_code[0].startswith(DIGEST_PREFIX):
            phrases.append("code digest recorded by an older gradmc (byte digests): the code is compared anew")
        else:
            phrases.append("code changed (no record of the earlier code's files)")
    old_cfg = [v for v in old if isinstance(v, dict)]
    new_cfg = [v for v in new if isinstance(v, dict)]
    if old_cfg or new_cfg:
        keys = changed_keys(old_cfg[0] if old_cfg else {}, new_cfg[0] if new_cfg else {})
        phrases.append(f"config key{'s' if len(keys) != 1 else ''} {', '.join(keys)} changed")
    rest_old = [v for v in old if not _is_digest(v) and not isinstance(v, dict)]
    rest_new = [v for v in new if not _is_digest(v) and not isinstance(v, dict)]
    if rest_old or rest_new:
        phrases.append(f"params {rest_old} -> {rest_new}")
    return phrases


def _files(text: str) -> str:
    names = [Path(p).name for p in text.split(", ")]
    return ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")


def explain(reason: str, records: Path = CODE_RECORDS) -> str:
    """One line of why a job runs, from Snakemake's reason."""
    phrases = []
    for part in reason.split("; "):
        if part.startswith("Missing output files: "):
            phrases.append(f"output missing ({_files(part.split(': ', 1)[1])})")
        elif part.startswith("Incomplete output files: "):
            phrases.append(f"output left incomplete by an interrupted run ({_files(part.split(': ', 1)[1])})")
        elif part.startswith("Updated input files: "):
            phrases.append(f"input changed ({_files(part.split(': ', 1)[1])})")
        elif part.startswith("Input files updated by another job: "):
            phrases.append(f"input rebuilt first ({_files(part.split(': ', 1)[1])})")
        elif part.startswith("Code has changed since last execution"):
            phrases.append("the rule's command changed")
        elif part.startswith("Set of input files has changed"):
            phrases.append("the rule's set of inputs changed")
        elif part.startswith("Params have changed"):
            break  # the rest of the reason is the params change (its values may hold "; ")
        elif part:
            phrases.append(part)
    change = _params_change(reason)
    if change is not None:
        phrases += explain_params(*change, records=records)
    return "; ".join(phrases) or reason


def shard_status(name: str, configfile: Path, cores: int) -> str | None:
    """"k of n shards cached" for standard experiment ``name`` as its job would run now, or None when it is no
    standard experiment; a phrase saying why not when its inputs are missing."""
    from gradmc.experiments.standard import cache_status
    from gradmc.registry import experiments

    entry = experiments().get(name)
    if entry is None:
        return None
    from gradmc.config import load_config

    config = load_config(configfile)
    results = Path("results") / config["name"]
    inputs = {key: str(results / rel) for key, rel in entry.inputs.items()}
    missing = [path for path in inputs.values() if not Path(path).is_file()]
    if missing:
        names = ", ".join(Path(p).name for p in missing)
        return f"shards: not counted until {names} exist{'s' if len(missing) == 1 else ''}"
    try:
        stored, total = cache_status(name, config, inputs, results / entry.output, workers=cores)
    except Exception as err:  # noqa: BLE001 (an estimate only: the job itself reports real errors)
        return f"shards: not counted ({type(err).__name__}: {err})"
    return f"{stored} of {total} shards cached, {total - stored} to compute"


def plan(configfile: Path, cores: int, profile: str | None, snakemake: list[str]) -> int:
    """Print the plan (see the module docstring); returns Snakemake's dry-run status."""
    cmd = [*snakemake, "--dry-run", "--printshellcmds", "--configfile", str(configfile), "--cores", str(cores)]
    if profile:
        cmd += ["--workflow-profile", profile]
    out = subprocess.run(cmd, capture_output=True, text=True)
    text = out.stdout + out.stderr
    if out.returncode != 0:
        sys.stderr.write(text)
        return out.returncode
    jobs = parse_dry_run(text)
    if not jobs:
        if "Nothing to be done" in text:
            print("[rerun] nothing to do: every output is up to date")
        else:
            print("[rerun] could not read the jobs of Snakemake's dry run; it printed:\n" + text[-3000:])
        return 0
    print(f"[rerun] {len(jobs)} job{'s' if len(jobs) != 1 else ''} to run:")
    width = max(len(job.name) for job in jobs)
    for job in jobs:
        line = f"  {job.name:<{width}}  {explain(job.reason)}"
        if (status := shard_status(job.name, configfile, cores)) is not None:
            line += f"; {status}"
        print(line)
    return 0


def _last_log(since: float, folder: Path = Path(".snakemake") / "log") -> Path | None:
    """The newest Snakemake log written at or after ``since`` (seconds since the epoch) that finished a job."""
    logs = [log for log in folder.glob("*.snakemake.log") if log.stat().st_mtime >= since]
    for log in sorted(logs, key=lambda p: p.stat().st_mtime, reverse=True):
        if "Finished jobid" in log.read_text(errors="replace"):
            return log
    return None


def report(configfile: Path, log: Path | None, since: float = 0.0) -> int:
    """Print the shards each standard experiment of a run computed and took from the cache: the run of ``log``,
    else the newest Snakemake log written since ``since`` (``make reproduce`` passes its start time, so a run that
    executed nothing reports nothing, not an earlier run)."""
    from gradmc.config import load_config
    from gradmc.registry import experiments

    log = log or _last_log(since)
    if log is None:
        print("[rerun] no job ran")
        return 0
    finished = re.findall(r"Finished jobid: \d+ \(Rule: (\S+)\)", log.read_text(errors="replace"))
    ran = set(finished)
    logs = Path("results") / load_config(configfile)["name"] / "logs"
    total_computed = total_cached = 0
    lines = []
    for name in sorted(ran & set(experiments())):
        path = logs / f"{name}.log"
        found = [m for line in (path.read_text(errors="replace").splitlines() if path.is_file() else [])
                 if (m := _SHARDS.match(line))]
        if not found:
            lines.append(f"  {name:<24} no shard line in {path}")
            continue
        computed, cached = int(found[-1].group(2)), int(found[-1].group(3))
        total_computed, total_cached = total_computed + computed, total_cached + cached
        lines.append(f"  {name:<24} {computed} computed, {cached} from the cache")
    print(f"[rerun] {len(finished)} job{'s' if len(finished) != 1 else ''} ran ({log}); shards of the standard "
          "experiments: "
          f"{total_computed} computed, {total_cached} from the cache")
    if lines:
        print("\n".join(lines))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("plan", help="the jobs a run would execute, each with its reason and cached shards")
    p.add_argument("--configfile", type=Path, default=Path("config/quick.yaml"))
    p.add_argument("--cores", type=int, default=2)
    p.add_argument("--workflow-profile", default=None)
    r = sub.add_parser("report", help="shards computed and taken from the cache in the last run")
    r.add_argument("--configfile", type=Path, default=Path("config/quick.yaml"))
    r.add_argument("--since", type=float, default=0.0,
                   help="only a Snakemake log written at or after this time (seconds since the epoch)")
    r.add_argument("log", nargs="?", type=Path, default=None)
    args = parser.parse_args(argv)
    if not args.configfile.is_file():
        parser.error(f"--configfile {args.configfile} not found")
    if args.command == "plan":
        return plan(args.configfile, args.cores, args.workflow_profile, [sys.executable, "-m", "snakemake"])
    return report(args.configfile, args.log, args.since)


if __name__ == "__main__":
    sys.exit(main())
