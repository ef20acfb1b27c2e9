"""The plan of the GWG Table 2 EBM jobs: ``prepare_image_dataset`` (one job per data set), ``train_ebm`` and
``ais_ebm`` (one job per data set and sampler): the DAG's jobs of these rules (:attr:`Planner.dag`), their
wildcards, inputs and outputs.

One probe chain per data set whose files are present: prepare it, train the GWG model a few iterations, run a
few AIS levels on that model. The other samplers' runs are costed as the GWG run of the same data set (same network,
same AIS; under ``equal_time`` they train for the GWG run's seconds). Every task names its own DAG job
(``train_ebm[frey/GWG]``); what it waits for is the DAG's.
"""

from __future__ import annotations

from pathlib import Path

from gradmc.config import for_dataset
from gradmc.plan.jobs import JOBS
from gradmc.plan.planner import Planner
from gradmc.plan.records import add_task, brief, finish, new_job

__all__ = ["plan_ebm", "EBM_JOBS"]

#: The rules :func:`plan_ebm` costs, upstream first.
EBM_JOBS = ("prepare_image_dataset", "train_ebm", "ais_ebm")

_TRAIN_NOTE = ("includes the validation AIS (validation_runs x (levels x the ais_ebm probe's seconds per level + rows "
               "x its seconds per row))")
_EQUAL_TIME_NOTE = ("equal_time: each Gibbs-1 run trains for its GWG run's seconds, so it is costed as that GWG run "
                    "(and waits for it); Gibbs-1 was not probed separately")
_AIS_NOTES = ("Gibbs-1 models are costed as the GWG model of the same data set (same network, same AIS)",
              "fixed part: f(x) of the test rows and of the hard bound's rows (training images + replay buffer), "
              "timed on 1024 rows and scaled by the row count")


def _probe_data_set(p: Planner, jobs: dict, prep: dict, train: dict, ais: dict) -> dict | None:
    """Prepare, train and AIS probes of one data set (``jobs``: its DAG jobs by rule, the GWG run's for training
    and AIS); its prepare task. Returns the train and AIS results, or None when the data set is missing or its
    preparation failed."""
    pj, tj, aj = (jobs[rule] for rule in EBM_JOBS)
    ds = pj.wildcards["dataset"]
    files = p.missing_for(pj)
    if files:
        for job in (prep, train, ais):
            job["missing"] += [f"{ds}: {f}" for f in files]
        add_task(prep, f"prepare {ds}", 1, None, key=pj.key)
        return None
    res = p.probe("prepare_image_dataset", [ds], {}, pj)
    prep["probes"].append({"class": [ds], **brief(res)})
    add_task(prep, f"prepare {ds}", 1, res, key=pj.key)
    if tj is None:
        return None
    data = p.inputs(tj)["data"]
    if res["status"] != "ok" or not Path(data).is_file():
        return None
    tr = p.probe("train_ebm", [ds, "GWG"], {"data": data}, tj)
    train["probes"].append({"class": [ds, "GWG"], **brief(tr)})
    model = tr.get("outputs", {}).get("model")
    ar = {"status": "not run", "error": "no trained model from the train_ebm probe"}
    if tr["status"] == "ok" and model and aj is not None:
        ar = p.probe("ais_ebm", [ds, "GWG"], {**p.inputs(aj), "model": model}, aj)
    ais["probes"].append({"class": [ds, "GWG"], **brief(ar)})
    return {"train": tr, "ais": ar}


def _validation_seconds(ar: dict) -> float:
    d = ar["detail"]
    per_run = d["validation_levels"] * ar["per_unit"] + d["validation_rows"] * d["seconds_per_row"]
    return d["validation_runs"] * per_run


def plan_ebm(p: Planner) -> dict[str, dict]:
    """The job records of prepare_image_dataset, train_ebm and ais_ebm, by rule: one task per DAG job (data set /
    data set and sampler), each with its scheduling key."""
    prep, train, ais = (new_job(n, p.paper) for n in EBM_JOBS)
    spec = p.paper["ebm"]
    dag = {rule: p.jobs_of(rule) for rule in EBM_JOBS}
    runs = [(j.wildcards["dataset"], j.wildcards["sampler"]) for j in dag["train_ebm"]]
    done = {}
    for pj in dag["prepare_image_dataset"]:
        ds = pj.wildcards["dataset"]
        gwg = {rule: next((j for j in dag[rule] if j.wildcards == {"dataset": ds, "sampler": "GWG"}), None)
               for rule in EBM_JOBS[1:]}
        if (m := _probe_data_set(p, {"prepare_image_dataset": pj, **gwg}, prep, train, ais)) is not None:
            done[ds] = m
    for rule, job in (("train_ebm", train), ("ais_ebm", ais)):
        key = "train" if rule == "train_ebm" else "ais"
        for dj in dag[rule]:
            ds, sampler = dj.wildcards["dataset"], dj.wildcards["sampler"]
            units = JOBS[rule].units({**p.paper, "ebm": {**spec, key: for_dataset(spec[key], ds)}})
            m = done.get(ds)
            add_task(job, f"{rule} {ds}/{sampler}", units, m[key] if m else None, key=dj.key)
    for ds, m in done.items():
        tr, ar = m["train"], m["ais"]
        if tr["status"] == "ok" and ar["status"] == "ok":
            valid = _validation_seconds(ar)
            for task in train["tasks"]:
                if task["label"] == f"train_ebm {ds}/GWG":
                    task["seconds"] += valid
                    task["validation_s"] = valid
    if spec["equal_time"]:
        train["notes"].append(_EQUAL_TIME_NOTE)
    train["notes"].append(_TRAIN_NOTE)
    ais["notes"] += list(_AIS_NOTES)
    for ds, sampler in runs:  # the other samplers: the GWG run's numbers of the same data set
        if sampler != "GWG" and ds in done:
            for job in (train, ais):
                twin = next(t for t in job["tasks"] if t["label"].endswith(f" {ds}/GWG"))
                mine = next(t for t in job["tasks"] if t["label"].endswith(f" {ds}/{sampler}"))
                mine.update({k: twin[k] for k in ("seconds", "per_unit_s", "fixed_s", "peak_rss_mb", "validation_s")
                             if k in twin})
    return {n: finish(j) for n, j in zip(EBM_JOBS, (prep, train, ais), strict=True)}
