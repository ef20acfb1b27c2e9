"""``gradmc plan``: paper scale you can trust before you pay for it.

The jobs of a config (normally ``config/paper.yaml``), what each reads and what it waits for are Snakemake's DAG
(:mod:`gradmc.plan.dag`). Every job is run on a bounded *slice* (:mod:`gradmc.plan.jobs` says which config keys
are lengths, shortened in the slice, and which set memory, kept at the config's value; a standard experiment's
from its registry ``META['plan']``), each probe in a child process whose peak resident memory is read
(:mod:`gradmc.plan.probe`; a job run once at full size is run by Snakemake and read from its ``benchmark:``
record), in DAG order (:mod:`gradmc.plan.schedule`, :mod:`gradmc.plan.ebm_jobs`, :mod:`gradmc.plan.text_jobs`);
the per-unit costs are extrapolated to the config's sizes (:mod:`gradmc.plan.extrapolate`), summed up with the
makespan over the DAG's jobs (:mod:`gradmc.plan.summary`) and written as ``plan.md`` and ``plan.json``
(:mod:`gradmc.plan.report`); :mod:`gradmc.plan.slurm` writes the SLURM profile's resources from a plan.
:func:`gradmc.plan.slice.make_plan` runs it all; :mod:`gradmc.plan.cli` is the command.
"""
