"""Chapter 03's function exercises (views-transpose-strides, views-merge-heads) answered as a
student hands them in: the reference forms and the classic wrong ones."""

from __future__ import annotations


def transposed_strides(shape, dim0, dim1):
    strides = [1] * len(shape)
    for i in range(len(shape) - 2, -1, -1):  # each stride: the product of the sizes to its right
        strides[i] = strides[i + 1] * shape[i + 1]
    strides[dim0], strides[dim1] = strides[dim1], strides[dim0]
    return tuple(strides)


def merge_heads(x):
    batch, heads, seq, width = x.shape
    return x.transpose(1, 2).reshape(batch, seq, heads * width)


def merge_heads_buggy(x):  # the notebook's stub: .view on a transposed tensor
    batch, heads, seq, width = x.shape
    return x.transpose(1, 2).view(batch, seq, heads * width)

