"""Read back what a sandbox wrote, with bounds: nothing it writes can make the grader's own memory
or time grow past a cap.

* a regular file (no link, no FIFO), at most :data:`RECORD_MAX` bytes, read without following links;
* JSON at most :data:`JSON_MAX` bytes;
* a ``torch.save`` archive is checked BEFORE ``torch.load``: every zip entry stored (not deflated),
  its declared size equal to its stored size and the sum within the cap, so loading it cannot
  inflate; then ``weights_only=True`` (plain data only);
* the loaded data is walked iteratively: at most :data:`MAX_ITEMS` items (shared references count
  each time), :data:`MAX_DEPTH` levels, tensors of at most :data:`RECORD_MAX` bytes, dense only.

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
import stat
import zipfile
from pathlib import Path
from typing import Any

from grading import harness

RECORD_MAX = 64 * 2**20      # bytes of one answer file the grader agrees to read
JSON_MAX = 8 * 2**20         # bytes of one JSON answer file
ZIP_ENTRIES = 10_000
MAX_ITEMS = 1_000_000
MAX_DEPTH = 40


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
            for k, v in obj.items():
                if type(k) not in (str, int, bool, float):
                    raise ValueError("a dict key that is not plain")
                stack.append((v, depth + 1))
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


def read_record(path: Path) -> Any:
    """One answer file of the sandbox as plain data (``ValueError`` for anything else)."""
    path = Path(path)
    if path.suffix == ".json":
        data = read_bytes(path, JSON_MAX)
        try:
            value = harness.loads(data, ".json")
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as err:
            raise ValueError(f"not JSON ({type(err).__name__})") from None
    elif path.suffix == ".pt":
        data = read_bytes(path, RECORD_MAX)
        check_archive(data)
        value = harness.loads(data, ".pt")
        del data
    else:
        raise ValueError(f"an answer file must end in .json or .pt, not {path.name}")
    check_plain(value)
    return value
