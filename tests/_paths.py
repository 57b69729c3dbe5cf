"""Where the tests find the repository: its root, one definition for every test module.

>>> (ROOT / "pyproject.toml").is_file()
True
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
