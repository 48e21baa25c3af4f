"""Starting engines from an argv and an environment: process supervision (spawn.py), reading its output (diagnosis.py),
the engines' ready lines and the bundled runtime's install (engines.py), the bundled runtime (runtime/, its contract in
runtime/contract.py). The advisor turns a Plan into the argv (advisor/rules/<engine>/command.py); nothing here imports
the advisor."""
