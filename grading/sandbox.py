"""Run one notebook with the harness in a sandbox, and leave nothing of it behind.

The sandbox is bubblewrap (no network, a private /tmp, a read-only view of the system and of
lectorch only, its own PID namespace, an unprivileged user per worker slot) inside its own cgroup
(memory and processes counted by the kernel), with rlimits (data memory, open files, file size,
CPU). Without bubblewrap it is a WEAK sandbox (same limits, the notebook can read your files).

    with sandbox.run(notebook_bytes, "00_x.ipynb", plan_items, inputs, limits=Limits(),
                     isolation=detect("auto")) as ran:
        ran.outcome, ran.out    # "ok" | "timeout" | "memory" | "output" | "crashed"; its output folder

The output folder exists inside the ``with`` block only (read it there, one record at a time).
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from grading import cgroups, harness
from grading.fstree import remove_tree, tree_size

HARNESS = Path(harness.__file__).resolve()
#: first on the sandbox's PYTHONPATH: stand-ins that skip a costly import nothing there needs
#: (see ``kernel_site/rfc3987_syntax.py``); read-only, like the harness
KERNEL_SITE = HARNESS.parent / "kernel_site"
#: uids of the sandboxes when the grader runs as root: each grader on the host takes a range of
#: :data:`UID_RANGE` uids (:func:`uid_base`), one user per worker slot, so that per-user limits
#: (RLIMIT_NPROC, key quotas) of one sandbox never count another's processes, whichever grader
#: started it
SANDBOX_UID = 1_900_000_000
UID_RANGE = 1024
UID_RANGES = 200_000
#: where graders take their uid ranges: one lock file per range, held (flock) while a grader runs
UID_LOCKS = ("/run/lectorch-grade", "/tmp/lectorch-grade-uids")
OUTPUT_TAIL = 64 * 1024          # bytes of the sandbox's stdout kept for messages
OUT_MAX = 512 * 2**20            # bytes the sandbox may write to its output folder (its tmpfs's size)
OUT_ENTRIES = 2_000              # files and folders it may make there
GRACE_S = 8                      # the grader kills a sandbox this long after its timeout, at most


@dataclass
class Limits:
    """Per notebook: ``timeout_s`` of wall time in all (kernel start, cells, answers), memory in
    bytes (the whole sandbox), processes and threads, open files, seconds per hidden case, and the
    threads of its math libraries (``OMP_NUM_THREADS``; 0: their default, one per core)."""

    timeout_s: float = 300
    memory_bytes: int = 4 * 2**30
    case_s: float = 30
    max_tasks: int = 256
    open_files: int = 256
    threads: int = 0

    def __post_init__(self) -> None:
        if not self.timeout_s > 0 or not self.memory_bytes > 0:
            raise ValueError("Limits: timeout_s and memory_bytes must be > 0")


@dataclass
class Isolation:
    mode: str                  # "bwrap" | "none"
    cgroup: str | None         # "v1" | "v2" | None
    description: str


@dataclass
class Ran:
    outcome: str
    detail: str
    out: Path
    report: dict = field(default_factory=dict)
    seconds: float = 0.0
    memory_peak: int = 0
    cleanup: str = ""       # what could not be cleaned up after it (set on leaving the ``with``)


def bwrap_works() -> bool:
    exe = shutil.which("bwrap")
    if exe is None:
        return False
    try:
        probe = subprocess.run([exe, "--ro-bind", "/", "/", "--unshare-pid", "--unshare-net", "--proc", "/proc",
                                "--dev", "/dev", "--die-with-parent", "true"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return probe.returncode == 0


def detect(isolation: str = "auto", *, use_cgroups: bool = True) -> Isolation:
    """The sandbox this machine allows: ``isolation`` is "auto", "bwrap" (required) or "none"."""
    if isolation not in ("auto", "bwrap", "none"):
        raise ValueError(f"isolation={isolation!r}: use 'auto', 'bwrap' or 'none'")
    if isolation == "auto":
        mode = "bwrap" if bwrap_works() else "none"
    elif isolation == "bwrap" and not bwrap_works():
        raise ValueError("bubblewrap (bwrap) is not usable here: install it, or pass --isolation none")
    else:
        mode = isolation
    kind, cg = cgroups.probe() if use_cgroups else (None, "cgroups not used: memory is watched by polling (PSS)")
    if kind is not None:
        cgroups.remove_stale()
    out = (f"output folder on its own {OUT_MAX // 2**20} MiB tmpfs" if tmpfs_works() else
           "output folder on the temporary folder's disk (its allocated blocks polled)")
    if mode == "bwrap":
        who = ("as an unprivileged user per worker (a uid range per grader)" if os.geteuid() == 0 else
               "in a user namespace")
        text = (f"bubblewrap: own PID, network, IPC and mount namespaces {who}; read-only system, Python and "
                f"lectorch only; private /tmp; {out}; {cg}; a fresh session keyring, key system calls denied; "
                "rlimits (data memory, processes, open files, CPU, file size)")
    else:
        root = " (as root: the process limit does not apply)" if os.geteuid() == 0 and kind is None else ""
        text = ("WEAK (no bubblewrap): process group, private temporary folder, scrubbed environment, "
                f"{out}, {cg}, rlimits{root}; the notebook CAN read your files, use the network and signal your "
                "processes")
    return Isolation(mode, kind, text)


def _python_roots() -> list[Path]:
    """Folders the kernel needs read-only: the interpreter, the venv, site-packages, lectorch."""
    package = Path(importlib.util.find_spec("lectorch").origin).resolve().parent  # without importing torch
    roots = {Path(sys.base_prefix), Path(sys.prefix), package}
    roots.add(Path(os.path.realpath(sys.executable)).parent.parent)
    for entry in sys.path:
        p = Path(entry)
        if entry and p.is_dir() and "site-packages" in p.parts:
            roots.add(p.resolve())
    out: list[Path] = []
    for r in sorted(roots, key=lambda p: len(p.parts)):
        if str(r).startswith(("/usr/", "/etc/")) or any(r.is_relative_to(o) for o in out):
            continue
        out.append(r)
    return out


def _env(home: str, tmp: str, runtime: str, pythonpath: str = "", threads: int = 0) -> dict[str, str]:
    venv_bin = str(Path(sys.prefix) / "bin")
    env = {
        "PATH": f"{venv_bin}:/usr/local/bin:/usr/bin:/bin", "HOME": home, "TMPDIR": tmp,
        "USER": "student", "LOGNAME": "student",  # the sandbox's uid has no passwd entry
        "JUPYTER_RUNTIME_DIR": runtime, "JUPYTER_PLATFORM_DIRS": "1", "IPYTHONDIR": f"{home}/.ipython",
        "MPLCONFIGDIR": f"{home}/.matplotlib", "MPLBACKEND": "Agg", "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1", "LANG": "C.UTF-8", "VIRTUAL_ENV": sys.prefix,
    }
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    if threads:  # N sandboxes at once: each its share of the cores (spinning OpenMP threads that
        # outnumber the cores cost more CPU than they save)
        env["OMP_NUM_THREADS"] = env["MKL_NUM_THREADS"] = str(threads)
    for name in ("LECTORCH_DEVICE", "CUDA_VISIBLE_DEVICES"):  # the instructor's choices, not secrets
        if name in os.environ:
            env[name] = os.environ[name]
    return env


def _bwrap_command(box: Path, env: dict[str, str], memory_bytes: int, public: list[Path] = ()) -> list[str]:
    cmd = ["bwrap", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
           "--die-with-parent", "--new-session", "--clearenv"]
    if os.geteuid() != 0:
        cmd.append("--unshare-user")
    for name, value in env.items():
        cmd += ["--setenv", name, value]
    cmd += ["--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64"):
        if os.path.islink(top):
            cmd += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            cmd += ["--ro-bind", top, top]
    # the private /tmp first: the Python roots may live under /tmp (a checkout there), and a later
    # tmpfs would hide them
    cmd += ["--perms", "1777", "--size", str(memory_bytes), "--tmpfs", "/tmp"]
    made: set[Path] = set()
    for root in _python_roots():
        for parent in reversed(root.parents[:-1]):  # traversable by the sandbox's user (/root is 0700)
            if parent not in made:
                made.add(parent)
                cmd += ["--perms", "0755", "--dir", str(parent)]
        cmd += ["--ro-bind", str(root), str(root)]
    # a writable /dev/shm (multiprocessing, DataLoader workers): its pages count in the cgroup
    cmd += ["--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--size", str(memory_bytes), "--tmpfs", "/dev/shm"]
    for dev in sorted(Path("/dev").glob("nvidia*")):  # a GPU box: the kernel may use the GPU
        cmd += ["--dev-bind", str(dev), str(dev)]
    cmd += ["--perms", "0755", "--dir", "/grade",
            "--ro-bind", str(box / "in"), "/grade/in", "--bind", str(box / "out"), "/grade/out",
            "--ro-bind", str(HARNESS), "/grade/harness.py", "--ro-bind", str(KERNEL_SITE), "/grade/site",
            "--chdir", "/tmp",
            *(["--perms", "0755", "--dir", "/grade/public"] if public else []),
            *[a for m in public for a in ("--ro-bind", str(m), f"/grade/public/{m.name}")],
            sys.executable, "/grade/harness.py", "/grade/in/plan.json"]
    return cmd


_UID_LOCK = threading.Lock()
_UID_BASE: int | None = None
_UID_FD: int | None = None


def uid_base() -> int:
    """The first uid of this grader's range, taken once per process: the first range whose lock
    file (in :data:`UID_LOCKS`) no other live grader holds, searched from a start that the PID
    namespace sets (graders in two containers, which share the host's uids but not its /run,
    start far apart). The kernel drops the lock when the grader ends, however it ends."""
    global _UID_BASE, _UID_FD
    import fcntl

    with _UID_LOCK:
        if _UID_BASE is not None:
            return _UID_BASE
        for folder in UID_LOCKS:
            try:
                os.makedirs(folder, mode=0o755, exist_ok=True)
                info = os.stat(folder, follow_symlinks=False)
                if not os.path.isdir(folder) or info.st_uid != os.geteuid() or info.st_mode & 0o022:
                    continue  # a folder someone else could swap locks in
            except OSError:
                continue
            try:
                namespace = os.stat("/proc/self/ns/pid").st_ino
            except OSError:
                namespace = 0
            start = (namespace * 40_503) % (UID_RANGES // 8) * 8
            for step in range(UID_RANGES):
                index = (start + step) % UID_RANGES
                fd = os.open(os.path.join(folder, f"uids-{index}.lock"), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    os.close(fd)
                    continue
                _UID_BASE, _UID_FD = SANDBOX_UID + index * UID_RANGE, fd
                return _UID_BASE
        raise RuntimeError(f"no free range of sandbox uids (lock files in {' or '.join(UID_LOCKS)})")


def sandbox_uid(slot: int) -> int:
    if not 0 <= slot < UID_RANGE:
        raise ValueError(f"worker slot {slot}: at most {UID_RANGE} sandboxes at a time (--jobs)")
    return uid_base() + slot


_libc = ctypes.CDLL(None, use_errno=True)
_MNT_DETACH = 2
_MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 2, 4, 8


def _mount_tmpfs(path: Path, size: int, uid: int | None) -> bool:
    """A tmpfs of ``size`` bytes on ``path`` (root only): every byte written there, sparse or
    preallocated, is a page the kernel counts against its size and the writer's memory cgroup."""
    owner = 0 if uid is None else uid
    options = f"size={size},nr_inodes={OUT_ENTRIES * 2},mode=0700,uid={owner},gid={owner}".encode()
    flags = _MS_NOSUID | _MS_NODEV | _MS_NOEXEC
    return _libc.mount(b"tmpfs", os.fsencode(str(path)), b"tmpfs", ctypes.c_ulong(flags), options) == 0


def _unmount(path: Path) -> None:
    """Detach a tmpfs this grader mounted (its pages are freed once no process holds a file of it)."""
    for _ in range(4):  # mounted twice by a race? detach until it is a plain folder
        if not os.path.ismount(path):
            return
        if _libc.umount2(os.fsencode(str(path)), _MNT_DETACH) != 0:
            return


_TMPFS: bool | None = None


def tmpfs_works() -> bool:
    """True when this grader can give each sandbox's output folder a tmpfs of its own (root)."""
    global _TMPFS
    if _TMPFS is None:
        _TMPFS = False
        if os.geteuid() == 0:
            probe = Path(tempfile.mkdtemp(prefix="lectorch-tmpfs-probe-"))
            try:
                if _mount_tmpfs(probe, 2**20, None):
                    _TMPFS = True
                    _unmount(probe)
            finally:
                with contextlib.suppress(OSError):
                    probe.rmdir()
    return _TMPFS


#: syscall numbers of add_key, request_key, keyctl, and the audit arch, per machine
_KEY_SYSCALLS = {"x86_64": (0xC000003E, (248, 249, 250)), "aarch64": (0xC00000B7, (217, 218, 219))}

#: the sandbox's first process (run with ``python -S -c``): enters the cgroup(s) named by its first
#: arguments, joins a fresh anonymous session keyring (the grader's own, e.g. a login's Kerberos
#: tickets, stays behind), installs a seccomp filter that denies the key system calls (and any
#: other machine's system call ABI), then becomes the command. No Python preexec_fn: the grader
#: has threads.
_PRELUDE = r"""
import ctypes, os, platform, struct, sys
n = int(sys.argv[1])
for path in sys.argv[2:2 + n]:
    with open(path, "w") as f:
        f.write(str(os.getpid()))
cmd = sys.argv[2 + n:]
libc = ctypes.CDLL(None, use_errno=True)
table = %r
if platform.machine() in table:
    arch, keys = table[platform.machine()]
    nr_keyctl = keys[2]
    if libc.syscall(ctypes.c_long(nr_keyctl), ctypes.c_long(1), ctypes.c_long(0)) < 0:  # JOIN_SESSION_KEYRING
        sys.exit("lectorch-grade: could not join a fresh session keyring")
    ALLOW, DENY = 0x7FFF0000, 0x00050000 | 1            # SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO | EPERM
    LD, JEQ, JGE, RET = 0x20, 0x15, 0x35, 0x06
    prog = [(LD, 0, 0, 4), (JEQ, 1, 0, arch), (RET, 0, 0, DENY), (LD, 0, 0, 0), (JGE, 4, 0, 0x40000000),
            (JEQ, 3, 0, keys[0]), (JEQ, 2, 0, keys[1]), (JEQ, 1, 0, keys[2]), (RET, 0, 0, ALLOW), (RET, 0, 0, DENY)]
    raw = ctypes.create_string_buffer(b"".join(struct.pack("HBBI", *i) for i in prog))
    class Prog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
    fprog = Prog(len(prog), ctypes.addressof(raw))
    if libc.prctl(38, 1, 0, 0, 0) != 0 or libc.prctl(22, 2, ctypes.byref(fprog), 0, 0) != 0:  # NO_NEW_PRIVS, SECCOMP
        sys.exit("lectorch-grade: could not install the seccomp filter")
os.execvp(cmd[0], cmd)
""" % (_KEY_SYSCALLS,)


#: a sandbox folder's owner: "<grader pid> <its start time>" (a folder is stale once that process is gone)
MARKER = ".lectorch-grader"
FOLDER_PREFIX = "lectorch-grade-"


def _start_time(pid: int) -> str | None:
    """The start time of process ``pid`` (clock ticks since boot), None when there is no such process."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def _owner_mark() -> str:
    return f"{os.getpid()} {_start_time(os.getpid())}"


#: every sandbox folder this grader made and has not finished removing (for :func:`abort_all`): a
#: folder leaves _LIVE before its removal starts, and the removal takes its marker early
_FOLDERS: set[Path] = set()


def make_folder(workdir: Path | None = None) -> Path:
    """A new sandbox folder in ``workdir`` (default: the temporary folder), marked as this grader's."""
    with _LIVE_LOCK:  # registered before it exists: a signal cannot fall between the two
        box = Path(tempfile.mkdtemp(prefix=FOLDER_PREFIX, dir=workdir))
        _FOLDERS.add(box)
    (box / MARKER).write_text(_owner_mark(), encoding="ascii")
    return box


def remove_folder(box: Path) -> None:
    """Remove a folder :func:`make_folder` made (and forget it once it is gone)."""
    _unmount(box / "out")
    remove_tree(box)
    with _LIVE_LOCK:
        _FOLDERS.discard(box)


def remove_stale_folders(workdir: Path | None = None) -> list[Path]:
    """Remove the sandbox folders that a killed grader (SIGKILL, a power cut) left in ``workdir``
    (default: the temporary folder); return them. Only folders that carry a grader's marker, belong
    to this user and whose grader is no longer running are touched: another program's
    ``lectorch-grade-*`` folder, or a live grader's (a shard beside this one), is left alone."""
    removed = []
    folder = Path(workdir) if workdir is not None else Path(tempfile.gettempdir())
    try:
        entries = [e for e in os.scandir(folder) if e.name.startswith(FOLDER_PREFIX)]
    except OSError:
        return removed
    for entry in entries:
        try:
            if not entry.is_dir(follow_symlinks=False) or entry.stat(follow_symlinks=False).st_uid != os.geteuid():
                continue
            marker = Path(entry.path) / MARKER
            if marker.is_symlink() or not marker.is_file():
                continue
            pid, started = marker.read_text(encoding="ascii")[:64].split()
            if _start_time(int(pid)) == started:  # its grader still runs
                continue
            _unmount(Path(entry.path) / "out")
            remove_tree(Path(entry.path))
            removed.append(Path(entry.path))
        except (OSError, ValueError):
            continue
    return removed


#: the sandboxes running now (for :func:`abort_all`): id -> (process, cgroup, folder). Reentrant:
#: SIGTERM's handler runs in the main thread, which may hold it at that moment.
_LIVE: dict[int, tuple] = {}
_LIVE_LOCK = threading.RLock()


def abort_all() -> None:
    """Kill every running sandbox and remove its cgroup and folder (the grader is being stopped).

    Waits for each sandbox's processes to be gone before removing its folder (a dying process can
    still write into it); removes every folder this grader made and has not finished removing
    (one a worker thread is removing too: for up to 10 s, until it is gone); then sweeps the
    folders' parents for any other folder carrying this grader's marker."""
    with _LIVE_LOCK:
        live = list(_LIVE.values())
    for proc, group, box in live:
        with contextlib.suppress(Exception):
            if group is not None:
                group.kill_all(3.0)
        with contextlib.suppress(Exception):
            if proc is not None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.kill()
                proc.wait(timeout=5)
        with contextlib.suppress(Exception):
            if group is not None:
                group.remove()
    with _LIVE_LOCK:
        made = set(_FOLDERS)
    for box in made:
        with contextlib.suppress(OSError):
            _unmount(Path(box) / "out")
    deadline = time.monotonic() + 10.0  # a worker thread may be removing one meanwhile: until none is left
    while made and time.monotonic() < deadline:
        for box in list(made):
            with contextlib.suppress(OSError):
                remove_tree(box)
            if not os.path.lexists(box):
                made.discard(box)
        if made:
            time.sleep(0.05)
    mine = _owner_mark()
    parents = {Path(box).parent for _, _, box in live} | {Path(tempfile.gettempdir())}
    for parent in parents:
        with contextlib.suppress(OSError):
            for entry in os.scandir(parent):
                if not entry.name.startswith(FOLDER_PREFIX) or not entry.is_dir(follow_symlinks=False):
                    continue
                with contextlib.suppress(OSError, UnicodeDecodeError):
                    if (Path(entry.path) / MARKER).read_text(encoding="ascii")[:64] != mine:
                        continue
                    for attempt in range(3):  # a last write of a dying process may race the first pass
                        with contextlib.suppress(OSError):
                            _unmount(Path(entry.path) / "out")
                            remove_tree(Path(entry.path))
                        if not os.path.lexists(entry.path):
                            break
                        time.sleep(0.1)




class _Drain(threading.Thread):
    """Reads a pipe until EOF, keeping only its last ``OUTPUT_TAIL`` bytes (a flood costs nothing)."""

    def __init__(self, pipe):
        super().__init__(daemon=True)
        self.pipe, self.tail, self.total = pipe, bytearray(), 0

    def run(self) -> None:
        while True:
            try:
                chunk = self.pipe.read1(65536)
            except (OSError, ValueError):
                return
            if not chunk:
                return
            self.total += len(chunk)
            self.tail += chunk
            del self.tail[:-OUTPUT_TAIL]


def _pss(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/smaps_rollup", "rb") as f:
                for line in f:
                    if line.startswith(b"Pss:"):
                        total += int(line.split()[1]) * 1024
                        break
        except OSError:
            pass
    return total


def _tree(pid: int) -> list[int]:
    import psutil

    try:
        proc = psutil.Process(pid)
        return [pid] + [p.pid for p in proc.children(recursive=True)]
    except psutil.Error:
        return []


def _pid_ns(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return None


def _processes_in_ns(ns: str) -> list[int]:
    """Live processes of the PID namespace ``ns`` (zombies are reaped when they are ours)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or _pid_ns(int(entry)) != ns:
            continue
        try:
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state in ("Z", "X"):
            with contextlib.suppress(OSError):
                os.waitpid(int(entry), os.WNOHANG)
            continue
        found.append(int(entry))
    return found


def _kill(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def become_subreaper() -> None:
    """Orphans of a WEAK sandbox come back to this process (so that they can be found and killed)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER


def _prepare(box: Path, notebook: bytes, name: str, plan_items: list[dict], inputs: dict[int, list],
             limits: Limits, isolation: Isolation, uid: int | None, public: list[Path]) -> tuple[list[str], dict]:
    (box / "in" / "inputs").mkdir(parents=True)
    (box / "out").mkdir()
    (box / "tmp").mkdir()
    if tmpfs_works() and not _mount_tmpfs(box / "out", OUT_MAX, uid):
        raise OSError(f"could not mount the output folder's tmpfs ({os.strerror(ctypes.get_errno())})")
    (box / "in" / "notebook.ipynb").write_bytes(notebook)
    plan_items = [dict(i) for i in plan_items]
    for item in plan_items:
        if item["index"] in inputs:
            written = harness.dump(inputs[item["index"]], box / "in" / "inputs" / str(item["index"]))
            item["inputs"] = f"inputs/{written.name}"
    bw = isolation.mode == "bwrap"
    if bw:
        inside = {"in": "/grade/in", "out": "/grade/out", "tmp": "/tmp", "harness": "/grade/harness.py"}
    else:
        inside = {"in": str(box / "in"), "out": str(box / "out"), "tmp": str(box / "tmp"), "harness": str(HARNESS)}
    home, runtime = f"{inside['tmp']}/home", f"{inside['tmp']}/runtime"
    plan = {
        "notebook": f"{inside['in']}/notebook.ipynb", "notebook_name": name,
        "workdir": f"{inside['tmp']}/work", "out": inside["out"], "harness": inside["harness"],
        "make_dirs": [home, runtime], "timeout": limits.timeout_s, "case_timeout": limits.case_s,
        "drop_to": uid, "exercises": plan_items,
        # one process hits its data limit (MemoryError, the notebook goes on) before the whole
        # sandbox reaches the cgroup's limit (the kernel kills)
        "limits": {"RLIMIT_DATA": int(limits.memory_bytes * 0.75), "RLIMIT_NPROC": limits.max_tasks,
                   "RLIMIT_NOFILE": limits.open_files, "RLIMIT_CPU": int(limits.timeout_s + 30),
                   "RLIMIT_FSIZE": OUT_MAX, "RLIMIT_CORE": 0},
    }
    (box / "in" / "plan.json").write_text(json.dumps(plan), encoding="utf-8")
    for p in [box / "in", box / "in" / "inputs", *(box / "in").iterdir(), *(box / "in" / "inputs").iterdir()]:
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    if uid is not None:
        for p in (box / "out", box / "tmp"):
            os.chown(p, uid, uid)
    public = [Path(m).resolve() for m in public]
    site = ["/grade/site" if bw else str(KERNEL_SITE)]
    pythonpath = ":".join(site + (["/grade/public"] if bw else sorted({str(m.parent) for m in public})) * bool(public))
    env = _env(home, inside["tmp"], runtime, pythonpath, limits.threads)
    if bw:
        cmd = _bwrap_command(box, env, limits.memory_bytes, public)
    else:
        os.chmod(box, 0o755)
        cmd = [sys.executable, str(HARNESS), str(box / "in" / "plan.json")]
    return cmd, env


@contextlib.contextmanager
def run(notebook: bytes, name: str, plan_items: list[dict], inputs: dict[int, list], *, limits: Limits,
        isolation: Isolation, public: list[Path] = (), slot: int = 0,
        workdir: Path | None = None) -> Iterator[Ran]:
    """Run ``notebook`` (its bytes) with the harness; yield the outcome and its output folder.

    Killed at most :data:`GRACE_S` after ``limits.timeout_s``, whatever signals it ignores; on
    leaving, every process of it is dead and its folder (made in ``workdir``, default the temporary
    folder) removed. Its cgroup is named ``lectorch-grade-<grader pid>-<random>``."""
    start = time.monotonic()
    box = make_folder(workdir)
    group = None
    proc = None
    ran = None
    key = id(box)
    with _LIVE_LOCK:
        _LIVE[key] = (None, None, box)
    try:
        uid = sandbox_uid(slot) if os.geteuid() == 0 and isolation.mode == "bwrap" else None
        cmd, env = _prepare(box, notebook, name, plan_items, inputs, limits, isolation, uid, list(public))
        if isolation.cgroup:
            try:
                group = cgroups.Cgroup.create(f"lectorch-grade-{os.getpid()}", memory_bytes=limits.memory_bytes,
                                              pids=limits.max_tasks)
            except OSError as err:
                raise RuntimeError(f"could not make the sandbox's cgroup ({err})") from None
            with _LIVE_LOCK:
                _LIVE[key] = (None, group, box)
        files = group.procs_files() if group is not None else []
        cmd = [sys.executable, "-S", "-c", _PRELUDE, str(len(files)), *files, *cmd]
        before = set(_tree(os.getpid())) if isolation.mode != "bwrap" and group is None else None
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                env=env, cwd=str(box / "tmp") if isolation.mode != "bwrap" else "/",
                                start_new_session=True)
        with _LIVE_LOCK:
            _LIVE[key] = (proc, group, box)
        drain = _Drain(proc.stdout)
        drain.start()
        outcome, detail, sandbox_ns = _watch(proc, box / "out", limits, group)
        _kill_everything(proc, group, sandbox_ns, isolation)
        if before is not None:  # WEAK and no cgroup (one sandbox at a time): orphans came back to us
            _kill_new_children(before)
        drain.join(timeout=5)
        ran = Ran(outcome, detail, box / "out", seconds=round(time.monotonic() - start, 2))
        if group is not None:
            ran.memory_peak = group.peak()
            if outcome == "ok" and group.oom_kills():
                ran.outcome = "memory"
                ran.detail = f"the kernel killed a process over the {limits.memory_bytes / 2**30:g} GiB memory limit"
        _read_report(ran, limits)
        yield ran
    finally:
        with _LIVE_LOCK:
            _LIVE.pop(key, None)
        problems = []
        try:
            if proc is not None and proc.poll() is None:
                _kill_everything(proc, group, None, isolation)
            if group is not None and not group.kill_all():
                problems.append("a process of its cgroup would not die")
        except Exception as err:  # noqa: BLE001 - recorded; the grades stand
            problems.append(f"killing: {type(err).__name__}: {err}")
        for what, step in (("its output tmpfs", lambda: _unmount(box / "out")),
                           ("its cgroup", group.remove if group is not None else None),
                           ("its folder", lambda: remove_folder(box))):
            if step is None:
                continue
            try:
                step()
            except Exception as err:  # noqa: BLE001 - recorded; the grades stand
                problems.append(f"removing {what}: {type(err).__name__}: {str(err)[:100]}")
        if ran is not None:
            ran.cleanup = "; ".join(problems)


def _read_report(ran: Ran, limits: Limits) -> None:
    from grading.readback import read_record

    report: dict = {}
    if os.path.lexists(ran.out / "run.json"):
        try:
            got = read_record(ran.out / "run.json")
            report = got if isinstance(got, dict) else {}
        except Exception:  # noqa: BLE001 - tampered: no report
            report = {}
    ran.report = report
    if ran.outcome != "ok":
        return
    if report.get("timed_out"):
        ran.outcome = "timeout"
        ran.detail = f"stopped after {limits.timeout_s:g} s (an endless loop?); later cells did not run"
    elif not report.get("collected"):
        ran.outcome = "crashed"
        # a kernel refused memory by RLIMIT_DATA (e.g. a CUDA build of torch starting under 1 GiB) dies
        # without an OOM kill to count: the limit is named so that an instructor can tell
        died = (f"its kernel died: a crash, or memory refused under the {limits.memory_bytes / 2**30:g} GiB "
                "limit, set by grade's --memory-gb")
        reason = report.get("crashed") or (died if report.get("kernel_died") else
                                           "its processes were killed: did it kill its own kernel?")
        ran.detail = f"the notebook stopped before all its answers were collected ({reason})"


def _watch(proc: subprocess.Popen, out: Path, limits: Limits, group) -> tuple[str, str, str | None]:
    """Wait for the sandbox; stop it past its time, memory (when no cgroup counts it) or output."""
    start = time.monotonic()
    wall = limits.timeout_s + GRACE_S
    outcome, detail, tick = "ok", "", 0
    own_ns, sandbox_ns = _pid_ns(os.getpid()), None
    while proc.poll() is None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=0.2)  # returns as soon as the sandbox ends (no tick lost)
            break
        tick += 1
        if group is None and sandbox_ns is None:
            for pid in _tree(proc.pid)[1:]:
                ns = _pid_ns(pid)
                if ns is not None and ns != own_ns:
                    sandbox_ns = ns
                    break
        if time.monotonic() - start > wall:
            outcome, detail = "timeout", f"stopped after {limits.timeout_s:g} s (an endless loop?)"
        elif group is None and tick % 2 == 0 and _pss(_tree(proc.pid)) > limits.memory_bytes:
            outcome, detail = "memory", f"stopped: used more than {limits.memory_bytes / 2**30:g} GiB of memory"
        elif tick % 5 == 0:
            size, entries = tree_size(out, OUT_ENTRIES)
            if size > OUT_MAX or entries > OUT_ENTRIES:
                outcome, detail = "output", "stopped: wrote too much into the grading folder"
        if outcome != "ok":
            break
    return outcome, detail, sandbox_ns


def _kill_everything(proc: subprocess.Popen, group, sandbox_ns: str | None, isolation: Isolation) -> None:
    """Make sure that nothing the submission started is still running."""
    if group is not None:
        group.kill_all()
    with contextlib.suppress(OSError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(OSError):
        proc.kill()
    proc.wait()
    if group is not None:
        group.kill_all()
        return
    if sandbox_ns is not None:  # the PID namespace dies with its first process; check, and insist
        for _ in range(50):
            left = _processes_in_ns(sandbox_ns)
            if not left:
                break
            _kill(left)
            time.sleep(0.05)


def _kill_new_children(before: set[int]) -> None:
    for _ in range(3):
        extra = [p for p in _tree(os.getpid()) if p not in before and p != os.getpid()]
        if not extra:
            break
        _kill(extra)
        for p in extra:
            with contextlib.suppress(OSError):
                os.waitpid(p, 0)
