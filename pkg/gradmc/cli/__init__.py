"""Command line: every pipeline stage runnable by hand (``gradmc --help``).

The ``run`` and ``figure`` subcommands of the standard experiments come from the registry
(:mod:`gradmc.registry`); the other stages are listed in :mod:`gradmc.cli.parser`. A user error
(:class:`gradmc.errors.UserError`: config, input, data, cluster) prints one line and exits with status 2;
any other exception is a bug and propagates with its traceback. A reader that closes stdout early
(``gradmc samplers | head -1``) ends the command quietly, with status 141.
"""

from __future__ import annotations

import os
import stat
import sys
import time

from gradmc.cli.parser import IMAGE_DATASETS, build_parser

__all__ = ["main", "build_parser", "IMAGE_DATASETS", "THREADED_COMMANDS"]

#: the commands that compute with torch, and so choose their threads by :mod:`gradmc.threads` first
THREADED_COMMANDS = frozenset({"run", "check-sampler"})


def interrupted_message(args) -> str:
    """What an interrupted command leaves behind: nothing for most; for ``gradmc run`` with its shard cache,
    the shards finished so far (:mod:`gradmc.distributed.shard_cache`), which a rerun reuses."""
    if args.command == "run" and not getattr(args, "no_shard_cache", True) and getattr(args, "out", None):
        from gradmc.distributed.shard_cache import cache_folder_for

        cache = args.shard_cache or cache_folder_for(args.out)
        return (f"interrupted; {args.out} was not written, but the shards finished so far are kept in {cache}: "
                "rerun the same command to compute only the rest")
    return "interrupted; no output was written (rerun to finish)"


#: exit status of a command whose stdout reader went away: 128 + SIGPIPE, what the shell reports for a Unix tool
#: killed by SIGPIPE (``yes | head -1``), so ``set -o pipefail`` scripts see the same as with any such tool
BROKEN_PIPE_STATUS = 141


def _is_pipe(fd: int) -> bool:
    try:
        return stat.S_ISFIFO(os.fstat(fd).st_mode) or stat.S_ISSOCK(os.fstat(fd).st_mode)
    except OSError:
        return False


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``gradmc`` console script; returns the exit status (0 done, 2 user error, 130
    interrupted, 141 stdout closed by its reader). Exceptions outside the user-error family propagate (Python
    prints the traceback, status 1)."""
    try:
        try:
            return _main(argv)
        finally:  # buffered output meets the closed pipe here (or at --help's SystemExit), not in a print
            sys.stdout.flush()
    except BrokenPipeError:
        if not (_is_pipe(1) or _is_pipe(2)):  # not a closed stdout/stderr pipe: some other connection, a bug
            raise
        # The reader of stdout closed the pipe (`gradmc samplers | head -1`): the standard recipe of the Python
        # docs (signal module, "Note on SIGPIPE"): point stdout at devnull, so that the interpreter's own flush at
        # exit does not fail again, and end quietly with status 141 (BROKEN_PIPE_STATUS).
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return BROKEN_PIPE_STATUS


def _main(argv: list[str] | None) -> int:
    """:func:`main` without its handling of a closed stdout."""
    from gradmc.cli.commands import COMMANDS, log
    from gradmc.errors import UserError
    from gradmc.tuning import tune_allocator

    tune_allocator()  # malloc thresholds for the compute commands (gradmc.tuning)

    try:
        parser = build_parser()  # reads the sampler catalog: a broken plugin is a user error
    except UserError as err:
        print(f"gradmc: error: {err}", file=sys.stderr, flush=True)
        return 2
    args = parser.parse_args(argv)
    if args.version:
        from gradmc import __version__

        print(__version__)
        return 0
    if args.command is None:
        parser.print_help()
        return 2
    chooses = {"data": ("action", "an action"), "run": ("experiment", "an experiment"),
               "figure": ("figure", "a figure")}
    if args.command in chooses and getattr(args, chooses[args.command][0]) is None:
        print(f"gradmc {args.command}: error: name {chooses[args.command][1]} (`gradmc {args.command} --help` lists "
              "them)", file=sys.stderr, flush=True)
        return 2
    start = time.perf_counter()
    try:
        if args.command in THREADED_COMMANDS:
            from gradmc.threads import apply_thread_policy

            log(f"[gradmc] {apply_thread_policy().describe()}")  # torch threads for this process (gradmc.threads)
        COMMANDS[args.command](args)
    except UserError as err:
        print(f"gradmc: error: {err}", file=sys.stderr, flush=True)
        return 2
    except KeyboardInterrupt:
        print(f"gradmc: {interrupted_message(args)}", file=sys.stderr, flush=True)
        return 130
    log(f"[gradmc] {args.command} done in {time.perf_counter() - start:.1f}s (pid {os.getpid()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
