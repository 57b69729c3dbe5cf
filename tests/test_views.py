"""Tests of lectorch.views (strides, offsets, storage sharing), its figures, panel and exercises."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from matplotlib.figure import Figure

from lectorch.plots.views import storage_view_figure, strides_figure
from lectorch.views import (
    Layout,
    contiguous_strides,
    describe_view,
    element_offset,
    flat_storage,
    shares_storage,
    storage_cells,
)
from lectorch.widgets.views import explore_view, parse_index, parse_ints, view_panel

SETTINGS = settings(max_examples=150, deadline=None)

shapes = st.lists(st.integers(0, 5), min_size=1, max_size=4).map(tuple)


@st.composite
def index_for(draw, shape):
    """A basic index for ``shape``: ints (in range, possibly negative), slices with positive steps, maybe '...'."""
    entries = []
    for size in shape:
        if size > 0 and draw(st.booleans()):
            entries.append(draw(st.integers(-size, size - 1)))
        else:
            bound = st.none() | st.integers(-7, 7)
            entries.append(slice(draw(bound), draw(bound), draw(st.none() | st.integers(1, 4))))
    if draw(st.booleans()):  # a run of entries becomes '...'
        start = draw(st.integers(0, len(entries)))
        stop = draw(st.integers(start, len(entries)))
        entries[start:stop] = [Ellipsis]
    else:  # or only a prefix of the dims is indexed
        entries = entries[: draw(st.integers(0, len(entries)))]
    return tuple(entries)


@st.composite
def views(draw):
    """(shape, permutation, index) of a random view ``torch.arange(n).view(shape).permute(perm)[index]``."""
    shape = draw(shapes)
    perm = tuple(draw(st.permutations(range(len(shape)))))
    permuted = tuple(shape[d] for d in perm)
    return shape, perm, draw(index_for(permuted))


def _torch_view(shape, perm, index):
    x = torch.arange(Layout.contiguous(shape).numel).view(shape)
    return x, x.permute(*perm)[index]


# --- strides and offsets agree with torch ------------------------------------------------------------
@SETTINGS
@given(shapes)
def test_contiguous_strides_match_torch(shape):
    assert contiguous_strides(shape) == tuple(torch.empty(shape).stride())
    assert Layout.contiguous(shape) == Layout.of(torch.empty(shape))


@SETTINGS
@given(views())
def test_layout_predicts_torch_views(case):
    shape, perm, index = case
    _, view = _torch_view(shape, perm, index)
    predicted = Layout.contiguous(shape).permute(*perm)[index]
    assert predicted == Layout.of(view)
    assert predicted.is_contiguous == view.is_contiguous()


@SETTINGS
@given(shapes, st.data())
def test_transpose_matches_torch(shape, data):
    d0 = data.draw(st.integers(-len(shape), len(shape) - 1))
    d1 = data.draw(st.integers(-len(shape), len(shape) - 1))
    assert Layout.contiguous(shape).transpose(d0, d1) == Layout.of(torch.empty(shape).transpose(d0, d1))


@SETTINGS
@given(views())
def test_storage_cells_agree_with_indexing_the_storage(case):
    shape, perm, index = case
    x, view = _torch_view(shape, perm, index)
    cells = storage_cells(view)
    assert len(cells) == view.numel()
    assert torch.equal(flat_storage(view)[torch.tensor(cells, dtype=torch.long)], view.reshape(-1))
    # x holds its own storage index, so the values are the cells
    assert view.reshape(-1).tolist() == cells
    assert shares_storage(x, view) == (x.numel() > 0)  # an empty storage is shared with nothing


@SETTINGS
@given(views(), st.data())
def test_offset_of_reads_the_element(case, data):
    shape, perm, index = case
    _, view = _torch_view(shape, perm, index)
    if view.numel() == 0:
        return
    idx = tuple(data.draw(st.integers(-n, n - 1)) for n in view.shape)
    layout = Layout.of(view)
    assert flat_storage(view)[layout.offset_of(idx)] == view[idx]
    positive = tuple(i % n for i, n in zip(idx, view.shape))
    assert element_offset(positive, layout.strides, layout.offset) == layout.offset_of(idx)


@SETTINGS
@given(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 9)), min_size=1, max_size=4), st.integers(0, 3))
def test_is_contiguous_and_span_match_torch(dims, offset):
    shape, strides = zip(*dims)
    layout = Layout(shape, strides, offset)
    base = torch.empty(layout.span + 1)
    t = base.as_strided(shape, strides, offset)
    assert layout.is_contiguous == t.is_contiguous()
    assert layout.cells() == [layout.offset_of(i) for i in _all_indices(shape)]
    assert layout.span == (max(layout.cells()) + 1 if layout.numel else 0)


def _all_indices(shape):
    import itertools

    return itertools.product(*(range(n) for n in shape))


# --- the facts the chapter states --------------------------------------------------------------------
def test_four_by_four_example():
    x = torch.arange(16.0).view(4, 4)
    assert x.stride() == (4, 1) == contiguous_strides((4, 4))
    assert element_offset((1, 2), x.stride()) == 6
    assert flat_storage(x)[6] == x[1, 2]
    assert Layout.of(x.T).strides == (1, 4)
    assert storage_cells(x[:, 1:3]) == [1, 2, 5, 6, 9, 10, 13, 14]
    assert storage_cells(x.T)[:5] == [0, 4, 8, 12, 1]


def test_shares_storage():
    x = torch.zeros(4, 4)
    for v in (x[1], x[:, 1:3], x.view(16), x.T, x.reshape(2, 8), x.expand(3, 4, 4)):
        assert shares_storage(x, v) and shares_storage(v, x)
    for c in (x.clone(), x.T.contiguous(), x.T.reshape(16), x + 0, torch.zeros(4, 4)):
        assert not shares_storage(x, c)
    assert not shares_storage(torch.empty(0), torch.empty(0))


def test_describe_view():
    x = torch.zeros(4, 4)
    info = describe_view(x[1:, ::2])
    assert (info.shape, info.strides, info.offset, info.contiguous) == ((3, 2), (4, 2), 4, False)
    assert (info.numel, info.storage_elements, info.storage_bytes) == (6, 16, 64)
    assert "non-contiguous" in str(info)
    assert describe_view(torch.zeros(2, 3, dtype=torch.bfloat16)).storage_bytes == 12


def test_cells_with_broadcast_stride_zero():
    w = torch.arange(6.0).view(3, 2)
    e = w.expand(2, 3, 2)
    assert e.stride() == (0, 2, 1)
    assert storage_cells(e) == list(range(6)) * 2


# --- bad inputs give clear errors --------------------------------------------------------------------
@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: element_offset((1, 2), (4,)), ValueError, "index"),
        (lambda: element_offset((1.0, 2), (4, 1)), TypeError, "index"),
        (lambda: element_offset((1, -2), (4, 1)), ValueError, "index"),
        (lambda: element_offset((1, 2), (4, -1)), ValueError, "strides"),
        (lambda: element_offset((1, 2), (4, 1), offset=-1), ValueError, "offset"),
        (lambda: element_offset(None, (4, 1)), TypeError, "index"),
        (lambda: contiguous_strides((4, -1)), ValueError, "shape"),
        (lambda: contiguous_strides("ab"), TypeError, "shape"),
        (lambda: Layout((4, 4), (4,)), ValueError, "strides"),
        (lambda: Layout((4, 4), (4, 1), -1), ValueError, "offset"),
        (lambda: Layout.contiguous((4, 4)).permute(0, 0), ValueError, "dims"),
        (lambda: Layout.contiguous((4, 4)).permute(0, 1, 2), ValueError, "dims"),
        (lambda: Layout.contiguous((4, 4)).transpose(0, 2), ValueError, "dim1"),
        (lambda: Layout.contiguous((4, 4)).transpose(0.5, 1), TypeError, "dim0"),
        (lambda: Layout.contiguous((4, 4))[4], ValueError, "index"),
        (lambda: Layout.contiguous((4, 4))[0, 0, 0], ValueError, "index"),
        (lambda: Layout.contiguous((4, 4))[::-1], ValueError, "step"),
        (lambda: Layout.contiguous((4, 4))[1.5], TypeError, "index"),
        (lambda: Layout.contiguous((4, 4))[None], TypeError, "index"),
        (lambda: Layout.contiguous((4, 4))[..., ...], ValueError, "index"),
        (lambda: Layout.contiguous((4, 4))["a":], TypeError, "slice"),
        (lambda: Layout.contiguous((4, 4)).offset_of((4, 0)), ValueError, "index"),
        (lambda: Layout.contiguous((4, 4)).offset_of((1,)), ValueError, "index"),
        (lambda: Layout.contiguous((2000, 1000)).cells(), ValueError, "elements"),
        (lambda: storage_cells([1, 2]), TypeError, "tensor"),
        (lambda: Layout.of("x"), TypeError, "tensor"),
        (lambda: shares_storage(1, torch.zeros(2)), TypeError, "a"),
        (lambda: shares_storage(torch.zeros(2), None), TypeError, "b"),
        (lambda: describe_view(3), TypeError, "tensor"),
        (lambda: flat_storage(3), TypeError, "tensor"),
    ],
)
def test_bad_inputs(call, error, match):
    with pytest.raises(error, match=match):
        call()


# --- figures -----------------------------------------------------------------------------------------
def _grey_cells(ax):
    return sum(1 for p in ax.patches if p.get_facecolor()[:3] == pytest.approx((0.902, 0.902, 0.902), abs=1e-2))


def test_storage_view_figure_colours_the_cells_read():
    x = torch.arange(16).view(4, 4)
    fig = storage_view_figure(x[:, 1:3], name="x[:, 1:3]")
    assert isinstance(fig, Figure)
    storage_ax, view_ax = fig.axes
    assert len(storage_ax.patches) == 16 and _grey_cells(storage_ax) == 8
    assert len(view_ax.patches) == 8
    assert [t.get_text() for t in view_ax.texts] == ["1", "2", "5", "6", "9", "10", "13", "14"]
    assert "non-contiguous" in view_ax.get_title(loc="left")
    fig3 = storage_view_figure(torch.arange(24).view(2, 3, 4).permute(2, 0, 1))
    assert len(fig3.axes[1].patches) == 24 and _grey_cells(fig3.axes[0]) == 0


def test_strides_figure_walks():
    layout = Layout.contiguous((4, 4))
    fig = strides_figure({"x": layout, "x.T": layout.transpose(0, 1)})
    walk = fig.axes[3].lines[0].get_ydata()
    assert list(walk[:5]) == [0, 4, 8, 12, 1]
    assert "strides (1, 4)" in fig.axes[2].get_title(loc="left")


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: storage_view_figure([1, 2]), TypeError, "view"),
        (lambda: storage_view_figure(torch.zeros(100)), ValueError, "storage"),
        (lambda: storage_view_figure(Layout.contiguous((4, 4)), storage_size=8), ValueError, "storage_size"),
        (lambda: strides_figure({}), TypeError, "views"),
    ],
)
def test_figure_bad_inputs(call, error, match):
    with pytest.raises(error, match=match):
        call()


# --- the panel ---------------------------------------------------------------------------------------
def test_parsers():
    assert parse_ints("4, 4", name="shape") == (4, 4)
    assert parse_ints("[2,3,4]", name="shape") == (2, 3, 4)
    assert parse_ints(" ", name="dims") == ()
    assert parse_index("1:3, ::2, ..., -1") == (slice(1, 3), slice(None, None, 2), Ellipsis, -1)
    assert parse_index("") == ()
    with pytest.raises(ValueError, match="shape"):
        parse_ints("4, x", name="shape")
    with pytest.raises(ValueError, match="index"):
        parse_index("1:2:3:4")
    with pytest.raises(ValueError, match="index"):
        parse_index("a")


def test_view_panel_reacts_to_controls():
    p = view_panel()
    assert "strides</td><td>(1, 4)" in p.result.value and "offset</td><td>4" in p.result.value
    assert "shares storage with x</td><td>yes" in p.result.value
    assert "<img" in p.result.value
    p.controls["dims"].value = ""
    assert "strides</td><td>(4, 1)" in p.result.value and "offset</td><td>1" in p.result.value
    p.controls["index"].value = ""
    p.controls["then"].value = ".view(-1)"
    assert "contiguous</td><td>yes" in p.result.value and "shares storage with x</td><td>yes" in p.result.value
    p.controls["dims"].value = "1, 0"
    assert "⚠" in p.result.value and "view(-1)" in p.result.value  # .view refuses: message, no crash
    p.controls["then"].value = ".reshape(-1)"
    assert "a copy: 64 new bytes" in p.result.value
    p.controls["then"].value = "+ 0"
    assert "<code>(x.permute(1, 0)) + 0</code>" in p.result.value


@pytest.mark.parametrize(
    "controls, message",
    [
        ({"shape": "9, 9"}, "64"),
        ({"shape": "100000, 100000"}, "10000000000 elements"),  # refused before allocating 40 GB
        ({"shape": "0, 4"}, "between 1"),
        ({"shape": "4, x"}, "shape"),
        ({"dims": "0, 0"}, "dims"),
        ({"index": "5"}, "out of range"),
        ({"index": "::-1"}, "positive"),
        ({"shape": "1, 1, 1, 1, 1"}, "dims"),
    ],
)
def test_view_panel_bad_combinations_show_a_message(controls, message):
    p = view_panel(dims="", index="")
    for name, value in controls.items():
        p.controls[name].value = value
    assert "⚠" in p.result.value and message in p.result.value


def test_explore_view_agrees_with_torch():
    table, fig = explore_view("2, 3, 4", "2, 0, 1", "1:, ::2", "(nothing)")
    v = torch.arange(24).view(2, 3, 4).permute(2, 0, 1)[1:, ::2]
    assert f"strides</td><td>{tuple(v.stride())}" in table
    assert f"offset</td><td>{v.storage_offset()}" in table
    assert isinstance(fig, Figure)


# The chapter's exercises are tested in tests/test_exercises_views.py.
