"""tools/gpu/source_imports.py: the import scan that the GPU-box guard and the bare-venv test share."""

import doctest

import source_imports
from source_imports import imports, python_of_cell


def test_its_examples_hold():
    assert doctest.testmod(source_imports).failed == 0


def test_a_cell_with_magics_and_an_import_inside_a_function_is_read_whole():
    cell = "%%time\nimport numpy as np\ndef f():\n    from torch.utils import benchmark\n    !nvidia-smi\n"
    assert imports(python_of_cell(cell)) == {"numpy", "torch.utils"}


def test_only_an_import_error_guard_makes_an_import_optional():
    source = ("try:\n    import myst_nb\nexcept ImportError:\n    pass\n"
              "try:\n    import yaml\nexcept ValueError:\n    pass\n")
    assert imports(source, optional=False) == {"yaml"}
    assert imports(source) == {"myst_nb", "yaml"}
