"""einsum patterns with named dimensions: what they compute, their output shape and their FLOPs.

A pattern is written the einops way, dimension names separated by spaces, one group per operand,
``->`` before the output: ``"b s1 h, b s2 h -> b s1 s2"``. A dimension missing from the output is
summed (contracted); ``...`` stands for any number of leading dimensions, broadcast between operands.

>>> c = analyze("b s1 h, b s2 h -> b s1 s2", {"b": 2, "s1": 3, "s2": 4, "h": 5})
>>> c.output_shape, c.batch, c.free, c.contracted
((2, 3, 4), ('b',), ('s1', 's2'), ('h',))
>>> c.flops                      # 2 × 2·3·4·5: one multiply and one add per (b, s1, s2, h)
240
>>> c.torch_equation
'abc,adc->abd'

FLOPs convention (see :func:`analyze`): operands are contracted pairwise, left to right, as
torch.einsum evaluates them (:attr:`Contraction.steps`). Each pair is a loop nest over the pair's
dimensions: one multiplication at each point, plus one addition if the step sums a dimension. For
two operands that is ``2 × the product of all dimension sizes``, the matmul rule ``2·m·k·n``
generalised; a chain of three matrices costs two matmuls:

>>> analyze("i j, j k, k l -> i l", {"i": 2, "j": 3, "k": 4, "l": 5}).flops   # 2·2·3·4 + 2·2·4·5
128
"""

from __future__ import annotations

import math
import re
import string
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from lectorch import _validate

ELLIPSIS = "..."
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


@dataclass(frozen=True)
class Pattern:
    """A parsed pattern: the dimension names of each input operand and of the output."""

    inputs: tuple[tuple[str, ...], ...]
    output: tuple[str, ...]

    @property
    def dims(self) -> tuple[str, ...]:
        """Every distinct named dimension (not ``...``), in order of first appearance."""
        seen: dict[str, None] = {}
        for group in (*self.inputs, self.output):
            for dim in group:
                if dim != ELLIPSIS:
                    seen.setdefault(dim)
        return tuple(seen)

    def __str__(self) -> str:
        return ", ".join(" ".join(g) for g in self.inputs) + " ->" + "".join(" " + d for d in self.output)


def parse_pattern(pattern: str) -> Pattern:
    """Split an einops-style einsum pattern into its operands' and output's dimension names.

    >>> parse_pattern("b s1 h, b s2 h -> b s1 s2").inputs
    (('b', 's1', 'h'), ('b', 's2', 'h'))
    >>> parse_pattern("... i, ... i -> ...").output
    ('...',)
    >>> parse_pattern("i, i ->").output       # a dot product: the output is a scalar
    ()
    """
    if not isinstance(pattern, str):
        raise TypeError(f"pattern must be a str such as 'b s1 h, b s2 h -> b s1 s2', got {type(pattern).__name__}")
    if pattern.count("->") != 1:
        raise ValueError(
            f"pattern must contain '->' exactly once, between the operands and the output "
            f"(e.g. 'b s1 h, b s2 h -> b s1 s2'), got {pattern!r}"
        )
    left, right = pattern.split("->")
    groups = left.split(",")
    inputs = tuple(_parse_group(g, f"operand {i}", pattern) for i, g in enumerate(groups, start=1))
    for i, group in enumerate(inputs, start=1):
        if not group:
            raise ValueError(f"pattern has an empty operand {i} in {pattern!r}: name its dimensions, e.g. 'b s h'")
    if "," in right:
        raise ValueError(f"pattern has a ',' after '->' in {pattern!r}: einsum has exactly one output")
    output = _parse_group(right, "the output", pattern)
    seen: set[str] = set()
    for dim in output:
        if dim in seen:
            raise ValueError(
                f"pattern repeats dimension {dim!r} in the output of {pattern!r}; name each output dimension once"
            )
        seen.add(dim)
    known = {d for group in inputs for d in group}
    for dim in output:
        if dim not in known:
            what = "'...'" if dim == ELLIPSIS else f"dimension {dim!r}"
            hint = ""
            if any(len(d) > 1 for d in known | set(output)) and all(len(g) == 1 for g in inputs):
                hint = " (einops patterns separate dimensions by spaces: write 'b s h', not 'bsh')"
            raise ValueError(f"pattern's output uses {what}, which appears in no operand of {pattern!r}{hint}")
    return Pattern(inputs=inputs, output=output)


def _parse_group(text: str, where: str, pattern: str) -> tuple[str, ...]:
    if "(" in text or ")" in text:
        raise ValueError(
            f"pattern groups dimensions with parentheses in {where} of {pattern!r}: einsum cannot split or "
            f"merge dimensions; use einops.rearrange first"
        )
    dims = tuple(text.split())
    for dim in dims:
        if dim != ELLIPSIS and not _NAME.match(dim):
            raise ValueError(
                f"pattern has an invalid dimension name {dim!r} in {where} of {pattern!r}: use letters, digits "
                f"and '_' (not starting with a digit), or '...'"
            )
    if dims.count(ELLIPSIS) > 1:
        raise ValueError(f"pattern uses '...' more than once in {where} of {pattern!r}")
    return dims


@dataclass(frozen=True)
class MatmulDims:
    """A two-operand contraction seen as ``batch`` products of an (m, k) by a (k, n) matrix."""

    batch: int
    m: int
    k: int
    n: int


@dataclass(frozen=True)
class PairStep:
    """One pairwise step of a contraction: the result so far times the next operand.

    ``dims``: every dimension of the pair (the step's loop nest); ``summed``: the dimensions no later
    operand and not the output needs, summed in this step; ``flops``: one multiply per point of the
    nest, plus one add if something is summed.
    """

    dims: tuple[str, ...]
    summed: tuple[str, ...]
    flops: int


@dataclass(frozen=True)
class Contraction:
    """What an einsum pattern does for given sizes. Build it with :func:`analyze`.

    ``batch``: kept dimensions found in every operand; ``free``: kept dimensions missing from some
    operand (the m and n of a matmul); ``contracted``: dimensions summed away (missing from the
    output). ``...`` is listed under one of these like a dimension. ``sizes`` holds every named
    dimension's size; ``ellipsis_shape`` the broadcast shape of ``...`` (``()`` if unused).
    """

    pattern: Pattern
    sizes: dict[str, int]
    ellipsis_shape: tuple[int, ...]
    input_shapes: tuple[tuple[int, ...], ...]
    output_shape: tuple[int, ...]
    batch: tuple[str, ...]
    free: tuple[str, ...]
    contracted: tuple[str, ...]

    @property
    def num_operands(self) -> int:
        return len(self.pattern.inputs)

    def size(self, dim: str) -> int:
        """The size of a dimension; for ``...`` the product of its shape."""
        return math.prod(self.ellipsis_shape) if dim == ELLIPSIS else self.sizes[dim]

    @property
    def iteration_space(self) -> int:
        """The product of the sizes of every distinct dimension: the points of the naive loop nest."""
        return math.prod(self.sizes.values()) * math.prod(self.ellipsis_shape)

    @property
    def steps(self) -> tuple[PairStep, ...]:
        """The pairwise steps torch.einsum takes: the first two operands, then the result with the
        third, and so on (its order without opt_einsum); a dimension is summed in the first step
        after which neither a later operand nor the output has it. One operand: no step.

        >>> [s.summed for s in analyze("i j, j k, k l -> i l", {"i": 2, "j": 3, "k": 4, "l": 5}).steps]
        [('j',), ('k',)]
        """
        inputs, output = self.pattern.inputs, set(self.pattern.output)
        kept = list(dict.fromkeys(inputs[0]))
        steps = []
        for i in range(1, len(inputs)):
            later = output.union(*(set(g) for g in inputs[i + 1:]))
            dims = tuple(dict.fromkeys([*kept, *inputs[i]]))
            summed = tuple(d for d in dims if d not in later)
            points = math.prod(self.size(d) for d in dims)
            steps.append(PairStep(dims, summed, (2 if summed else 1) * points))
            kept = [d for d in dims if d in later]
        return tuple(steps)

    @property
    def flops(self) -> int:
        """FLOPs of the contraction by the course's convention (see :func:`analyze`)."""
        if self.num_operands == 1:
            return self.iteration_space if self.contracted else 0
        return sum(step.flops for step in self.steps)

    @property
    def matmul(self) -> MatmulDims | None:
        """The (batch, m, k, n) of a matmul-like pattern, else None.

        Matmul-like: two operands, at least one summed dimension, and every summed dimension in
        both operands. Then ``flops == 2·batch·m·k·n`` and torch.einsum runs exactly one (b)mm,
        which FlopCounterMode counts the same (unless k == 1: summing one term, torch multiplies
        elementwise instead and counts 0).
        """
        if self.num_operands != 2 or not self.contracted:
            return None
        a, b = (set(g) for g in self.pattern.inputs)
        if any(d not in a or d not in b for d in self.contracted):
            return None
        size = self.size
        return MatmulDims(
            batch=math.prod(size(d) for d in self.batch),
            m=math.prod(size(d) for d in self.free if d in a),
            k=math.prod(size(d) for d in self.contracted),
            n=math.prod(size(d) for d in self.free if d in b),
        )

    @property
    def torch_equation(self) -> str:
        """The same contraction as a ``torch.einsum`` equation (one letter per dimension)."""
        dims = self.pattern.dims
        if len(dims) > len(string.ascii_letters):
            raise ValueError(f"pattern has {len(dims)} dimensions; torch.einsum allows at most 52")
        letter = dict(zip(dims, string.ascii_letters))
        letter[ELLIPSIS] = ELLIPSIS
        lhs = ",".join("".join(letter[d] for d in g) for g in self.pattern.inputs)
        return lhs + "->" + "".join(letter[d] for d in self.pattern.output)

    def role(self, dim: str) -> str:
        """'batch', 'free' or 'contracted'."""
        for name in ("batch", "free", "contracted"):
            if dim in getattr(self, name):
                return name
        raise ValueError(f"dim {dim!r} is not in the pattern {self.pattern}")


def analyze(
    pattern: str,
    sizes: Mapping[str, Any] | None = None,
    *,
    shapes: Sequence[Sequence[int]] | None = None,
) -> Contraction:
    """Analyse an einsum ``pattern`` for given dimension ``sizes`` and/or operand ``shapes``.

    ``sizes`` maps each dimension name to its size (``"..."`` to a tuple of sizes); ``shapes``
    gives one shape per operand, from which sizes are read (and checked against each other and
    against ``sizes``). Every dimension needs a size from one of them.

    **FLOPs convention.** Operands are contracted pairwise, left to right, as torch.einsum does
    (:attr:`Contraction.steps`); each step is a loop nest over its pair's dimensions (P points, the
    product of their sizes) with one multiplication at each point, plus one addition if the step
    sums a dimension. So two operands with a summed dimension cost ``2·P`` (a multiply-add is 2
    FLOPs: ``2·m·k·n`` for a matmul); an elementwise or outer product ``P``; a one-operand sum
    ``P``; a one-operand rearrangement 0. For matmul-like patterns (:attr:`Contraction.matmul`),
    and chains whose every step sums a dimension shared by its pair, this is exactly what
    torch.einsum runs and what ``FlopCounterMode`` counts. Otherwise torch may do less (it sums a
    dimension found in one operand only before multiplying), and ``FlopCounterMode`` counts
    nothing for pure elementwise products and sums.

    >>> analyze("... i, ... i -> ...", shapes=[(2, 3, 4), (3, 4)]).output_shape
    (2, 3)
    >>> analyze("b s h -> b s", {"b": 2, "s": 3, "h": 4}).flops     # a sum: one add per element
    24
    >>> analyze("b s h, h -> b s", {"b": 2, "s": 3})
    Traceback (most recent call last):
    ...
    ValueError: sizes has no size for dimension 'h' of 'b s h, h -> b s': pass sizes={'h': ...} or the operands' shapes
    """
    parsed = parse_pattern(pattern)
    known: dict[str, int] = {}
    ellipsis_given: tuple[int, ...] | None = None
    if sizes is not None:
        if not isinstance(sizes, Mapping):
            raise TypeError(f"sizes must be a dict of dimension name -> size, got {type(sizes).__name__}")
        used = set(parsed.dims) | ({ELLIPSIS} if _uses_ellipsis(parsed) else set())
        for name, value in sizes.items():
            if name not in used:
                raise ValueError(f"sizes names dimension {name!r}, which is not in the pattern {str(parsed)!r}")
            if name == ELLIPSIS:
                ellipsis_given = _positive_shape(f"sizes['{ELLIPSIS}']", value)
            else:
                known[name] = _validate.positive_int(f"sizes[{name!r}]", value)

    operand_ellipses: list[tuple[int, ...] | None] = []
    if shapes is not None:
        if isinstance(shapes, (str, bytes)) or not isinstance(shapes, Sequence):
            raise TypeError(f"shapes must be a sequence of shapes, one per operand, got {type(shapes).__name__}")
        if len(shapes) != len(parsed.inputs):
            raise ValueError(
                f"shapes gives {len(shapes)} operand shape(s) but the pattern {str(parsed)!r} has "
                f"{len(parsed.inputs)} operand(s)"
            )
        for i, (group, raw) in enumerate(zip(parsed.inputs, shapes), start=1):
            shape = _positive_shape(f"shapes[{i - 1}]", raw)
            named = [d for d in group if d != ELLIPSIS]
            if ELLIPSIS in group:
                if len(shape) < len(named):
                    raise ValueError(
                        f"shapes[{i - 1}] = {shape} has {len(shape)} dimensions but operand {i} "
                        f"({' '.join(group)!r}) names {len(named)} besides '...'"
                    )
                at = group.index(ELLIPSIS)
                n_ell = len(shape) - len(named)
                operand_ellipses.append(shape[at:at + n_ell])
                dims_sizes = list(zip(group[:at], shape[:at])) + list(zip(group[at + 1:], shape[at + n_ell:]))
            else:
                if len(shape) != len(group):
                    raise ValueError(
                        f"shapes[{i - 1}] = {shape} has {len(shape)} dimensions but operand {i} "
                        f"({' '.join(group)!r}) names {len(group)}; add '...' to allow more"
                    )
                operand_ellipses.append(None)
                dims_sizes = list(zip(group, shape))
            for dim, n in dims_sizes:
                if dim in known and known[dim] != n:
                    raise ValueError(
                        f"size mismatch for dimension {dim!r}: {known[dim]} and {n} (in operand {i}, "
                        f"shape {shape}); a dimension has one size everywhere"
                    )
                known[dim] = n

    for dim in parsed.dims:
        if dim not in known:
            raise ValueError(
                f"sizes has no size for dimension {dim!r} of {str(parsed)!r}: pass sizes={{{dim!r}: ...}} "
                f"or the operands' shapes"
            )

    ellipsis_shape: tuple[int, ...] = ()
    if _uses_ellipsis(parsed):
        candidates = [e for e in operand_ellipses if e is not None]
        if ellipsis_given is not None:
            candidates.append(ellipsis_given)
        if not candidates:
            raise ValueError(
                f"sizes has no shape for '...' in {str(parsed)!r}: pass sizes={{'...': (2, 3)}} or the operands' shapes"
            )
        ellipsis_shape = _broadcast(candidates)
        if ellipsis_given is not None and ellipsis_shape != ellipsis_given:
            raise ValueError(
                f"size mismatch for '...': sizes gives {ellipsis_given}, the shapes broadcast to {ellipsis_shape}"
            )
    if not operand_ellipses:
        operand_ellipses = [ellipsis_shape if ELLIPSIS in g else None for g in parsed.inputs]

    def shape_of(group: tuple[str, ...], ell: tuple[int, ...]) -> tuple[int, ...]:
        out: list[int] = []
        for dim in group:
            out.extend(ell if dim == ELLIPSIS else (known[dim],))
        return tuple(out)

    input_shapes = tuple(shape_of(g, e or ()) for g, e in zip(parsed.inputs, operand_ellipses))
    output_set = set(parsed.output)
    every = [d for d in _ordered_dims(parsed)]
    batch = tuple(d for d in parsed.output if all(d in g for g in parsed.inputs))
    free = tuple(d for d in parsed.output if d not in batch)
    contracted = tuple(d for d in every if d not in output_set)
    return Contraction(
        pattern=parsed,
        sizes={d: known[d] for d in parsed.dims},
        ellipsis_shape=ellipsis_shape,
        input_shapes=input_shapes,
        output_shape=shape_of(parsed.output, ellipsis_shape),
        batch=batch,
        free=free,
        contracted=contracted,
    )


def _uses_ellipsis(parsed: Pattern) -> bool:
    return any(ELLIPSIS in g for g in parsed.inputs)


def _ordered_dims(parsed: Pattern) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for group in parsed.inputs:
        for dim in group:
            seen.setdefault(dim)
    return tuple(seen)


def _positive_shape(name: str, value: Any) -> tuple[int, ...]:
    shape = _validate.shape(name, value)
    if any(n < 1 for n in shape):
        raise ValueError(f"{name} = {shape} has a size below 1; this analysis needs sizes >= 1")
    return shape


def _broadcast(shapes: list[tuple[int, ...]]) -> tuple[int, ...]:
    rank = max(len(s) for s in shapes)
    out = []
    for axis in range(rank):
        sizes = {s[len(s) - rank + axis] for s in shapes if len(s) - rank + axis >= 0} - {1}
        if len(sizes) > 1:
            raise ValueError(f"size mismatch for '...': the shapes {shapes} do not broadcast")
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def parse_sizes(text: str) -> dict[str, Any]:
    """Read dimension sizes written as ``"b=2 s1=3 h=4"`` (commas allowed; ``...=2x3`` for ``...``).

    >>> parse_sizes("b=2, s1=128 h=64")
    {'b': 2, 's1': 128, 'h': 64}
    >>> parse_sizes("...=2x3 i=4")
    {'...': (2, 3), 'i': 4}
    """
    if not isinstance(text, str):
        raise TypeError(f"sizes must be a str such as 'b=2 s=3', got {type(text).__name__}")
    out: dict[str, Any] = {}
    for item in text.replace(",", " ").split():
        name, eq, value = item.partition("=")
        if not eq or not name:
            raise ValueError(f"sizes: cannot read {item!r}; write name=size, e.g. 'b=2 s=128'")
        if name in out:
            raise ValueError(f"sizes gives dimension {name!r} twice")
        try:
            numbers_ = tuple(int(v) for v in value.split("x")) if value else ()
        except ValueError:
            raise ValueError(f"sizes: {value!r} for {name!r} is not a whole number") from None
        if not numbers_:
            raise ValueError(f"sizes: {item!r} has no size after '='")
        if name == ELLIPSIS:
            out[name] = numbers_
        elif len(numbers_) != 1:
            raise ValueError(f"sizes: only '...' takes several sizes (like ...=2x3), got {item!r}")
        else:
            out[name] = _validate.positive_int(f"sizes[{name!r}]", numbers_[0])
    return out
