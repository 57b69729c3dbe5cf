"""Find what each student uploaded, and read it only when it is graded.

The rules (chapters/reference/grading.md says them to students):

* A submission is a first-level folder of SUBMISSIONS (or a notebook lying there directly).
* Links of any kind are refused and reported: symbolic links (to a file or a folder), hard links
  (a file with more than one name), and anything that is not a regular file or folder.
* Every notebook is opened folder by folder from its submission without following a link, so the
  bytes graded are bytes inside that submission.
* One chapter is graded once per submission: when a chapter's file name appears more than once, the
  copy nearest the submission's top is graded (then the first in path order); the others are
  reported as duplicates.
* Caps: :data:`MAX_NOTEBOOKS` notebooks per submission, :data:`NOTEBOOK_MAX` bytes per notebook,
  :data:`SUBMISSION_MAX` bytes per submission, :data:`MAX_ENTRIES` folder entries walked per
  submission, :data:`MAX_DEPTH` folder levels; past a cap the rest is reported, not graded.

Walks hold no recursion and keep no notebook in memory: :func:`read_notebook` reads one when its
turn comes.

>>> escape("ok\\n\\x1b[32m passed")
'ok\\\\n\\\\x1b[32m passed'
"""

from __future__ import annotations

import hashlib
import os
import stat
import unicodedata
from dataclasses import dataclass, replace
from pathlib import Path

MAX_NOTEBOOKS = 40
NOTEBOOK_MAX = 20 * 2**20
SUBMISSION_MAX = 200 * 2**20
MAX_ENTRIES = 20_000
MAX_DEPTH = 16
SKIP_FOLDERS = {".ipynb_checkpoints", "__MACOSX", ".git"}


def escape(name: str) -> str:
    """``name`` with every character that is not printable written as an escape (no newline, no
    terminal control sequence, no undecodable byte reaches a table or a log)."""
    out = []
    for ch in name:
        code = ord(ch)
        if 0xDC80 <= code <= 0xDCFF:  # an undecodable byte (surrogateescape)
            out.append(f"\\x{code - 0xDC00:02x}")
        elif ch == "\\":
            out.append("\\\\")
        elif ch.isprintable():
            out.append(ch)
        else:
            out.append(repr(ch)[1:-1] if code < 0x10000 else f"\\U{code:08x}")
    return "".join(out)


def ascii_name(name: str) -> str:
    """``name`` with every character that is not printable ASCII escaped: two names that look
    alike are told apart (``Jos\\xe9``, ``Jose\\u0301``, ``\\u0430lice``).

    >>> ascii_name("Jos\u00e9"), ascii_name("Jose\u0301"), ascii_name("\u0430lice")
    ('Jos\\\\xe9', 'Jose\\\\u0301', '\\\\u0430lice')
    """
    out = []
    for ch in escape(name):
        code = ord(ch)
        if code < 0x80:
            out.append(ch)
        elif code < 0x100:
            out.append(f"\\x{code:02x}")
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    return "".join(out)


#: letters of other scripts drawn like Latin ones (after case folding), the usual suspects
CONFUSABLES = str.maketrans({
    "а": "a", "в": "b", "е": "e", "ё": "e", "к": "k", "м": "m", "н": "h", "о": "o", "р": "p", "с": "c",
    "т": "t", "у": "y", "х": "x", "і": "i", "ї": "i", "ј": "j", "ѕ": "s", "ԁ": "d", "ԛ": "q", "ԝ": "w",
    "һ": "h", "ӏ": "l", "ɡ": "g", "ı": "i", "ο": "o", "α": "a", "β": "b", "ε": "e", "η": "n", "ι": "i",
    "κ": "k", "ν": "v", "ρ": "p", "τ": "t", "υ": "u", "χ": "x", "ϲ": "c", "ϳ": "j", "ѵ": "v", "ԍ": "g",
    "0": "o", "1": "l", "|": "l",
})


def skeleton(name: str) -> str:
    """What ``name`` looks like: compatibility-normalised, case-folded, invisible characters and
    accents dropped, look-alike letters of other scripts mapped to Latin."""
    text = unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", name).casefold())
    text = "".join(ch for ch in text if unicodedata.category(ch) not in ("Mn", "Me", "Cf"))
    return text.translate(CONFUSABLES)


def look_alikes(names: list[str]) -> dict[str, list[str]]:
    """For each name of ``names`` that looks like another, the others it looks like."""
    groups: dict[str, list[str]] = {}
    for name in names:
        groups.setdefault(skeleton(name), []).append(name)
    return {name: [o for o in group if o != name] for group in groups.values() if len(group) > 1 for name in group}


@dataclass(frozen=True)
class Notebook:
    """One notebook to grade: ``parts`` is its path inside the submission (relative, no link)."""

    submission: str            # the folder's name as on disk
    parts: tuple[str, ...]     # () for a notebook lying directly in SUBMISSIONS
    name: str                  # the file name: which chapter it is
    size: int
    inode: tuple[int, int] = (0, 0)    # (device, inode) when collected
    nlink: int = 1                     # its names when collected (more than one: see shared_files)
    staged: str = ""                   # its private copy (stage), read when it is graded

    @property
    def where(self) -> str:
        return "/".join(self.parts) if self.parts else self.name


@dataclass(frozen=True)
class Refused:
    """Something of a submission that is not graded, and why."""

    submission: str
    where: str
    name: str                  # the chapter's file name when it is a notebook, else ""
    why: str                   # "link" | "duplicate" | "not a file" | "cap" | "unreadable" | "shared"
    detail: str


def shard_of(submission: str, shards: int) -> int:
    """The shard (0 … shards-1) a submission belongs to: a hash of its name, so a student's shard
    does not depend on who else is in the class."""
    digest = hashlib.sha256(os.fsencode(submission)).digest()
    return int.from_bytes(digest[:8], "big") % shards


def submissions(folder: Path) -> list[tuple[str, bool]]:
    """(name, is a folder) of SUBMISSIONS' first level, sorted; links and others come out too
    (:func:`collect_submission` refuses them)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ValueError(f"SUBMISSIONS={folder} is not a folder of notebooks")
    out = []
    with os.scandir(folder) as it:
        for entry in it:
            if entry.name in SKIP_FOLDERS:
                continue
            is_dir = entry.is_dir(follow_symlinks=False)
            if is_dir or entry.name.endswith(".ipynb") or entry.is_symlink():
                out.append((entry.name, is_dir))
    return sorted(out)


def collect_submission(folder: Path, name: str) -> tuple[list[Notebook], list[Refused]]:
    """The notebooks of one submission to grade, and what was refused (never raises for what the
    submission holds)."""
    try:
        return _collect(Path(folder), name)
    except Exception as err:  # noqa: BLE001 - whatever it is, it is this submission's problem
        return [], [Refused(name, "", "", "unreadable", f"the submission could not be read ({type(err).__name__})")]


def _collect(folder: Path, name: str) -> tuple[list[Notebook], list[Refused]]:
    refused: list[Refused] = []
    top = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        info = os.stat(name, dir_fd=top, follow_symlinks=False)
        if stat.S_ISLNK(info.st_mode):
            return [], [Refused(name, name, name if name.endswith(".ipynb") else "", "link",
                                "a link, not an upload: links are not graded")]
        if stat.S_ISREG(info.st_mode):
            found = _file(name, (), name, info, refused)
            return ([found] if found else []), refused
        if not stat.S_ISDIR(info.st_mode):
            return [], [Refused(name, name, "", "not a file", "neither a file nor a folder")]
        found: list[Notebook] = []
        entries = 0
        stack: list[tuple[str, ...]] = [()]
        while stack:
            rel = stack.pop()
            if len(rel) > MAX_DEPTH:
                refused.append(Refused(name, "/".join(rel), "", "cap", f"deeper than {MAX_DEPTH} folders: not searched"))
                continue
            fd = _open_inside(top, (name, *rel))
            try:
                with os.scandir(fd) as it:
                    listing = sorted((e.name for e in it))
                for child in listing:
                    entries += 1
                    if entries > MAX_ENTRIES:
                        refused.append(Refused(name, "/".join(rel), "", "cap",
                                               f"more than {MAX_ENTRIES} files and folders: the rest not searched"))
                        stack.clear()
                        break
                    if child in SKIP_FOLDERS:
                        continue
                    path = (*rel, child)
                    info = os.stat(child, dir_fd=fd, follow_symlinks=False)
                    if stat.S_ISLNK(info.st_mode):
                        if child.endswith(".ipynb") or _is_dir_link(fd, child):
                            refused.append(Refused(name, "/".join(path), child if child.endswith(".ipynb") else "",
                                                   "link", "a link, not an upload: links are not graded"))
                    elif stat.S_ISDIR(info.st_mode):
                        stack.append(path)
                    elif child.endswith(".ipynb"):
                        nb = _file(name, path, child, info, refused)
                        if nb:
                            found.append(nb)
            finally:
                os.close(fd)
    finally:
        os.close(top)
    return _choose(name, found, refused)


def _is_dir_link(fd: int, child: str) -> bool:
    try:
        return stat.S_ISDIR(os.stat(child, dir_fd=fd).st_mode)
    except OSError:
        return False


def _file(submission: str, parts: tuple[str, ...], name: str, info: os.stat_result,
          refused: list[Refused]) -> Notebook | None:
    where = "/".join(parts) if parts else name
    if not stat.S_ISREG(info.st_mode):
        refused.append(Refused(submission, where, name, "not a file", "not a regular file"))
    elif info.st_size > NOTEBOOK_MAX:
        refused.append(Refused(submission, where, name, "cap",
                               f"{info.st_size / 2**20:.0f} MiB, over the {NOTEBOOK_MAX / 2**20:.0f} MiB per notebook"))
    else:  # a hard link is decided class-wide (shared_files)
        return Notebook(submission, parts, name, info.st_size, (info.st_dev, info.st_ino), info.st_nlink)
    return None


def shared_files(collected: dict[str, list[Notebook]]) -> tuple[dict[str, list[Notebook]], list[Refused]]:
    """Decide the notebooks with more than one name, given every submission's collected notebooks.

    A file whose every name is in the class's submissions is graded under each (from private
    copies); when its names are in two submissions or more, each gets a "shared" report naming the
    others (the instructor decides who copied whom: the original's owner is graded as usual). A
    file with a name outside the submissions (a link to the instructor's files) is refused."""
    names: dict[tuple[int, int], list[Notebook]] = {}
    for found in collected.values():
        for nb in found:
            if nb.nlink > 1:
                names.setdefault(nb.inode, []).append(nb)
    kept: dict[str, list[Notebook]] = {}
    notes: list[Refused] = []
    for submission, found in collected.items():
        kept[submission] = []
        for nb in found:
            if nb.nlink == 1:
                kept[submission].append(nb)
                continue
            group = names[nb.inode]
            if len(group) < nb.nlink:
                notes.append(Refused(submission, nb.where, nb.name, "link",
                                     f"a hard link ({nb.nlink} names for one file, some outside the submissions): "
                                     "links are not graded"))
                continue
            kept[submission].append(nb)
            others = sorted({(o.submission, o.where) for o in group if o.submission != submission})
            if others:
                notes.append(Refused(submission, nb.where, nb.name, "shared",
                                     "the same file (a hard link) as " + ", ".join(f"{escape(s)}/{escape(w)}"
                                                                                  for s, w in others)
                                     + ": graded in each; look at who copied whom"))
    return kept, notes


def stage(folder: Path, nb: Notebook, staging: Path, number: int) -> Notebook:
    """Copy ``nb`` into the private folder ``staging`` now (``ValueError`` when it cannot be read
    as collected); the copy is what is graded."""
    data = read_notebook(folder, nb)
    path = Path(staging) / f"{number}.ipynb"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return replace(nb, staged=str(path))


def read_staged(nb: Notebook) -> bytes:
    """The bytes of a staged notebook (its private copy), within the cap."""
    fd = os.open(nb.staged, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as f:
        data = f.read(NOTEBOOK_MAX + 1)
    if len(data) > NOTEBOOK_MAX:
        raise ValueError(f"over the {NOTEBOOK_MAX / 2**20:.0f} MiB per notebook")
    return data


def _choose(submission: str, found: list[Notebook], refused: list[Refused]) -> tuple[list[Notebook], list[Refused]]:
    """One notebook per chapter (the nearest the top, then the first in path order), then the caps."""
    by_chapter: dict[str, list[Notebook]] = {}
    for nb in sorted(found, key=lambda n: (len(n.parts), n.parts)):
        by_chapter.setdefault(nb.name, []).append(nb)
    chosen = []
    for chapter, copies in sorted(by_chapter.items()):
        chosen.append(copies[0])
        for dup in copies[1:]:
            refused.append(Refused(submission, dup.where, chapter, "duplicate",
                                   f"another copy of {chapter}: only {copies[0].where} is graded"))
    graded, total = [], 0
    for nb in chosen:
        if len(graded) >= MAX_NOTEBOOKS:
            refused.append(Refused(submission, nb.where, nb.name, "cap", f"over {MAX_NOTEBOOKS} notebooks per submission"))
        elif total + nb.size > SUBMISSION_MAX:
            refused.append(Refused(submission, nb.where, nb.name, "cap",
                                   f"over {SUBMISSION_MAX / 2**20:.0f} MiB per submission"))
        else:
            total += nb.size
            graded.append(nb)
    return graded, refused


def _open_inside(top: int, parts: tuple[str, ...], *, last_flags: int = os.O_RDONLY | os.O_DIRECTORY) -> int:
    """Open ``parts`` under the folder ``top`` one level at a time, never following a link."""
    fd = top
    try:
        for i, part in enumerate(parts):
            if part in ("", ".", "..") or "/" in part:
                raise ValueError(f"a path part {part!r}")
            flags = (last_flags if i == len(parts) - 1 else os.O_RDONLY | os.O_DIRECTORY) | os.O_NOFOLLOW
            new = os.open(part, flags, dir_fd=fd)
            if fd != top:
                os.close(fd)
            fd = new
    except BaseException:
        if fd != top:
            os.close(fd)
        raise
    return fd


def read_notebook(folder: Path, nb: Notebook) -> bytes:
    """The bytes of ``nb``, read now, through no link, within its cap (``ValueError`` otherwise)."""
    top = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        parts = (nb.submission, *nb.parts) if nb.parts else (nb.submission,)
        fd = _open_inside(top, parts, last_flags=os.O_RDONLY | os.O_NONBLOCK)
    finally:
        os.close(top)
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if (not stat.S_ISREG(info.st_mode) or info.st_nlink != nb.nlink
                or (nb.inode != (0, 0) and (info.st_dev, info.st_ino) != nb.inode)):
            raise ValueError("it is no longer the file that was collected")
        data = f.read(NOTEBOOK_MAX + 1)
    if len(data) > NOTEBOOK_MAX:
        raise ValueError(f"over the {NOTEBOOK_MAX / 2**20:.0f} MiB per notebook")
    return data
