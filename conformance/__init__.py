"""Conformance harnesses: run real engine releases' own argument resolution and store what they decide as goldens.

Not part of the wheel (pyproject's packages.find includes only advisor* and launcher*); CI reads only the goldens.
"""
