"""Simulated machines: Facts recorded as JSON package data (advisor/probe/profiles/*.json), labelled simulated."""

from __future__ import annotations

import os
from dataclasses import replace

from advisor.facts import PCIE_LEVELS, Facts, FactsError

PROFILES_DIR = os.path.join(os.path.dirname(__file__), "profiles")


class ProfileError(Exception):
    """An unknown or unreadable profile; the message is one line naming the known profiles."""


def list_profiles() -> list[str]:
    """Names of the bundled simulated machines, sorted."""
    return sorted(name[: -len(".json")] for name in os.listdir(PROFILES_DIR) if name.endswith(".json"))


def load_profile(name: str) -> Facts:
    """The simulated machine ``name``; its source is ``simulated:<name>``."""
    known = list_profiles()
    if name not in known:
        raise ProfileError(f"unknown profile {name!r}; known profiles: {', '.join(known)}")
    path = os.path.join(PROFILES_DIR, f"{name}.json")
    try:
        with open(path, encoding="utf-8") as file:
            text = file.read()
        facts = Facts.from_json(text, origin=path)
    except (OSError, FactsError) as exc:
        raise ProfileError(f"profile {name!r} is unreadable ({exc}); reinstall tp-advisor") from None
    return replace(facts, source=f"simulated:{name}")


def interconnect(facts: Facts) -> str:
    """A few words on how the GPUs talk: "NVSwitch, NV18", "NVLink pairs (NV12)", "PCIe only (PXB/SYS)"."""
    if not facts.gpus:
        return "no GPUs"
    nvlinks = sorted({link.nvlinks for link in facts.topology.links if link.nvlinks})
    pcie = sorted({link.pcie for link in facts.topology.links if link.pcie}, key=_pcie_order)
    words = []
    if facts.topology.nvswitch:
        words.append("NVSwitch " + "/".join(f"NV{n}" for n in nvlinks))
    elif nvlinks:
        words.append("NVLink " + "/".join(f"NV{n}" for n in nvlinks) + ", no NVSwitch")
    else:
        words.append("PCIe only" + (f" ({'/'.join(pcie)})" if pcie else ""))
    fabric = facts.topology.fabric
    if fabric.state == "completed" and fabric.cluster_uuid:
        words.append(f"NVLink fabric clique {fabric.clique_id}")
    elif fabric.state in ("not started", "in progress"):
        words.append(f"NVLink fabric {fabric.state}")
    return ", ".join(words)


def _pcie_order(level: str) -> int:
    order = list(PCIE_LEVELS.values())  # nearest first: X, PIX, PXB, PHB, NODE, SYS
    return order.index(level) if level in order else len(order)


def profile_summary(name: str) -> str:
    """One line for `advisor profiles`: "8 x NVIDIA H200 (9.0, 143771 MiB), NVSwitch NV18"."""
    facts = load_profile(name)
    if not facts.gpus:
        return f"no GPUs ({facts.driver.reason or 'no NVIDIA driver'})"
    names: dict[str, int] = {}
    for gpu in facts.gpus:
        names[gpu.name or "?"] = names.get(gpu.name or "?", 0) + 1
    first = facts.gpus[0]
    gpus = ", ".join(f"{count} x {gpu_name}" for gpu_name, count in names.items())
    return f"{gpus} ({first.capability_text}, {first.memory_total_mib} MiB), {interconnect(facts)}"
