"""Starting engines: Plan -> argv (engines.py), process supervision (spawn.py) and reading its output (diagnosis.py), the
bundled runtime (runtime/, its contract in runtime/contract.py)."""
