"""The plan of the GWG App. J text EBM jobs: ``prepare_ptb``, ``train_text_ebm``, ``train_text_lm`` and
``eval_text_ebm`` (one DAG job each; what each reads and waits for is the DAG's).

One probe chain: prepare PTB, train the EBM a few iterations (timed in parts, as the image EBM:
:func:`gradmc.plan.probe._train_text_ebm`), train the LM 5 and 10 iterations, evaluate those two models at 6
and 12 AIS levels. When PTB files are missing the four jobs are ``missing data``, naming them, with their units
but no cost; when ``ptb.train.txt`` alone is missing (the paper config on a machine with the valid and test
files only) the chain is probed on ``ptb.valid.txt`` standing in for it (:class:`gradmc.plan.planner.Planner`),
at the config's other sizes, and every job says so in its status and notes.
"""

from __future__ import annotations

import json
from pathlib import Path

from gradmc.plan.jobs import JOBS
from gradmc.plan.planner import Planner
from gradmc.plan.records import add_task, brief, finish, new_job

__all__ = ["plan_text", "TEXT_JOBS"]

#: The text EBM's rules :func:`plan_text` costs, upstream first.
TEXT_JOBS = ("prepare_ptb", "train_text_ebm", "train_text_lm", "eval_text_ebm")


def _stand_in_note(p: Planner, manifest) -> str:
    vocab = p.paper["text_ebm"]["data"]["vocab_size"]
    got = f"{manifest['vocabulary_size']} words" if manifest else "the stand-in's own size"
    return (f"STAND-IN DATA: {p.ptb_stand_in} (the slice only; every other size is the config's). The vocabulary "
            f"is then {got} against the config's {vocab:,}, so the costs that grow with it (one-hot sentences, "
            "categorical GWG proposals over the vocabulary, the LM's softmax) are under-estimated: a lower bound")


def _manifest(p: Planner) -> dict | None:
    prepare = next((j for j in p.dag if j.rule == "prepare_ptb"), None)
    if prepare is None:
        return None
    path = Path(p.outputs(prepare)[0] + ".json")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def plan_text(p: Planner) -> dict[str, dict]:
    """The job records of the text EBM rules ``p`` plans (:meth:`Planner.wants`), by name, one task each."""
    dag = {j.rule: j for j in p.dag if j.rule in TEXT_JOBS and p.wants(j.rule)}
    names = [n for n in TEXT_JOBS if n in dag]
    jobs = {n: new_job(n, p.paper) for n in names}
    files = p.missing.get("ptb", [])
    stand_in = getattr(p, "ptb_stand_in", None)
    if files and not stand_in:
        for n, job in jobs.items():
            job.update(status="missing data", missing=list(files))
            add_task(job, n, JOBS[n].units(p.paper) if JOBS[n].units else 1, None)
        return jobs
    failed: dict[str, str] = {}
    by_id = {j.jobid: j for j in p.dag}
    for n in names:
        job, inputs = jobs[n], p.inputs(dag[n])
        upstream = [by_id[a].rule for a in dag[n].after if by_id[a].rule in TEXT_JOBS and (
            by_id[a].rule in failed or not Path(p.outputs(by_id[a])[0]).is_file())]
        if upstream:
            res = {"status": "not run", "error": f"no input from the {', '.join(upstream)} probe"}
        else:
            res = p.probe(n, [], inputs, dag[n])
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
