"""Answers to the function exercises as the tests hand them in, one module per chapter's topic: the
reference forms and the classic wrong variants. The per-topic tests (tests/test_exercises_<topic>.py)
and the matrix of the practice check against the grader (tests/test_exercises_matrix.py) share them.

>>> from _answers import views
>>> views.transposed_strides((2, 3, 4), 0, 2)
(1, 4, 12)
"""
