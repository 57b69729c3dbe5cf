"""Walks and removals of folders a submission controls: no recursion, no link followed, no path
length limit, a bounded number of open files, whatever the depth or width of the tree.

>>> import tempfile, os
>>> top = tempfile.mkdtemp()
>>> os.makedirs(os.path.join(top, *["d"] * 20))
>>> tree_size(top)[1]
20
>>> os.makedirs(os.path.join(top, *["e"] * 300))
>>> tree_size(top)[1] > 10_000    # deeper than it looks: "too many"
True
>>> remove_tree(top)
>>> os.path.exists(top)
False
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

#: directories held open at once while removing; a deeper tree is flattened by renames
MAX_OPEN = 32
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW


def _open_dir(name: str, dir_fd: int | None) -> int:
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except PermissionError:  # a folder the submission made unreadable: we own it, unlock it
        os.chmod(name, 0o700, dir_fd=dir_fd)
        return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)


def _entries(fd: int) -> list[tuple[str, bool]]:
    """(name, is a real directory) of the entries of the open folder ``fd``."""
    out = []
    with os.scandir(fd) as it:
        for entry in it:
            try:
                out.append((entry.name, entry.is_dir(follow_symlinks=False)))
            except OSError:
                out.append((entry.name, False))
    return out


def tree_size(path: Path, max_entries: int = 10_000) -> tuple[int, int]:
    """(bytes, entries) under ``path``. A file counts its size or the blocks it holds, whichever is
    more (space preallocated past its size, e.g. ``fallocate`` with ``FALLOC_FL_KEEP_SIZE``, is
    counted). It stops counting past ``max_entries`` entries or :data:`MAX_OPEN` levels (then the
    entries returned are ``max_entries + 1``). Links are counted, never followed."""
    total, count = 0, 0
    try:
        stack = [_open_dir(str(path), None)]
    except OSError:
        return 0, 0
    try:
        todo: list[list[str]] = []
        while stack:
            if len(todo) < len(stack):  # a folder just opened: count its entries
                subdirs = []
                for name, is_dir in _entries(stack[-1]):
                    count += 1
                    if count > max_entries:
                        return total, count
                    try:
                        info = os.stat(name, dir_fd=stack[-1], follow_symlinks=False)
                        total += max(info.st_size, info.st_blocks * 512)
                    except OSError:
                        pass
                    if is_dir:
                        subdirs.append(name)
                todo.append(subdirs)
            if todo[-1]:
                if len(stack) >= MAX_OPEN:
                    return total, max_entries + 1
                try:
                    stack.append(_open_dir(todo[-1].pop(), stack[-1]))
                except OSError:
                    pass
                continue
            os.close(stack.pop())
            todo.pop()
    finally:
        for fd in stack:
            os.close(fd)
    return total, count


def remove_tree(path: Path) -> None:
    """Remove ``path`` and everything under it (a file or a link is just unlinked).

    Iterative and relative to folder descriptors: a 100,000-deep tree needs neither recursion nor
    paths longer than PATH_MAX. At most :data:`MAX_OPEN` folders are held open: a deeper folder is
    moved up to the top (a rename) and removed from there."""
    path = Path(path)
    parent = os.open(str(path.parent), _DIR_FLAGS & ~os.O_NOFOLLOW)
    stack: list[tuple[int, list[str]]] = []
    try:
        try:
            info = os.stat(path.name, dir_fd=parent, follow_symlinks=False)
        except FileNotFoundError:
            return
        if not stat.S_ISDIR(info.st_mode):
            os.unlink(path.name, dir_fd=parent)
            return
        root = _open_dir(path.name, parent)
        stack.append((root, []))
        names = [(root, path.name, parent)]  # (fd, its name, the fd of its parent)
        flattened = 0
        fresh = True
        while stack:
            fd, subdirs = stack[-1]
            if fresh:
                for name, is_dir in _entries(fd):
                    if is_dir:
                        subdirs.append(name)
                        continue
                    try:
                        os.unlink(name, dir_fd=fd)
                    except FileNotFoundError:
                        pass
                    except PermissionError:
                        os.chmod(fd, 0o700)
                        os.unlink(name, dir_fd=fd)
            fresh = False
            if subdirs:
                name = subdirs.pop()
                if len(stack) >= MAX_OPEN:  # too deep to hold open: move it up to the top folder
                    flattened += 1
                    new = f".flat-{flattened}"
                    try:
                        os.rename(name, new, src_dir_fd=fd, dst_dir_fd=root)
                    except PermissionError:
                        os.chmod(fd, 0o700)
                        os.rename(name, new, src_dir_fd=fd, dst_dir_fd=root)
                    stack[0][1].append(new)
                    continue
                try:
                    child = _open_dir(name, fd)
                except FileNotFoundError:
                    continue
                stack.append((child, []))
                names.append((child, name, fd))
                fresh = True
                continue
            stack.pop()
            child, name, up = names.pop()
            os.close(child)
            try:
                os.rmdir(name, dir_fd=up)
            except PermissionError:
                os.chmod(up, 0o700)
                os.rmdir(name, dir_fd=up)
    finally:
        for fd, _ in stack:
            try:
                os.close(fd)
            except OSError:
                pass
        os.close(parent)
