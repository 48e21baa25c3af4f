"""Branch coverage of each release's own argument resolution over the conformance grid (issue 31).

functions.py finds the resolution functions in a release's wheel (roots named by qualified name, and what they call
inside the resolution files); measure.py turns coverage.py's JSON report of a grid run into the per-release golden
(tests/conformance/golden/<engine>-coverage-<release>.json); docs.py writes the table of docs/coverage.md from the goldens
and sorts every uncovered branch under a documented reason (tests/conformance/coverage_reasons.json). The engine
harnesses (conformance/sglang/coverage.py, conformance/vllm/coverage.py) run the grid under coverage.py.
"""
