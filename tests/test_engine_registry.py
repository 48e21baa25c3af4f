"""The engine registry: an engine is one package plus one line in advisor.rules.registry, a release is one row.

The fake engine below is written to disk as a package (its rules, and an engine.py exporting ENGINE) and registered with
one line; the plan, `advisor check`, the CLI's choices and completion then know it without any other change.
"""

from __future__ import annotations

import json
import sys
import textwrap

import pytest
from click.testing import CliRunner

from advisor.cli import main
from advisor.models import resolve_model
from advisor.plan import Intent, PlanError, build_plan
from advisor.probe.profiles import load_profile
from advisor.rules import registry

RULES = '''
"""A made-up engine: its fusion is on from release 1.1 when tp > 1 (one row per release)."""
from advisor.rules.engine import Condition, Decision, Problem, Scenario, Source, is_enabled, state_of

ENGINE = "{name}"
ROWS = (  # (release, fusion on by default)
{rows}
)
RELEASES = tuple(release for release, _ in ROWS)
OFF_FLAG = "--no-fake-fusion"


def fusion_decision(s: Scenario, release: str) -> Decision:
    default_on = dict(ROWS)[release]
    conditions = (
        Condition("default_on", "on by default in this release", lambda _s: (default_on, release, "1.1.0+"), "why", "fix"),
        Condition("tp", "tp > 1", lambda s: (s.tp > 1, s.tp, "> 1"), "one GPU has nothing to reduce", "raise --tp"),
    )
    results = tuple(c.evaluate(s) for c in conditions)
    state = state_of(results, forced_off=s.has(OFF_FLAG))
    flags = ("--fake-fusion",) if is_enabled(state) else ()
    return Decision("flashinfer_allreduce_fusion", "Fake fusion", state, is_enabled(state), None, results, flags,
                    Source(f"fake v{{release}}", "fake/fusion.py"))


def decide(s: Scenario, release) -> tuple[list[Decision], list[Problem]]:
    return [fusion_decision(s, release.rules)], []  # release: advisor.rules.engine.Release, resolved once per plan
'''

ENGINE = '''
from functools import partial

from advisor.rules.engine import Engine, Forcing, ReleaseError, fusion_outcomes
import {name} as rules


def resolve(version):
    if version not in rules.RELEASES:
        raise ReleaseError(f"fake {{version}} is not modelled; pass --engine-version {{rules.RELEASES[-1]}}")
    return version, []


def command(plan, *, node_rank, dist_init_addr, **options):
    nodes = ["--node", str(node_rank), "--rendezvous", dist_init_addr] if plan.intent.nnodes > 1 else []
    return ["fake-serve", "--model", plan.intent.model or "", "--tp", str(plan.intent.tp), *nodes, *plan.flags]


ENGINE = Engine(
    name=rules.ENGINE, package="{name}-dist", releases=rules.RELEASES, resolve=resolve, decide=rules.decide,
    release_matrix=partial(fusion_outcomes, rules.fusion_decision, rules.RELEASES), command=command,
    install_hint=lambda version: "pip install {name}-dist",
    dtypes=("auto", "bfloat16"),
    decision_ids=("flashinfer_allreduce_fusion",),
    forcing={{"flashinfer_allreduce_fusion": Forcing(off=(rules.OFF_FLAG,))}},
)
'''


def write_engine(root, name: str, rows: list[tuple[str, bool]]) -> str:
    """The engine package on disk; returns the module path the registry line names."""
    package = root / name
    package.mkdir()
    table = "\n".join(f"    ({release!r}, {on}),  # one row per release" for release, on in rows)
    (package / "__init__.py").write_text(textwrap.dedent(RULES).format(name=name, rows=table))
    (package / "engine.py").write_text(textwrap.dedent(ENGINE).format(name=name))
    return f"{name}.engine"


@pytest.fixture
def register(tmp_path, monkeypatch):
    """Register an engine package written to tmp_path: the one registry line."""
    monkeypatch.syspath_prepend(str(tmp_path))
    written = []

    def add(name: str, rows: list[tuple[str, bool]]) -> None:
        monkeypatch.setitem(registry.ENGINES, name, write_engine(tmp_path, name, rows))
        written.append(name)

    yield add
    for name in written:
        for module in (name, f"{name}.engine"):
            sys.modules.pop(module, None)


def fake_plan(name: str, version: str, tp: int = 8, overrides: tuple[str, ...] = ()):
    intent = Intent(model="Qwen/Qwen3-8B", tp=tp, engine=name, engine_version=version, overrides=overrides)
    return build_plan(load_profile("h200-8"), resolve_model("Qwen/Qwen3-8B"), intent)


def test_a_registered_engine_gets_a_plan(register):
    register("tpfake", [("1.0.0", False), ("1.1.0", True)])
    plan = fake_plan("tpfake", "1.1.0")
    assert plan.engine == {"name": "tpfake", "version": "1.1.0", "rules": "1.1.0"}
    assert [d.id for d in plan.decisions] == ["flashinfer_allreduce_fusion"] and plan.decisions[0].enabled
    assert plan.flags == ("--fake-fusion",)
    assert plan.argv == ("fake-serve", "--model", "Qwen/Qwen3-8B", "--tp", "8", "--fake-fusion")
    assert [(r.release, r.enabled, r.failed_conditions) for r in plan.release_matrix] == [
        ("1.0.0", False, ("default_on",)), ("1.1.0", True, ())]  # fmt: skip
    installed = next(p for p in plan.problems if p.id == "tpfake-dist_not_installed")
    assert "pip install tpfake-dist" in installed.fix  # the check asks the engine for its package and install hint
    old = fake_plan("tpfake", "1.0.0")
    assert not old.decisions[0].enabled and old.argv[-1] == "8"
    with pytest.raises(PlanError, match="fake 9.9.9 is not modelled"):
        fake_plan("tpfake", "9.9.9")


def test_the_checks_read_the_engines_forcing_flags(register):
    """A100s have no fusion kernels: forcing the fusion on is a warning, in any registered engine's spelling."""
    from advisor.rules.checks import run_checks

    register("tpfake", [("1.0.0", False), ("1.1.0", True)])
    a100 = load_profile("a100-sxm-8")
    on = Intent(tp=8, engine="tpfake", overrides=("--enable-flashinfer-allreduce-fusion",))  # SGLang's spelling
    arch = [p for p in run_checks(a100, None, on) if p.id == "flashinfer_gpu_arch"]
    assert [p.severity for p in arch] == ["warning"]
    bridge = load_profile("h100-pcie-2-bridge")  # no NVSwitch: no multicast for a fusion across nodes
    ids = {p.id for p in run_checks(bridge, None, Intent(tp=4, nnodes=2, engine="tpfake"))}
    assert "no_multicast_for_fusion" in ids
    forced_off = Intent(tp=4, nnodes=2, engine="tpfake", overrides=("--no-fake-fusion",))  # the fake engine's own flag
    assert "no_multicast_for_fusion" not in {p.id for p in run_checks(bridge, None, forced_off)}


def test_adding_a_release_is_one_row(register):
    register("tpfake", [("1.0.0", False), ("1.1.0", True)])
    register("tpfake2", [("1.0.0", False), ("1.1.0", True), ("1.2.0", False)])  # the same engine, one row more
    assert registry.get("tpfake2").newest == "1.2.0"
    assert [r.release for r in fake_plan("tpfake2", "1.1.0").release_matrix] == ["1.0.0", "1.1.0", "1.2.0"]
    assert not fake_plan("tpfake2", "1.2.0").decisions[0].enabled


def test_the_engine_builds_its_own_command_line_everywhere(register):
    """The registered engine's command builder is the one every face uses (the plan's argv, `advisor launch`, the app):
    Engine.command_line checks the node rank and fills in the rendezvous address, then calls it."""
    from advisor.launch_prep import prepare_launch
    from advisor.rules.command import EngineCommandError, command_for

    register("tpfake", [("1.0.0", False), ("1.1.0", True)])
    intent = Intent(model="Qwen/Qwen3-8B", tp=8, nnodes=2, engine="tpfake", engine_version="1.1.0")
    plan = build_plan(load_profile("h200-8"), resolve_model("Qwen/Qwen3-8B"), intent)
    assert plan.argv == ("fake-serve", "--model", "Qwen/Qwen3-8B", "--tp", "8", "--node", "0", "--rendezvous",
                         "sim-h200-8:29500", "--fake-fusion")  # fmt: skip
    commands, _ = prepare_launch(plan, dist_init_addr="10.0.0.1:5000")
    assert [c[5:9] for c in commands] == [["--node", "0", "--rendezvous", "10.0.0.1:5000"],
                                          ["--node", "1", "--rendezvous", "10.0.0.1:5000"]]  # fmt: skip
    with pytest.raises(EngineCommandError, match="node rank 2 is outside 0..1"):
        command_for(plan, node_rank=2)


def _complete(words: str) -> list[str]:
    env = {"_ADVISOR_COMPLETE": "bash_complete", "COMP_WORDS": words, "COMP_CWORD": str(len(words.split()) - 1)}
    result = CliRunner().invoke(main, [], env=env, prog_name="advisor")
    return [line.split(",", 1)[1] for line in result.output.splitlines() if line.startswith("plain,")]


def test_the_cli_offers_and_checks_a_registered_engine(register):
    register("tpfake", [("1.0.0", False), ("1.1.0", True)])
    runner = CliRunner()
    result = runner.invoke(main, ["check", "--json", "--profile", "h200-8", "--engine", "tpfake", "--engine-version",
                                  "1.1.0", "--model", "Qwen/Qwen3-8B", "--tp", "2", "--dtype", "bfloat16"])  # fmt: skip
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["engine"] == {"name": "tpfake", "version": "1.1.0", "rules": "1.1.0"}
    assert data["argv"] == ["fake-serve", "--model", "Qwen/Qwen3-8B", "--tp", "2", "--fake-fusion"]
    assert [row["release"] for row in data["release_matrix"]] == ["1.0.0", "1.1.0"]
    unknown = runner.invoke(main, ["check", "--profile", "h200-8", "--engine", "nope"])
    assert unknown.exit_code == 2 and "tpfake" in unknown.output  # the choices name the registered engine
    dtype = runner.invoke(main, ["check", "--profile", "h200-8", "--engine", "tpfake", "--model", "Qwen/Qwen3-8B",
                                 "--dtype", "float32"])  # fmt: skip
    assert dtype.exit_code == 2 and "choose one of auto, bfloat16" in dtype.output  # the engine's own --dtype values
    assert _complete("advisor check --engine tpfake --engine-version 1.") == ["1.1.0", "1.0.0"]
    assert _complete("advisor explain --engine tpfake flash") == ["flashinfer_allreduce_fusion"]


def test_the_registry_names_its_engines_without_importing_their_rules():
    import subprocess

    code = ("import sys; from advisor.rules import registry; assert registry.names() == ('bundled', 'sglang', 'vllm');"
            " assert not [m for m in sys.modules if m.startswith(('advisor.rules.sglang', 'advisor.rules.vllm'))]")
    subprocess.run([sys.executable, "-c", code], check=True)
    assert [e.name for e in registry.engines()] == list(registry.names())
    assert registry.versioned() == ("sglang", "vllm")
    with pytest.raises(registry.UnknownEngine, match="choose one of bundled, sglang, vllm"):
        registry.get("trt")


def test_the_plan_resolves_the_release_once_and_hands_it_to_decide(monkeypatch):
    """Engine.resolve runs once per plan; decide gets its Release (the version, for warnings about it, and the rules)."""
    from dataclasses import replace

    from advisor.rules.engine import Release

    sglang = registry.get("sglang")
    calls = {"resolve": 0, "decide": []}

    def resolve(version):
        calls["resolve"] += 1
        return sglang.resolve(version)

    def decide(s, release):
        calls["decide"].append(release)
        return sglang.decide(s, release)

    counted = replace(sglang, resolve=resolve, decide=decide)
    monkeypatch.setattr(registry, "get", lambda name: counted)
    intent = Intent(model="Qwen/Qwen3-8B", tp=8, engine="sglang", engine_version="9.0.0")
    plan = build_plan(load_profile("h200-8"), resolve_model("Qwen/Qwen3-8B"), intent)
    assert calls == {"resolve": 1, "decide": [Release("9.0.0", sglang.newest)]}
    assert calls["decide"][0].newer and plan.engine == {"name": "sglang", "version": "9.0.0", "rules": sglang.newest}
    assert "engine_version_newer" in {p.id for p in plan.problems}
