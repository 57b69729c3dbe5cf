"""Read back what a sandbox wrote, with bounds: nothing it writes can make the grader's own memory
or time grow past a cap.

* a regular file (no link, no FIFO), at most :data:`RECORD_MAX` bytes, read without following links;
* JSON at most :data:`JSON_MAX` bytes;
* JSON: the objects it can make are counted in its bytes (brackets, braces, commas) BEFORE it is
  parsed, at most :data:`MAX_ITEMS`; its dict keys are strings, whose hashes no student can predict;
* a ``torch.save`` archive is checked BEFORE ``torch.load``: every zip entry stored (not deflated),
  its declared size equal to its stored size and the sum within the cap, so loading it cannot
  inflate; then it is loaded (``weights_only=True``: plain data only) in a child process with
  limits of CPU time, memory and wall-clock time (:data:`DECODE_S`, :data:`DECODE_MEMORY`), where
  a pickle of a million empty lists or a dict of colliding keys costs the child, not the grader;
  the child sends back the data, checked, re-encoded by torch.save;
* the loaded data is walked iteratively: at most :data:`MAX_ITEMS` items (shared references count
  each time), :data:`MAX_DEPTH` levels, tensors of at most :data:`RECORD_MAX` bytes, dense only,
  at most :data:`HASH_SHARE` keys of a dict sharing one hash value.

>>> check_plain([1, (2.5, "x"), {"a": None}])
>>> check_plain([[[[[[[[[[0]]]]]]]]]], max_depth=4)
Traceback (most recent call last):
...
ValueError: nested deeper than 4 levels
"""

from __future__ import annotations

import io
import json
import os
import resource
import signal
import stat
import threading
import zipfile
from pathlib import Path
from typing import Any

from grading import harness

RECORD_MAX = 64 * 2**20      # bytes of one answer file the grader agrees to read
JSON_MAX = 8 * 2**20         # bytes of one JSON answer file
ZIP_ENTRIES = 10_000
MAX_ITEMS = 1_000_000
MAX_DEPTH = 40
HASH_SHARE = 8               # dict keys of one hash value (CPython's -1 and -2 share one)
DECODE_S = 10                # seconds (CPU and wall clock) to decode one torch record
DECODE_MEMORY = 2**30        # bytes the decoding child may allocate on top of what it holds


def read_bytes(path: Path, cap: int) -> bytes:
    """The bytes of the regular file ``path`` (never through a link), ``ValueError`` past ``cap``."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise ValueError("not a regular file")
        if info.st_size > cap:
            raise ValueError(f"{info.st_size} bytes, over the {cap} bytes cap")
        data = f.read(cap + 1)
    if len(data) > cap:
        raise ValueError(f"over the {cap} bytes cap")
    return data


def check_archive(data: bytes, cap: int = RECORD_MAX) -> None:
    """``ValueError`` unless ``data`` is a zip whose entries are all stored, sizes as declared."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        infos = archive.infolist()
    except (zipfile.BadZipFile, ValueError, OSError) as err:
        raise ValueError(f"not a torch archive ({err})") from None
    if len(infos) > ZIP_ENTRIES:
        raise ValueError(f"{len(infos)} entries in the archive")
    total = 0
    for info in infos:
        if info.compress_type != zipfile.ZIP_STORED:
            raise ValueError(f"a compressed entry ({info.filename[:60]!r}): torch.save stores entries")
        if info.file_size != info.compress_size:
            raise ValueError("an entry whose declared size differs from its stored size")
        if info.header_offset + info.compress_size > len(data):
            raise ValueError("an entry beyond the end of the file")
        total += info.file_size
    if total > cap:
        raise ValueError(f"the archive declares {total} bytes, over the {cap} bytes cap")


def check_plain(value: Any, *, max_items: int = MAX_ITEMS, max_depth: int = MAX_DEPTH,
                max_tensor_bytes: int = RECORD_MAX) -> None:
    """``ValueError`` unless ``value`` is plain data of bounded size (walked without recursion)."""
    torch = None
    stack = [(value, 0)]
    items = 0
    while stack:
        obj, depth = stack.pop()
        items += 1
        if items > max_items:
            raise ValueError(f"more than {max_items} items")
        if depth > max_depth:
            raise ValueError(f"nested deeper than {max_depth} levels")
        if obj is None or type(obj) in (bool, int, float, complex, str, bytes):
            continue
        if type(obj) in (list, tuple):
            stack.extend((x, depth + 1) for x in obj)
            continue
        if type(obj) is dict:
            numbers = []
            for k, v in obj.items():
                if type(k) not in (str, int, bool, float):
                    raise ValueError("a dict key that is not plain")
                if type(k) is not str:  # string hashes are salted per process; numbers' are not
                    numbers.append(hash(k))
                stack.append((v, depth + 1))
            _check_spread(sorted(numbers))
            continue
        if torch is None:
            import torch
        if isinstance(obj, torch.Tensor):
            if obj.layout != torch.strided or obj.is_quantized:
                raise ValueError("a tensor that is not dense")
            if obj.numel() * obj.element_size() > max_tensor_bytes:
                raise ValueError(f"a tensor of {obj.numel()} elements")
            continue
        if isinstance(obj, (torch.dtype, torch.device, torch.Size)):
            continue
        raise ValueError(f"a {type(obj).__name__}, which is not plain data")


def _check_spread(hashes: list[int]) -> None:
    run = 1
    for a, b in zip(hashes, hashes[1:]):
        run = run + 1 if a == b else 1
        if run > HASH_SHARE:
            raise ValueError(f"more than {HASH_SHARE} dict keys share one hash value")


def count_json_items(data: bytes) -> int:
    """An upper bound of the objects JSON ``data`` makes once parsed (counted in C, nothing built)."""
    return data.count(b"[") + data.count(b"{") + data.count(b",") + data.count(b":") + 1


def _decode_child(out: int, data: bytes) -> None:
    """In a forked child of the decoding server: limits first, then load, check and re-encode the
    record into the pipe ``out`` (``V`` and the bytes of torch.save, or ``E`` and why not)."""
    try:
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG: dies with its server
    except (OSError, AttributeError):
        pass
    try:
        resource.setrlimit(resource.RLIMIT_CPU, (DECODE_S, DECODE_S + 1))
        held = 0
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmData:"):
                    held = int(line.split()[1]) * 1024
        limit = held + DECODE_MEMORY + 4 * len(data)
        resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))
        value = harness.loads(data, ".pt")
        del data
        check_plain(value)
        import torch

        buffer = io.BytesIO()
        torch.save(value, buffer)
        reply = b"V" + buffer.getvalue()
    except BaseException as err:  # noqa: BLE001 - said to the grader as data
        reply = b"E" + f"{type(err).__name__}: {str(err)[:200]}".encode("utf-8", "backslashreplace")
    view = memoryview(reply)
    while view:
        view = view[os.write(out, view):]


def _read_exact(fd: int, n: int, deadline: float | None = None) -> bytes:
    """``n`` bytes from ``fd`` (``EOFError`` when it closes first); with a ``deadline`` (of
    ``time.monotonic``), ``TimeoutError`` when they have not all come by then."""
    import select
    import time

    chunks, left = [], n
    while left:
        if deadline is not None:
            wait = deadline - time.monotonic()
            if wait <= 0 or not select.select([fd], [], [], wait)[0]:
                raise TimeoutError
        chunk = os.read(fd, min(left, 2**20))
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _serve() -> None:
    """The decoding server's loop (single-threaded, so forking it is safe): for each request on
    stdin (8-byte length, then the archive), fork a child that decodes it under limits, kill it
    past :data:`DECODE_S` seconds of wall-clock time, and answer on stdout (8-byte length, then
    ``V`` + data, ``E`` + why, or ``D`` + how the child died)."""
    import select
    import struct
    import time

    try:
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)  # dies with the grader's thread
    except (OSError, AttributeError):
        pass
    import torch  # noqa: F401 - once, here: each child starts with it

    while True:
        try:
            (size,) = struct.unpack("<Q", _read_exact(0, 8))
            data = _read_exact(0, size)
        except EOFError:
            return
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            try:
                _decode_child(w, data)
            finally:
                os._exit(0)
        os.close(w)
        del data
        got, deadline = bytearray(), time.monotonic() + DECODE_S
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([r], [], [], left)[0]:
                os.kill(pid, signal.SIGKILL)
                break
            chunk = os.read(r, 2**20)
            if not chunk:
                break
            got += chunk
        os.close(r)
        _, status = os.waitpid(pid, 0)
        if got[:1] not in (b"V", b"E"):
            sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0
            how = {signal.SIGKILL: f"killed after {DECODE_S} s or out of memory",
                   signal.SIGXCPU: f"over {DECODE_S} s of CPU time"}.get(sig, f"status {status}")
            got = bytearray(b"D" + how.encode())
        os.write(1, struct.pack("<Q", len(got)))
        view = memoryview(got)
        while view:
            view = view[os.write(1, view):]


class _Server:
    """A decoding server (a Python process that has imported torch once), one per grader thread."""

    def __init__(self):
        import subprocess
        import sys

        import grading

        root = str(grading.ROOT)
        code = f"import sys; sys.path.insert(0, {root!r}); from grading import readback; readback._serve()"
        self.proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL)

    def ask(self, data: bytes, seconds: float) -> bytes:
        import struct
        import time

        self.proc.stdin.write(struct.pack("<Q", len(data)))
        self.proc.stdin.write(data)
        self.proc.stdin.flush()
        out = self.proc.stdout.fileno()
        deadline = time.monotonic() + seconds
        (size,) = struct.unpack("<Q", _read_exact(out, 8, deadline))
        return _read_exact(out, size, deadline)

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


_SERVERS = threading.local()


def decode_torch(data: bytes) -> Any:
    """Load a checked torch archive in a child process with limits (``ValueError`` when it fails).
    The grader's own memory holds the archive and the checked data only."""
    server = getattr(_SERVERS, "server", None)
    if server is None or server.proc.poll() is not None:
        server = _SERVERS.server = _Server()
    try:  # the first request waits for the server's torch import too
        got = server.ask(data, DECODE_S + 60)
    except (OSError, EOFError, TimeoutError, ValueError) as err:
        server.close()
        _SERVERS.server = None
        raise ValueError(f"the torch record could not be loaded (its decoder failed: {type(err).__name__})") from None
    if got[:1] == b"V":
        return harness.loads(bytes(got[1:]), ".pt")  # made by the child from checked data: bounded
    why = got[1:].decode("utf-8", "replace")
    if got[:1] == b"D":
        raise ValueError(f"the torch record could not be loaded: its decoder was {why}")
    raise ValueError(f"the torch record could not be loaded ({why})")


def read_record(path: Path) -> Any:
    """One answer file of the sandbox as plain data (``ValueError`` for anything else)."""
    path = Path(path)
    if path.suffix == ".json":
        data = read_bytes(path, JSON_MAX)
        if count_json_items(data) > MAX_ITEMS:
            raise ValueError(f"more than {MAX_ITEMS} items")
        try:
            value = harness.loads(data, ".json")
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as err:
            raise ValueError(f"not JSON ({type(err).__name__})") from None
    elif path.suffix == ".pt":
        data = read_bytes(path, RECORD_MAX)
        check_archive(data)
        value = decode_torch(data)
        del data
    else:
        raise ValueError(f"an answer file must end in .json or .pt, not {path.name}")
    check_plain(value)
    return value
