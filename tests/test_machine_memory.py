"""The default shard memory budget reads the smallest of physical memory, the cgroup v2 / v1 limits and the
SLURM allocation, and says which one set it (gradmc.distributed.machine_memory); sizes in messages are
readable at every scale. The cgroup files are written under a temporary folder, never read from the machine."""

from __future__ import annotations

import pytest

from gradmc.distributed import machine_memory as mm
from gradmc.distributed import memory_split
from gradmc.distributed.machine_memory import format_bytes
from gradmc.distributed.memory_split import resolve_budget_with_source, resolve_memory_budget

GIB = 1 << 30


@pytest.fixture
def cgroups(tmp_path, monkeypatch):
    """A fake /sys/fs/cgroup (returned) and /proc/self/cgroup, and no SLURM variables."""
    root = tmp_path / "cgroup"
    root.mkdir()
    monkeypatch.setattr(mm, "CGROUP_ROOT", root)
    monkeypatch.setattr(mm, "PROC_CGROUP", tmp_path / "proc_self_cgroup")
    for name in ("SLURM_MEM_PER_NODE", "SLURM_MEM_PER_CPU", "SLURM_CPUS_ON_NODE", memory_split.MEMORY_ENV_VAR):
        monkeypatch.delenv(name, raising=False)
    return root


def _write(path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_cgroup_v2_takes_the_smallest_limit_of_the_own_cgroup_and_those_above(cgroups):
    assert mm.cgroup_v2_limit() is None  # no files: no limit
    _write(mm.PROC_CGROUP, "0::/job_7/step_0\n")
    _write(cgroups / "job_7" / "step_0" / "memory.max", "max\n")
    _write(cgroups / "job_7" / "memory.max", f"{2 * GIB}\n")
    assert mm.cgroup_v2_limit() == (2 * GIB, f"the cgroup v2 limit, {cgroups / 'job_7' / 'memory.max'}")
    _write(cgroups / "job_7" / "step_0" / "memory.max", f"{GIB}\n")
    assert mm.cgroup_v2_limit() == (GIB, f"the cgroup v2 limit, {cgroups / 'job_7' / 'step_0' / 'memory.max'}")
    _write(mm.PROC_CGROUP, "0::/\n")  # a container's own namespace: the root file
    _write(cgroups / "memory.max", f"{3 * GIB}\n")
    assert mm.cgroup_v2_limit() == (3 * GIB, f"the cgroup v2 limit, {cgroups / 'memory.max'}")


def test_cgroup_v1_ignores_its_unlimited_value(cgroups):
    _write(mm.PROC_CGROUP, "7:cpu,cpuacct:/a\n5:memory:/slurm/uid_1\n0::/\n")
    _write(cgroups / "memory" / "slurm" / "uid_1" / "memory.limit_in_bytes", "9223372036854771712\n")
    assert mm.cgroup_v1_limit() is None
    _write(cgroups / "memory" / "memory.limit_in_bytes", f"{GIB}\n")
    assert mm.cgroup_v1_limit() == (GIB, f"the cgroup v1 limit, {cgroups / 'memory' / 'memory.limit_in_bytes'}")


def test_slurm_allocation_per_node_or_per_cpu():
    assert mm.slurm_limit({}) is None
    assert mm.slurm_limit({"SLURM_MEM_PER_NODE": "4096"}) == (4 * GIB, "the SLURM allocation, SLURM_MEM_PER_NODE=4096")
    per_cpu = {"SLURM_MEM_PER_CPU": "1000", "SLURM_CPUS_ON_NODE": "4"}
    assert mm.slurm_limit(per_cpu) == (4000 << 20,
                                       "the SLURM allocation, SLURM_MEM_PER_CPU=1000 x SLURM_CPUS_ON_NODE=4")
    assert mm.slurm_limit({"SLURM_MEM_PER_NODE": "0", **per_cpu})[0] == 4000 << 20  # 0: the whole node
    assert mm.slurm_limit({"SLURM_MEM_PER_CPU": "1000"}) is None  # no CPU count: unknown


def test_default_budget_uses_the_smallest_source_and_names_it(cgroups, monkeypatch):
    monkeypatch.setattr(mm, "physical_memory_bytes", lambda: 64 * GIB)
    assert resolve_budget_with_source(None, workers=4) == (int(0.8 * 64 * GIB / 4), "0.8 of 64.0 GiB (physical "
                                                                                   "memory) over 4 workers")
    _write(mm.PROC_CGROUP, "0::/\n")
    _write(cgroups / "memory.max", f"{8 * GIB}\n")
    budget, source = resolve_budget_with_source(None, workers=4)
    assert budget == int(0.8 * 8 * GIB / 4)
    assert source == f"0.8 of 8.0 GiB (the cgroup v2 limit, {cgroups / 'memory.max'}) over 4 workers"
    monkeypatch.setenv("SLURM_MEM_PER_NODE", "4096")
    assert resolve_budget_with_source(None, workers=2) == (
        int(0.8 * 4 * GIB / 2), "0.8 of 4.0 GiB (the SLURM allocation, SLURM_MEM_PER_NODE=4096) over 2 workers")
    monkeypatch.setenv(memory_split.MEMORY_ENV_VAR, "512")  # the variable, then the option, win over any limit
    assert resolve_budget_with_source(None, workers=2) == (512 << 20, "GRADMC_SHARD_MEMORY_MB=512")
    assert resolve_budget_with_source(64, workers=2) == (64 << 20, "--shard-memory-mb 64")


def test_no_readable_limit_means_no_budget(cgroups, monkeypatch):
    monkeypatch.setattr(mm, "physical_memory_bytes", lambda: None)
    assert resolve_budget_with_source(None, workers=2) == (None, "no memory limit readable on this machine")
    assert resolve_memory_budget(None, workers=2) is None


def test_sizes_in_messages_are_never_zero_mib():
    assert [format_bytes(n) for n in (0, 1, 1023, 1024, 1536, (1 << 20) - 1, 300 << 20, 3 * GIB)] == [
        "0 bytes", "1 byte", "1023 bytes", "1.0 KiB", "1.5 KiB", "1.0 MiB", "300.0 MiB", "3.0 GiB"]
    assert format_bytes(64256) == "62.8 KiB"  # 62.75 KiB
