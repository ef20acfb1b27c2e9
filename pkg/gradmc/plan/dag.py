"""The pipeline's DAG of jobs, as Snakemake builds it for a config: the plan's source of jobs, edges and inputs.

:func:`pipeline_dag` runs ``python -m gradmc.plan.dag`` in a child process (Snakemake changes the working
directory and its logging while it builds a DAG), which builds the DAG through Snakemake's Python API as
``snakemake --dry-run --forceall --d3dag`` does and prints its jobs as JSON. A new rule is a job of the plan
once Snakemake schedules it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from gradmc.errors import InputError

__all__ = ["DagJob", "pipeline_dag", "upstream", "nearest", "REPO_ROOT"]

#: The repository root (the folder of the ``Snakefile``) of an editable or source checkout.
REPO_ROOT = Path(__file__).resolve().parents[3]
#: Wall seconds before the child building the DAG is killed.
DAG_TIMEOUT_S = 300.0


@dataclass(frozen=True)
class DagJob:
    """One job of the pipeline's DAG.

    Attributes:
        jobid: Snakemake's job id (unique in one DAG).
        rule: the rule's name.
        wildcards: wildcard name -> value (empty for a rule without wildcards).
        inputs: named input -> path (relative to the working directory, as the rule writes it); an input that is
            a list of paths (or unnamed) is left out.
        outputs: every output path.
        after: the job ids whose outputs this job reads.
        benchmark: the rule's ``benchmark:`` file, or None.
        priority: the job's Snakemake priority (ready jobs start in its order, higher first).
    """

    jobid: int
    rule: str
    wildcards: dict
    inputs: dict
    outputs: tuple
    after: tuple
    benchmark: str | None = None
    priority: int = 0

    @property
    def key(self) -> str:
        """The job's scheduling key: the rule, or ``rule[v1/v2]`` for a rule with wildcards (their values in the
        rule's order): ``train_ebm[frey/GWG]``."""
        return f"{self.rule}[{'/'.join(str(v) for v in self.wildcards.values())}]" if self.wildcards else self.rule


def pipeline_dag(config_path: str | Path, *, workdir: str | Path | None = None) -> list[DagJob]:
    """Every job Snakemake would run for ``config_path`` from scratch (a dry run of the default target with
    ``--forceall``) with the repository's Snakefile, upstream first; paths are relative to ``workdir`` (default:
    the Snakefile's folder), Snakemake's working directory.

    Raises:
        gradmc.errors.InputError: no Snakefile; Snakemake could not build the DAG (its message: a missing input
            no rule makes, a config the schema refuses) or did not answer in :data:`DAG_TIMEOUT_S`.
    """
    snakefile = REPO_ROOT / "Snakefile"
    if not snakefile.is_file():
        raise InputError(f"no Snakefile at {snakefile}: gradmc plan reads the pipeline's DAG from it (run it from a "
                         "source checkout of gradmc)")
    workdir = Path(workdir) if workdir else snakefile.parent
    argv = [sys.executable, "-m", "gradmc.plan.dag", str(Path(config_path).resolve()), str(snakefile.resolve()),
            str(Path(workdir).resolve())]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=DAG_TIMEOUT_S, env=env, check=False)
    except subprocess.TimeoutExpired:
        raise InputError(f"Snakemake did not build the DAG of {config_path} in {DAG_TIMEOUT_S:.0f} s") from None
    if done.returncode != 0:
        lines = [ln for ln in done.stderr.strip().splitlines() if ln.strip()]
        raise InputError(f"Snakemake could not build the DAG of {config_path}: "
                         + (" | ".join(lines[-6:]) if lines else f"exit {done.returncode}"))
    return [DagJob(j["jobid"], j["rule"], j["wildcards"], j["inputs"], tuple(j["outputs"]), tuple(j["after"]),
                   j["benchmark"], j["priority"]) for j in json.loads(done.stdout.strip().splitlines()[-1])]


def _ancestors(jobs: list[DagJob], job: DagJob, stop=None) -> list[DagJob]:
    """The jobs ``job`` waits for, directly or through others, in DAG order; the search does not go past a job
    that satisfies ``stop`` (a predicate; None: it goes through every job)."""
    by_id = {j.jobid: j for j in jobs}
    seen: set[int] = set()
    todo = list(job.after)
    while todo:
        jid = todo.pop()
        if jid not in seen:
            seen.add(jid)
            if stop is None or not stop(by_id[jid]):
                todo.extend(by_id[jid].after)
    return [j for j in jobs if j.jobid in seen]


def upstream(jobs: list[DagJob], job: DagJob) -> list[DagJob]:
    """Every job ``job`` waits for, directly or through others (its ancestors in the DAG), in DAG order."""
    return _ancestors(jobs, job)


def nearest(jobs: list[DagJob], job: DagJob, keep) -> list[DagJob]:
    """The jobs ``job`` waits for that satisfy ``keep`` (a predicate), looking through the jobs that do not:
    the plan's edges between the jobs it costs, with the uncosted jobs (fetches) between them skipped."""
    return [j for j in _ancestors(jobs, job, keep) if keep(j)]


def _build(config_path: str, snakefile: str, workdir: str) -> list[dict]:
    """The DAG as JSON-able dicts, built in this process (the child of :func:`pipeline_dag`)."""
    from snakemake.api import SnakemakeApi
    from snakemake.settings.enums import Quietness
    from snakemake.settings.types import ConfigSettings, DAGSettings, OutputSettings, ResourceSettings, StorageSettings

    with SnakemakeApi(OutputSettings(quiet={Quietness.ALL})) as api:
        wf = api.workflow(resource_settings=ResourceSettings(cores=1),
                          config_settings=ConfigSettings(configfiles=[Path(config_path)]),
                          storage_settings=StorageSettings(), snakefile=Path(snakefile), workdir=Path(workdir))
        dag_api = wf.dag(dag_settings=DAGSettings(forceall=True))
        workflow = dag_api.workflow_api._workflow  # what DAGApi.printd3dag drives; no public accessor of the jobs
        workflow._prepare_dag(forceall=True, ignore_incomplete=True, lock_warn_only=True)
        workflow._build_dag()
        dag = workflow.dag
        flat = [job for level in dag.toposorted() for job in sorted(level, key=dag.jobid)]
        out = []
        for job in flat:
            inputs = {name: str(value) for name, value in job.input.items() if isinstance(value, (str, os.PathLike))}
            out.append({"jobid": dag.jobid(job), "rule": job.rule.name, "wildcards": dict(job.wildcards_dict),
                        "inputs": inputs, "outputs": [str(f) for f in job.output],
                        "after": sorted(dag.jobid(dep) for dep in dag.dependencies[job]),
                        "benchmark": str(job.benchmark) if job.benchmark else None,
                        # the rule's priority for this job (job.priority needs a scheduling DAG)
                        "priority": int(job.rule.expand_priority(job.wildcards_dict, job.input, job.attempt))})
        return out


if __name__ == "__main__":
    print(json.dumps(_build(*sys.argv[1:4])))
