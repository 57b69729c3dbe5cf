"""Strides and views: a tensor is a pointer into a flat storage plus metadata (shape, strides, offset).

Element ``(i, j, ...)`` of a tensor sits at storage index ``offset + i·stride[0] + j·stride[1] + ...``.
Indexing, slicing, ``.view`` and ``.transpose`` only change that metadata; :class:`Layout` does the
same arithmetic without any data, so the rules can be checked against torch.

>>> x = torch.arange(16).view(4, 4)
>>> x.stride(), element_offset((1, 2), x.stride())
((4, 1), 6)
>>> Layout.of(x).transpose(0, 1).strides
(1, 4)
>>> shares_storage(x, x.T), x.T.is_contiguous()
(True, False)
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any, Sequence

import torch

from lectorch import _validate

#: storage_cells / Layout.cells list every element: a guard against calling them on a huge tensor.
MAX_CELLS = 1_000_000


def _tensor(name: str, value: Any) -> torch.Tensor:
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    return value


def _ints(name: str, value: Any, *, allow_negative: bool = False) -> tuple[int, ...]:
    if isinstance(value, torch.Size):
        value = tuple(value)
    return _validate.ints(name, value, allow_negative=allow_negative)


def contiguous_strides(shape: Sequence[int]) -> tuple[int, ...]:
    """Strides of a freshly allocated (row-major, "C-contiguous") tensor of ``shape``.

    The last dimension has stride 1; each earlier one jumps over a whole row of the later ones.
    Sizes 0 count as 1 (that is torch's convention, so the result equals ``torch.empty(shape).stride()``).

    >>> contiguous_strides((4, 4))
    (4, 1)
    >>> contiguous_strides((2, 3, 4))
    (12, 4, 1)
    """
    dims = _validate.shape("shape", shape)
    strides, step = [], 1
    for size in reversed(dims):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))


def element_offset(index: Sequence[int], strides: Sequence[int], offset: int = 0) -> int:
    """Storage index of the element at ``index``: ``offset + Σ index[d] · strides[d]``.

    >>> element_offset((1, 2), (4, 1))            # row 1, column 2 of a 4×4 matrix
    6
    >>> element_offset((1, 2), (1, 4))            # the same position in its transpose
    9
    >>> element_offset((0, 1), (4, 2), offset=1)  # x[:, 1::2] starts at storage index 1
    3
    """
    idx = _ints("index", index)
    st = _ints("strides", strides)
    if len(idx) != len(st):
        raise ValueError(f"index has {len(idx)} entries but strides has {len(st)}; give one index per dimension")
    off = _validate.non_negative_int("offset", offset)
    return off + sum(i * s for i, s in zip(idx, st))


@dataclass(frozen=True)
class Layout:
    """A tensor's metadata without its data: ``shape``, ``strides`` and storage ``offset`` (in elements).

    Methods mirror the torch operations that make views (``permute``, ``transpose``, indexing with ints
    and slices) and compute the new metadata with plain arithmetic.

    >>> x = Layout.contiguous((4, 4))
    >>> x
    Layout(shape=(4, 4), strides=(4, 1), offset=0)
    >>> x[1:, ::2]
    Layout(shape=(3, 2), strides=(4, 2), offset=4)
    >>> x[1:, ::2].cells()
    [4, 6, 8, 10, 12, 14]
    """

    shape: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int = 0

    def __post_init__(self) -> None:
        shape = _validate.shape("shape", self.shape)
        strides = _ints("strides", self.strides)
        if len(shape) != len(strides):
            raise ValueError(f"shape {shape} has {len(shape)} dims but strides {strides} has {len(strides)}")
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "strides", strides)
        object.__setattr__(self, "offset", _validate.non_negative_int("offset", self.offset))

    @classmethod
    def contiguous(cls, shape: Sequence[int]) -> Layout:
        """The layout of a fresh tensor of ``shape``.

        >>> Layout.contiguous((2, 3)).strides
        (3, 1)
        """
        return cls(tuple(shape), contiguous_strides(shape), 0)

    @classmethod
    def of(cls, tensor: torch.Tensor) -> Layout:
        """The layout of an existing tensor.

        >>> Layout.of(torch.zeros(4, 4)[:, 1])
        Layout(shape=(4,), strides=(4,), offset=1)
        """
        t = _tensor("tensor", tensor)
        return cls(tuple(t.shape), tuple(t.stride()), t.storage_offset())

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def is_contiguous(self) -> bool:
        """True when the elements sit in storage in row-major order with no gaps (torch's rule:
        dimensions of size 1 may have any stride, and an empty tensor is contiguous).

        >>> Layout.contiguous((4, 4)).is_contiguous, Layout.contiguous((4, 4)).transpose(0, 1).is_contiguous
        (True, False)
        """
        if self.numel == 0:
            return True
        expected = 1
        for size, stride in zip(reversed(self.shape), reversed(self.strides)):
            if size != 1:
                if stride != expected:
                    return False
                expected *= size
        return True

    def offset_of(self, index: Sequence[int]) -> int:
        """Storage index of one element; negative indices count from the end, as in Python.

        >>> Layout.contiguous((4, 4)).offset_of((1, 2)), Layout.contiguous((4, 4)).offset_of((-1, -1))
        (6, 15)
        """
        idx = _ints("index", index, allow_negative=True)
        if len(idx) != self.ndim:
            raise ValueError(f"index {idx} has {len(idx)} entries but the layout has {self.ndim} dims")
        norm = tuple(self._normalise_int(i, d) for d, i in enumerate(idx))
        return element_offset(norm, self.strides, self.offset)

    @property
    def span(self) -> int:
        """How many storage elements the view needs: its largest storage index + 1 (0 if empty).

        >>> Layout.contiguous((4, 4))[1:3].span
        12
        """
        if self.numel == 0:
            return 0
        return self.offset + sum((n - 1) * s for n, s in zip(self.shape, self.strides)) + 1

    def cells(self) -> list[int]:
        """The storage index of every element, in row-major order of the view (repeats are possible:
        a broadcast dimension has stride 0).

        >>> Layout.contiguous((2, 3)).transpose(0, 1).cells()
        [0, 3, 1, 4, 2, 5]
        >>> Layout((2, 3), (0, 1)).cells()            # an expanded row: stride 0 repeats it
        [0, 1, 2, 0, 1, 2]
        """
        if self.numel > MAX_CELLS:
            raise ValueError(f"this view has {self.numel} elements; cells() lists each one, so use it on "
                             f"views of at most {MAX_CELLS} elements")
        cells = [self.offset]
        for size, stride in zip(self.shape, self.strides):
            cells = [c + i * stride for c in cells for i in range(size)]
        return cells

    def permute(self, *dims: int) -> Layout:
        """Reorder the dimensions: shape and strides are permuted together, the storage is untouched.

        >>> Layout.contiguous((2, 3, 4)).permute(2, 0, 1)
        Layout(shape=(4, 2, 3), strides=(1, 12, 4), offset=0)
        """
        if len(dims) == 1 and not isinstance(dims[0], numbers.Integral):
            dims = tuple(dims[0])
        order = tuple(self._normalise_dim(d, name="dims") for d in _ints("dims", dims, allow_negative=True))
        if sorted(order) != list(range(self.ndim)):
            raise ValueError(f"dims {tuple(dims)} must be a permutation of 0..{self.ndim - 1}, each dim exactly once")
        return Layout(tuple(self.shape[d] for d in order), tuple(self.strides[d] for d in order), self.offset)

    def transpose(self, dim0: int, dim1: int) -> Layout:
        """Swap two dimensions (``tensor.transpose(dim0, dim1)``; ``.T`` of a matrix is ``transpose(0, 1)``).

        >>> Layout.contiguous((4, 4)).transpose(0, 1).strides
        (1, 4)
        """
        a = self._normalise_dim(dim0, name="dim0")
        b = self._normalise_dim(dim1, name="dim1")
        order = list(range(self.ndim))
        order[a], order[b] = order[b], order[a]
        return self.permute(*order)

    def __getitem__(self, index: Any) -> Layout:
        """Basic indexing with ints, slices (positive steps, as in torch) and one ``...``.

        An int removes its dimension and moves the offset; a slice ``start:stop:step`` moves the offset
        by ``start·stride`` and multiplies the stride by ``step``.

        >>> Layout.contiguous((4, 4))[2]
        Layout(shape=(4,), strides=(1,), offset=8)
        >>> Layout.contiguous((4, 4))[..., 1::2]
        Layout(shape=(4, 2), strides=(4, 2), offset=1)
        """
        entries = index if isinstance(index, tuple) else (index,)
        ellipses = sum(e is Ellipsis for e in entries)
        if ellipses > 1:
            raise ValueError("index may contain at most one '...'")
        for e in entries:
            if e is not Ellipsis and not isinstance(e, slice) and (
                    isinstance(e, bool) or not isinstance(e, numbers.Integral)):
                raise TypeError(f"index entries must be ints, slices or '...', got {e!r}")
        n_real = len(entries) - ellipses
        if n_real > self.ndim:
            raise ValueError(f"index {index!r} has {n_real} entries but the layout has only {self.ndim} dims")
        if ellipses:
            at = entries.index(Ellipsis)
            entries = entries[:at] + (slice(None),) * (self.ndim - n_real) + entries[at + 1:]
        entries = entries + (slice(None),) * (self.ndim - len(entries))

        shape, strides, offset = [], [], self.offset
        for d, (e, size, stride) in enumerate(zip(entries, self.shape, self.strides)):
            if isinstance(e, slice):
                if e.step is not None and (isinstance(e.step, bool) or not isinstance(e.step, numbers.Integral)):
                    raise TypeError(f"slice step must be an int, got {e.step!r}")
                if e.step is not None and e.step <= 0:
                    raise ValueError(f"slice step must be positive (torch has no negative strides), got {e.step}")
                for bound in (e.start, e.stop):
                    if bound is not None and (isinstance(bound, bool) or not isinstance(bound, numbers.Integral)):
                        raise TypeError(f"slice bounds must be ints, got {bound!r}")
                start, stop, step = e.indices(size)
                shape.append(len(range(start, stop, step)))
                strides.append(stride * step)
                offset += start * stride
            else:
                offset += self._normalise_int(int(e), d) * stride
        return Layout(tuple(shape), tuple(strides), offset)

    def _normalise_dim(self, dim: int, *, name: str) -> int:
        if isinstance(dim, bool) or not isinstance(dim, numbers.Integral):
            raise TypeError(f"{name} must be an int, got {dim!r}")
        if not -self.ndim <= dim < self.ndim:
            raise ValueError(f"{name}={dim} is out of range for a layout with {self.ndim} dims")
        return dim % self.ndim

    def _normalise_int(self, i: int, dim: int) -> int:
        size = self.shape[dim]
        if not -size <= i < size:
            raise ValueError(f"index {i} is out of range for dim {dim} of size {size}")
        return i % size


def storage_cells(tensor: torch.Tensor) -> list[int]:
    """The storage indices (in elements) that a tensor reads, in its row-major order.

    >>> x = torch.arange(16).view(4, 4)
    >>> storage_cells(x[:, 1:3])
    [1, 2, 5, 6, 9, 10, 13, 14]
    """
    return Layout.of(tensor).cells()


def shares_storage(a: torch.Tensor, b: torch.Tensor) -> bool:
    """True when ``a`` and ``b`` are views of the same storage (same device, same storage pointer).

    Sharing is about the storage, not about overlap: ``x[0]`` and ``x[1]`` share storage but touch
    different elements. An empty storage is shared with nothing.

    >>> x = torch.zeros(4, 4)
    >>> shares_storage(x, x[1:3]), shares_storage(x, x.T.contiguous())
    (True, False)
    """
    a, b = _tensor("a", a), _tensor("b", b)
    sa, sb = a.untyped_storage(), b.untyped_storage()
    if sa.nbytes() == 0 or sb.nbytes() == 0 or a.device != b.device:
        return False
    return sa.data_ptr() == sb.data_ptr()


def flat_storage(tensor: torch.Tensor) -> torch.Tensor:
    """The whole storage behind ``tensor`` as a 1-D tensor of its dtype (a view: no copy).

    >>> x = torch.arange(16).view(4, 4)
    >>> flat_storage(x.T)[6] == x[1, 2]
    tensor(True)
    """
    t = _tensor("tensor", tensor)
    n = t.untyped_storage().nbytes() // t.element_size()
    return t.detach().as_strided((n,), (1,), 0)


@dataclass(frozen=True)
class ViewInfo:
    """What :func:`describe_view` reports. ``storage_elements`` counts the whole storage, not the view."""

    shape: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int
    contiguous: bool
    numel: int
    storage_elements: int
    storage_bytes: int

    def __str__(self) -> str:
        kind = "contiguous" if self.contiguous else "non-contiguous"
        return (f"shape {self.shape}, strides {self.strides}, offset {self.offset}, {kind}, "
                f"{self.numel} of {self.storage_elements} storage elements ({self.storage_bytes} B)")


def describe_view(tensor: torch.Tensor) -> ViewInfo:
    """Shape, strides, offset, contiguity and storage size of a tensor.

    >>> print(describe_view(torch.zeros(4, 4).T))
    shape (4, 4), strides (1, 4), offset 0, non-contiguous, 16 of 16 storage elements (64 B)
    >>> print(describe_view(torch.zeros(4, 4)[2]))
    shape (4,), strides (1,), offset 8, contiguous, 4 of 16 storage elements (64 B)
    """
    t = _tensor("tensor", tensor)
    nbytes = t.untyped_storage().nbytes()
    return ViewInfo(tuple(t.shape), tuple(t.stride()), t.storage_offset(), t.is_contiguous(), t.numel(),
                    nbytes // t.element_size(), nbytes)
