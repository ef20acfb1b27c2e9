"""The plan of the GWG App. J text EBM jobs: ``prepare_ptb``, ``train_text_ebm``, ``train_text_lm`` and
``eval_text_ebm`` (one job each: the rules have no wildcards, so each waits for the whole of the rules it reads,
``JobSpec.after``: both trainings after ``prepare_ptb``, the evaluation after both trainings).

One probe chain: prepare PTB, train the EBM a few iterations (timed in parts, as the image EBM:
:func:`gradmc.plan.measure._train_text_ebm`), train the LM 5 and 10 iterations, evaluate those two models at 6
and 12 AIS levels. When PTB files are missing the four jobs are ``missing data``, naming them, with their units
but no cost; when ``ptb.train.txt`` alone is missing (the paper config on a machine with the valid and test
files only) the chain is probed on ``ptb.valid.txt`` standing in for it (:class:`gradmc.plan.planner.Planner`),
at the config's other sizes, and every job says so in its status and notes.
"""

from __future__ import annotations

import json
from pathlib import Path

from gradmc.plan.jobs import JOBS, TEXT_JOBS
from gradmc.plan.planner import Planner
from gradmc.plan.records import add_task, brief, finish, new_job

__all__ = ["plan_text"]


def _needed(p: Planner) -> list[str]:
    """The text jobs to record: those asked for and the upstream jobs that make their inputs."""
    wanted = [n for n in TEXT_JOBS if p.wants(n)]
    if "eval_text_ebm" in wanted:
        return list(TEXT_JOBS)
    return ["prepare_ptb", *(n for n in TEXT_JOBS[1:] if n in wanted)]


def _stand_in_note(p: Planner, manifest) -> str:
    vocab = p.paper["text_ebm"]["data"]["vocab_size"]
    got = f"{manifest['vocabulary_size']} words" if manifest else "the stand-in's own size"
    return (f"STAND-IN DATA: {p.ptb_stand_in} (the slice only; every other size is the config's). The vocabulary "
            f"is then {got} against the config's {vocab:,}, so the costs that grow with it (one-hot sentences, "
            "categorical GWG proposals over the vocabulary, the LM's softmax) are under-estimated: a lower bound")


def _manifest(p: Planner) -> dict | None:
    path = p.work / "data" / "ptb.npz.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def plan_text(p: Planner) -> dict[str, dict]:
    """The job records of the text EBM rules ``p`` needs (:func:`_needed`), by name, one task each."""
    names = _needed(p)
    jobs = {n: new_job(n, p.paper) for n in names}
    files = p.missing.get("ptb", [])
    stand_in = getattr(p, "ptb_stand_in", None)
    if files and not stand_in:
        for n, job in jobs.items():
            job.update(status="missing data", missing=list(files))
            add_task(job, n, JOBS[n].units(p.paper) if JOBS[n].units else 1, None)
        return jobs
    w = p.work
    data, model, lm = str(w / "data" / "ptb.npz"), str(w / "text_ebm" / "ebm.pt"), str(w / "text_ebm" / "lm.pt")
    inputs = {"prepare_ptb": {}, "train_text_ebm": {"data": data}, "train_text_lm": {"data": data},
              "eval_text_ebm": {"data": data, "model": model, "lm": lm}}
    made = {"prepare_ptb": data, "train_text_ebm": model, "train_text_lm": lm}
    failed: dict[str, str] = {}
    for n in names:
        job = jobs[n]
        upstream = [u for u in JOBS[n].after if u in failed or not _exists(made.get(u))]
        if upstream:
            res = {"status": "not run", "error": f"no input from the {', '.join(upstream)} probe"}
        else:
            res = p.probe(n, [], inputs[n])
        if res["status"] != "ok":
            failed[n] = res.get("error") or res["status"]
        job["probes"].append({"class": [], **brief(res)})
        add_task(job, n, JOBS[n].units(p.paper) if JOBS[n].units else 1, res)
    if stand_in:
        note = _stand_in_note(p, _manifest(p))
        for job in jobs.values():
            job.update(missing=list(files), stand_in=stand_in)
            job["notes"].append(note)
    return {n: finish(job) for n, job in jobs.items()}


def _exists(path: str | None) -> bool:
    return path is None or Path(path).is_file()
