"""Facts about a machine: probed live (advisor.probe.live: NVML, packages, host, environment) or read from a simulated
machine (advisor.probe.profiles). The two are separate modules because a plan for a simulated machine needs none of the
live probe's machinery (ctypes, subprocess, the package scanners).
"""
