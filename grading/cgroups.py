"""One control group per sandbox: a memory limit the kernel counts (anonymous memory, page cache,
tmpfs, shared memory and memfds alike), a limit on processes and, where the CPU controller is
available, an equal share of the CPU (each sandbox weighs as much as any other, whichever grader
started it), on cgroup v2 or v1.

    >>> support = probe()          # doctest: +SKIP
    >>> group = Cgroup.create("lectorch-grade-x", memory_bytes=2**30, pids=256)  # doctest: +SKIP

v2 needs a cgroup where the grader may enable the memory and pids controllers for children (a
delegated one, e.g. ``systemd-run --user --scope -p Delegate=yes``); v1 needs write access to the
memory (and pids) hierarchies, which root has. :func:`probe` says which one works, or why none does.
"""

from __future__ import annotations

import os
import signal
import time
import uuid
from dataclasses import dataclass
from pathlib import Path


#: each sandbox's CPU weight (v1 cpu.shares, v2 cpu.weight): the defaults, so that under load a
#: sandbox with 200 spinning threads gets as much CPU as one with a single thread
CPU_SHARES = 1024
CPU_WEIGHT = 100


def _mounts() -> list[tuple[str, str, list[str]]]:
    out = []
    try:
        for line in Path("/proc/self/mounts").read_text().splitlines():
            parts = line.split()
            if len(parts) >= 4 and parts[2] in ("cgroup", "cgroup2"):
                out.append((parts[1], parts[2], parts[3].split(",")))
    except OSError:
        pass
    return out


def _own(controller: str | None) -> str | None:
    """This process's cgroup path in the hierarchy of ``controller`` (None: the v2 one)."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, names, path = line.split(":", 2)
        if (controller is None and names == "") or (controller and controller in names.split(",")):
            return path
    return None


def _v1_dir(controller: str) -> Path | None:
    for mount, kind, options in _mounts():
        if kind == "cgroup" and controller in options:
            own = _own(controller)
            if own is not None:
                return Path(mount) / own.lstrip("/")
    return None


def _v1_group(controller: str, name: str, limit_file: str, value: int) -> Path | None:
    """A new v1 cgroup ``name`` of ``controller`` with ``limit_file`` set to ``value`` (None when
    that hierarchy is not mounted or not ours to write)."""
    root = _v1_dir(controller)
    if root is None or not os.access(root, os.W_OK):
        return None
    group = root / name
    group.mkdir()
    try:
        (group / limit_file).write_text(str(value))
    except OSError:
        group.rmdir()
        raise
    return group


def _v2_dir() -> Path | None:
    for mount, kind, _ in _mounts():
        if kind == "cgroup2":
            own = _own(None)
            if own is not None and (Path(mount) / "cgroup.controllers").exists():
                return Path(mount) / own.lstrip("/")
    return None


@dataclass
class Cgroup:
    """A created control group: ``dirs`` are its folders (one per v1 hierarchy, one for v2)."""

    version: int
    memory: Path
    pids: Path | None
    cpu: Path | None = None

    @classmethod
    def create(cls, prefix: str, *, memory_bytes: int, pids: int) -> "Cgroup":
        name = f"{prefix}-{uuid.uuid4().hex[:12]}"
        v1 = _v1_dir("memory")
        if v1 is not None and os.access(v1, os.W_OK):
            memory = v1 / name
            memory.mkdir()
            try:
                (memory / "memory.limit_in_bytes").write_text(str(memory_bytes))
                swap = memory / "memory.memsw.limit_in_bytes"
                if swap.exists():  # no swapping out of the limit
                    swap.write_text(str(memory_bytes))
                pids_dir = cpu_dir = None  # one by one: a failure removes the groups made before it
                pids_dir = _v1_group("pids", name, "pids.max", pids)
                cpu_dir = _v1_group("cpu", name, "cpu.shares", CPU_SHARES)
            except OSError:
                cls(1, memory, pids_dir, cpu_dir).remove()
                raise
            return cls(1, memory, pids_dir, cpu_dir)
        v2 = _v2_dir()
        if v2 is None:
            raise OSError("no cgroup v1 memory hierarchy and no cgroup v2")
        enabled = set((v2 / "cgroup.subtree_control").read_text().split())
        try:
            offered = set((v2 / "cgroup.controllers").read_text().split())
        except OSError:
            offered = set()
        want = {"memory", "pids"} | ({"cpu"} & offered)
        if not want <= enabled:
            try:
                (v2 / "cgroup.subtree_control").write_text(" ".join(f"+{c}" for c in ("memory", "pids", "cpu") if c in want))
            except OSError as err:  # e.g. EBUSY: this cgroup holds processes (the grader itself)
                raise OSError(err.errno, f"cannot enable the memory and pids controllers under {v2} "
                              f"({err.strerror}); run the grader alone in a delegated cgroup whose "
                              "subtree_control has memory and pids") from None
        group = v2 / name
        group.mkdir()
        try:
            (group / "memory.max").write_text(str(memory_bytes))
            if (group / "memory.swap.max").exists():
                (group / "memory.swap.max").write_text("0")
            (group / "pids.max").write_text(str(pids))
            if (group / "cpu.weight").exists():
                (group / "cpu.weight").write_text(str(CPU_WEIGHT))
        except OSError:
            cls(2, group, None).remove()
            raise
        return cls(2, group, group, group if (group / "cpu.weight").exists() else None)

    def procs_files(self) -> list[str]:
        """The files a process writes its pid to, to enter this group (before it starts anything)."""
        return [str(d / "cgroup.procs") for d in self.dirs()]

    def dirs(self) -> list[Path]:
        """Its folders, one per hierarchy (v2: one)."""
        out = [self.memory]
        for d in (self.pids, self.cpu):
            if d is not None and d not in out:
                out.append(d)
        return out

    def oom_kills(self) -> int:
        """Processes the kernel killed for exceeding the memory limit."""
        name = "memory.events" if self.version == 2 else "memory.oom_control"
        try:
            for line in (self.memory / name).read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
        except (OSError, ValueError):
            pass
        return 0

    def peak(self) -> int:
        name = "memory.peak" if self.version == 2 else "memory.max_usage_in_bytes"
        try:
            return int((self.memory / name).read_text())
        except (OSError, ValueError):
            return 0

    def pids_now(self) -> list[int]:
        out: set[int] = set()
        for folder in self.dirs():
            try:
                out.update(int(p) for p in (folder / "cgroup.procs").read_text().split())
            except (OSError, ValueError):
                pass
        return sorted(out)

    def kill_all(self, seconds: float = 5.0) -> bool:
        """SIGKILL every process of the group until none is left; True when it is empty."""
        deadline = time.monotonic() + seconds
        if self.version == 2 and (self.memory / "cgroup.kill").exists():
            try:
                (self.memory / "cgroup.kill").write_text("1")
            except OSError:
                pass
        while True:
            left = self.pids_now()
            if not left:
                return True
            if time.monotonic() > deadline:
                return False
            for pid in left:  # a fork between the read and the kill lands in the group: read again
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            time.sleep(0.02)

    def remove(self, seconds: float = 5.0) -> None:
        for folder in self.dirs():
            for _ in range(int(seconds / 0.05)):
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:  # busy: the last killed processes are being reaped
                    time.sleep(0.05)


def remove_stale(prefix: str = "lectorch-grade-") -> int:
    """Remove the empty cgroups ``<prefix><pid>-…`` left by graders that were killed (their pid is
    gone); a cgroup still holding a process is never removed (rmdir refuses it). Returns how many."""
    removed = 0
    folders = [d for d in (_v1_dir("memory"), _v1_dir("pids"), _v1_dir("cpu"), _v2_dir()) if d is not None]
    for folder in folders:
        try:
            entries = list(folder.glob(f"{prefix}*"))
        except OSError:
            continue
        for entry in entries:
            pid = entry.name[len(prefix):].split("-", 1)[0]
            if not pid.isdigit() or Path(f"/proc/{pid}").exists():
                continue
            try:
                entry.rmdir()
                removed += 1
            except OSError:
                pass
    return removed


def probe(memory_bytes: int = 64 * 2**20) -> tuple[str | None, str]:
    """("v1"/"v2", description) when a sandbox can get its own cgroup here, else (None, why not)."""
    try:
        group = Cgroup.create("lectorch-grade-probe", memory_bytes=memory_bytes, pids=16)
    except OSError as err:
        return None, (f"cgroups unavailable ({err.strerror or err}): memory is watched by polling (PSS), "
                      "which misses tmpfs, shared memory and memfds")
    try:
        kind = f"v{group.version}"
        what = "memory.max" if group.version == 2 else "memory.limit_in_bytes"
        pids = "pids.max" if group.pids is not None else "no pids controller (RLIMIT_NPROC only)"
        cpu = "an equal CPU share" if group.cpu is not None else "no CPU controller (the kernel's default sharing)"
        return kind, f"cgroup {kind} per sandbox ({what}, counting tmpfs, shared memory and memfds; {pids}; {cpu})"
    finally:
        group.remove()
