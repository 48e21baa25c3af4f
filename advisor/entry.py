"""The `advisor` console script and `python -m advisor` (pyproject.toml names this module): the click CLI."""

from advisor.cli import main

__all__ = ["main"]
