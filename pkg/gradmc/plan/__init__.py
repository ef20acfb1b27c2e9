"""``gradmc plan``: paper scale costed before it is paid for.

Every job of a config's Snakemake DAG (:mod:`gradmc.plan.dag`) is run on a bounded *slice*
(:mod:`gradmc.plan.jobs`), each probe in a child process whose peak memory is read (:mod:`gradmc.plan.probe`), in
DAG order (:mod:`gradmc.plan.schedule`); the costs are extrapolated to the config's sizes and summed up
(:mod:`gradmc.plan.extrapolate`), and written as ``plan.md`` and ``plan.json`` (:mod:`gradmc.plan.report`);
:mod:`gradmc.plan.slurm` writes a SLURM profile's resources from a plan. :func:`gradmc.plan.slice.make_plan`
runs it all; :mod:`gradmc.plan.cli` is the command.
"""
