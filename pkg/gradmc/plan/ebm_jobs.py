"""The plan of the GWG Table 2 EBM jobs: ``prepare_image_dataset`` (one job per data set), ``train_ebm`` and
``ais_ebm`` (one job per data set and sampler).

One probe chain per data set whose files are present: prepare it, train the GWG model a few iterations, run a
few AIS levels on that model. Gibbs-1 runs are costed as the GWG run of the same data set (same network, same
AIS; under ``equal_time`` Gibbs-1 trains for its GWG run's seconds). Every task names its own job
(``train_ebm[frey/GWG]``) and the jobs it waits for, as the pipeline's wildcards do: a data set's training waits
for its own preparation only, its AIS for its own model only.
"""

from __future__ import annotations

from gradmc.config import for_dataset
from gradmc.plan.jobs import JOBS, ebm_runs
from gradmc.plan.planner import Planner
from gradmc.plan.records import add_task, brief, finish, job_key, new_job

__all__ = ["plan_ebm"]

_TRAIN_NOTE = ("includes the validation AIS (validation_runs x (levels x the ais_ebm probe's seconds per level + rows "
               "x its seconds per row))")
_EQUAL_TIME_NOTE = ("equal_time: each Gibbs-1 run trains for its GWG run's seconds, so it is costed as that GWG run "
                    "(and waits for it); Gibbs-1 was not probed separately")
_AIS_NOTES = ("Gibbs-1 models are costed as the GWG model of the same data set (same network, same AIS)",
              "fixed part: f(x) of the test rows and of the hard bound's rows (training images + replay buffer), "
              "timed on 1024 rows and scaled by the row count")


def _probe_data_set(p: Planner, ds: str, prep: dict, train: dict, ais: dict) -> dict | None:
    """Prepare, train and AIS probes of data set ``ds``; its prepare task. Returns the train and AIS results, or
    None when the data set is missing or its preparation failed."""
    prepare_key = job_key("prepare_image_dataset", ds)
    if f"images:{ds}" in p.missing:
        files = p.missing[f"images:{ds}"]
        for job in (prep, train, ais):
            job["missing"] += [f"{ds}: {f}" for f in files]
        add_task(prep, f"prepare {ds}", 1, None, key=prepare_key, after=[])
        return None
    res = p.probe("prepare_image_dataset", [ds])
    prep["probes"].append({"class": [ds], **brief(res)})
    add_task(prep, f"prepare {ds}", 1, res, key=prepare_key, after=[])
    out = p.work / "data" / "images" / f"{ds}.npz"
    if res["status"] != "ok" or not out.is_file():
        return None
    tr = p.probe("train_ebm", [ds, "GWG"], {"data": str(out)})
    train["probes"].append({"class": [ds, "GWG"], **brief(tr)})
    model = tr.get("outputs", {}).get("model")
    ar = {"status": "not run", "error": "no trained model from the train_ebm probe"}
    if tr["status"] == "ok" and model:
        ar = p.probe("ais_ebm", [ds, "GWG"], {"data": str(out), "model": model})
    ais["probes"].append({"class": [ds, "GWG"], **brief(ar)})
    return {"train": tr, "ais": ar}


def _validation_seconds(ar: dict) -> float:
    d = ar["detail"]
    per_run = d["validation_levels"] * ar["per_unit"] + d["validation_rows"] * d["seconds_per_row"]
    return d["validation_runs"] * per_run


def plan_ebm(p: Planner) -> tuple[dict, dict, dict]:
    """The job records of prepare_image_dataset, train_ebm and ais_ebm: one task per data set / (data set,
    sampler), each with its scheduling key and the keys it waits for."""
    prep, train, ais = (new_job(n, p.paper) for n in ("prepare_image_dataset", "train_ebm", "ais_ebm"))
    spec = p.paper["ebm"]
    runs = ebm_runs(p.paper)
    done = {ds: m for ds in spec["datasets"] if (m := _probe_data_set(p, ds, prep, train, ais)) is not None}
    for ds, sampler in runs:
        units_train, units_ais = (JOBS[job].units({**p.paper, "ebm": {**spec, key: for_dataset(spec[key], ds)}})
                                  for job, key in (("train_ebm", "train"), ("ais_ebm", "ais")))
        m = done.get(ds)
        tr, ar = (m["train"], m["ais"]) if m else (None, None)
        train_key = job_key("train_ebm", f"{ds}/{sampler}")
        waits = [job_key("prepare_image_dataset", ds)]
        if sampler != "GWG" and spec["equal_time"]:
            waits.append(job_key("train_ebm", f"{ds}/GWG"))  # --budget-from the GWG run's checkpoint
        add_task(train, f"train_ebm {ds}/{sampler}", units_train, tr, key=train_key, after=waits)
        add_task(ais, f"ais_ebm {ds}/{sampler}", units_ais, ar, key=job_key("ais_ebm", f"{ds}/{sampler}"),
                 after=[train_key])
        if tr and ar and tr["status"] == "ok" and ar["status"] == "ok":
            valid = _validation_seconds(ar)
            train["tasks"][-1]["seconds"] += valid
            train["tasks"][-1]["validation_s"] = valid
    if spec["equal_time"]:
        train["notes"].append(_EQUAL_TIME_NOTE)
    train["notes"].append(_TRAIN_NOTE)
    ais["notes"] += list(_AIS_NOTES)
    for ds, sampler in runs:  # Gibbs-1: the GWG run's numbers of the same data set
        if sampler != "GWG" and ds in done:
            for job in (train, ais):
                twin = next(t for t in job["tasks"] if t["label"].endswith(f" {ds}/GWG"))
                mine = next(t for t in job["tasks"] if t["label"].endswith(f" {ds}/{sampler}"))
                mine.update({k: twin[k] for k in ("seconds", "per_unit_s", "fixed_s", "peak_rss_mb") if k in twin})
    return finish(prep), finish(train), finish(ais)
