"""Starting engines: Plan -> argv (engines.py), process supervision (spawn.py), the bundled runtime (runtime/)."""
