"""advisor/rules/<engine>/command.py: the exact argv per engine, built from hand-made plans (the rules' own flags are tested in test_launch)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from advisor.facts import Facts, Gpu, Host
from advisor.launch_prep import commands_for_nodes
from advisor.models import ModelSpec
from advisor.plan import Intent, Plan
from advisor.rules.command import EngineCommandError, command_for, install_command, without_flag
from advisor.rules.engine import Decision, flag_value
from launcher import engines

CPU = Facts(host=Host(hostname="box"))
GPUS = Facts(host=Host(hostname="gpu-node-0"), gpus=(Gpu(index=0), Gpu(index=1)))


def plan(facts: Facts = CPU, spec: ModelSpec | None = None, flags: tuple[str, ...] = (), decisions=(), **intent) -> Plan:
    it = Intent(**intent)
    return Plan(intent=it, facts=facts, model=spec, engine={"name": it.engine}, flags=flags, decisions=tuple(decisions))


def bundled_decisions(allreduce: str, device: str) -> tuple[Decision, ...]:
    """The two decisions advisor/rules/bundled makes, with only the values the launcher reads."""
    return (
        Decision("flashinfer_allreduce_fusion", "fusion", "auto-enabled", True, {"allreduce": allreduce},
                 flags=("--allreduce", allreduce)),
        Decision("device", "device", "auto-enabled", True, {"device": device}),
    )  # fmt: skip


TORCHRUN = [sys.executable, "-m", "torch.distributed.run"]


def test_bundled_demo_on_cpu():
    argv = command_for(plan(tp=2, mode="generate", flags=("--allreduce", "torch")))
    assert argv == TORCHRUN + [
        "--standalone", "--nnodes", "1", "--nproc-per-node", "2", "--max-restarts", "0",
        "-m", "launcher.runtime", "--model", "demo", "--tp-size", "2", "--dtype", "auto", "--device", "cpu",
        "--allreduce", "torch", "--mode", "generate",
    ]  # fmt: skip


def test_bundled_on_gpus_takes_allreduce_and_device_from_the_decisions_and_mode_and_extra_last():
    spec = ModelSpec(id="/m/llama", architecture="LlamaForCausalLM", path="/m/llama")
    p = plan(GPUS, spec, flags=("--allreduce", "flashinfer-fusion", "--max-model-len", "4096"), model="/m/llama", tp=2,
             dtype="bfloat16", overrides=("--seed", "7"),
             decisions=bundled_decisions("flashinfer-fusion", "cuda"))  # fmt: skip
    argv = command_for(p, mode="bench", extra=["--max-tokens", "8"])
    tail = argv[argv.index("launcher.runtime") + 1 :]
    assert tail == [
        "--model", "/m/llama", "--tp-size", "2", "--dtype", "bfloat16", "--device", "cuda",
        "--allreduce", "flashinfer-fusion", "--mode", "bench", "--max-model-len", "4096", "--seed", "7", "--max-tokens", "8",
    ]  # fmt: skip


def test_bundled_uses_the_resolved_directory_of_a_hub_id():
    spec = ModelSpec(id="org/m", architecture="LlamaForCausalLM", path="/cache/models--org--m/snapshots/abc")
    argv = command_for(plan(spec=spec, model="org/m", tp=1))
    assert argv[argv.index("--model") + 1] == "/cache/models--org--m/snapshots/abc"
    assert argv[argv.index("--allreduce") + 1] == "torch"  # no decision -> the plain allreduce


def test_bundled_multi_node_one_rendezvous_command_per_node():
    cmds = commands_for_nodes(plan(GPUS, tp=4, nnodes=2), dist_init_addr="10.1.2.3:29400", python="python3")
    assert len(cmds) == 2
    for rank, argv in enumerate(cmds):
        assert argv[:3] == ["python3", "-m", "torch.distributed.run"]
        assert "--standalone" not in argv
        head = argv[3 : argv.index("-m", 3)]
        assert head == [
            "--nnodes", "2", "--node-rank", str(rank), "--rdzv-backend", "c10d", "--rdzv-endpoint", "10.1.2.3:29400",
            "--nproc-per-node", "2", "--max-restarts", "0",
        ]  # fmt: skip
        assert argv[argv.index("--tp-size") + 1] == "4"


def test_bundled_multi_node_default_endpoint_is_this_host():
    argv = command_for(plan(GPUS, tp=4, nnodes=2), node_rank=1)
    assert argv[argv.index("--rdzv-endpoint") + 1] == "gpu-node-0:29500"


def test_tp_that_does_not_split_over_nodes_is_refused():
    with pytest.raises(EngineCommandError, match="divisible by --nnodes"):
        command_for(plan(tp=3, nnodes=2))
    with pytest.raises(EngineCommandError, match="node rank 2"):
        command_for(plan(tp=4, nnodes=2), node_rank=2)


def test_sglang_single_node():
    p = plan(engine="sglang", model="Qwen/Qwen3-30B-A3B", tp=8, flags=("--flashinfer-allreduce-fusion-backend", "auto"),
             overrides=("--enforce-disable-flashinfer-allreduce-fusion",))  # fmt: skip
    assert command_for(p, python="/venvs/sgl/bin/python", extra=["--port", "30001"]) == [
        "/venvs/sgl/bin/python", "-m", "sglang.launch_server", "--model-path", "Qwen/Qwen3-30B-A3B", "--tp-size", "8",
        "--flashinfer-allreduce-fusion-backend", "auto", "--enforce-disable-flashinfer-allreduce-fusion", "--port", "30001",
    ]  # fmt: skip


def test_sglang_multi_node_dp_attention_and_a2a():
    p = plan(engine="sglang", model="deepseek-ai/DeepSeek-V3", tp=16, nnodes=2, dp_attention=True, dp_size=8,
             moe_a2a_backend="deepep", dtype="bfloat16")  # fmt: skip
    cmds = commands_for_nodes(p, python="python3", dist_init_addr="10.0.0.1:5000")
    assert cmds == [
        ["python3", "-m", "sglang.launch_server", "--model-path", "deepseek-ai/DeepSeek-V3", "--tp-size", "16",
         "--nnodes", "2", "--node-rank", str(rank), "--dist-init-addr", "10.0.0.1:5000",
         "--enable-dp-attention", "--dp-size", "8", "--moe-a2a-backend", "deepep", "--dtype", "bfloat16"]
        for rank in (0, 1)
    ]  # fmt: skip


def test_sglang_needs_a_real_model():
    with pytest.raises(EngineCommandError, match="--model"):
        command_for(plan(engine="sglang", tp=2))


def test_sglang_python_defaults_to_the_live_probed_interpreter_only():
    live = Facts(source="live", python_executable="/opt/sgl/bin/python")
    assert command_for(plan(live, engine="sglang", model="m", tp=1))[0] == "/opt/sgl/bin/python"
    # another machine: what a person types there, neither its recorded interpreter nor this machine's
    simulated = Facts(source="simulated:h200-8", python_executable="/elsewhere/python")
    assert command_for(plan(simulated, engine="sglang", model="m", tp=1))[0] == "python3"
    # --python with a profile: the packages (and so the engine) are that interpreter's, on this machine
    here = Facts(source="simulated:h200-8", python_executable="/opt/sgl/bin/python", python_here=True)
    assert command_for(plan(here, engine="sglang", model="m", tp=1))[0] == "/opt/sgl/bin/python"


def test_vllm():
    p = plan(engine="vllm", model="meta-llama/Llama-3.1-8B", tp=2, flags=("-cc.pass_config.fuse_allreduce_rms=True",))
    assert command_for(p) == [
        "vllm", "serve", "meta-llama/Llama-3.1-8B", "--tensor-parallel-size", "2",
        "-cc.pass_config.fuse_allreduce_rms=True",
    ]  # fmt: skip
    node1 = command_for(plan(engine="vllm", model="m", tp=8, nnodes=2), node_rank=1, dist_init_addr="h:1234")
    assert node1[-9:] == ["--nnodes", "2", "--node-rank", "1", "--master-addr", "h", "--master-port", "1234", "--headless"]


def _executable(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def test_vllm_runs_the_console_script_of_the_engines_environment(tmp_path):
    python = _executable(tmp_path / "env" / "bin" / "python")
    script = _executable(tmp_path / "env" / "bin" / "vllm")
    live = Facts(source="live", python_executable=str(python))
    assert command_for(plan(live, engine="vllm", model="m", tp=1))[:3] == [str(script), "serve", "m"]
    assert command_for(plan(engine="vllm", model="m", tp=1), python=str(python))[:3] == [str(script), "serve", "m"]


def test_vllm_without_a_console_script_runs_its_entry_point_through_the_interpreter(tmp_path):
    python = _executable(tmp_path / "env" / "bin" / "python")
    live = Facts(source="live", python_executable=str(python))
    argv = command_for(plan(live, engine="vllm", model="m", tp=4))
    assert argv == [str(python), "-m", "vllm.entrypoints.cli.main", "serve", "m", "--tensor-parallel-size", "4"]


def test_unknown_engine():
    with pytest.raises(EngineCommandError, match="unknown engine"):
        command_for(plan(engine="trt"))


def test_flag_helpers():
    flags = ["--a", "1", "--allreduce=torch", "--b", "--allreduce", "flashinfer-fusion"]
    assert flag_value(flags, "--allreduce") == "flashinfer-fusion"
    assert flag_value(flags, "--missing") is None
    assert without_flag(flags, "--allreduce") == ["--a", "1", "--b"]


def test_bundled_reads_the_decision_values_not_the_flags():
    """The decisions decide: a plan whose decisions say torch on cpu launches that, whatever its flags list holds."""
    p = plan(GPUS, tp=2, flags=("--allreduce", "flashinfer-fusion"), decisions=bundled_decisions("torch", "cpu"))
    argv = command_for(p)
    assert argv[argv.index("--allreduce") + 1] == "torch"
    assert argv[argv.index("--device") + 1] == "cpu"
    assert argv.count("--allreduce") == 1


def test_each_engine_supplies_its_ready_line():
    from advisor.rules import registry
    from launcher.engines import READY_SIGNALS
    from launcher.runtime.contract import READY_PREFIX

    def url(engine, text, rank):
        return next((u for s in registry.get(engine).ready if (u := s.url(text, rank)) is not None), None)

    assert url("bundled", READY_PREFIX + "http://127.0.0.1:8000", 0) == "http://127.0.0.1:8000"
    assert url("sglang", "INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)", None) == "http://0.0.0.0:30000"
    assert url("sglang", "ready: http://127.0.0.1:8000", None) is None  # not SGLang's line
    assert url("vllm", "Uvicorn running on http://0.0.0.0:8000", 3) is None  # only the main process's counts
    # A run whose caller names no engine waits for any engine's line.
    assert set(READY_SIGNALS) == set(registry.get("bundled").ready + registry.get("vllm").ready)


def _installed_from(tmp_path, monkeypatch, direct_url: str | None) -> None:
    """A tp-advisor distribution's metadata (as pip writes it, PEP 610's direct_url.json when given) first on sys.path,
    so importlib.metadata finds it before this environment's own."""
    info = tmp_path / "site" / "tp_advisor-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tp-advisor\nVersion: 0.1.0\n")
    if direct_url is not None:
        (info / "direct_url.json").write_text(direct_url)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))


@pytest.mark.parametrize(
    ("direct_url", "command"),
    [
        ('{"url": "file:///src/tp-advisor", "dir_info": {"editable": true}}', "pip install -e '/src/tp-advisor[runtime]'"),
        ('{"url": "file:///src/my%20clone", "dir_info": {}}', "pip install '/src/my clone[runtime]'"),
        ('{"url": "file:///tmp/tp_advisor-0.1.0-py3-none-any.whl", "archive_info": {}}', "pip install 'tp-advisor[runtime]'"),
        ('{"url": "https://github.com/x/tp-advisor", "vcs_info": {"vcs": "git"}}', "pip install 'tp-advisor[runtime]'"),
        ("not json", "pip install 'tp-advisor[runtime]'"),
        ('["file:///src"]', "pip install 'tp-advisor[runtime]'"),
        (None, "pip install 'tp-advisor[runtime]'"),  # from the package index: no direct_url.json
    ],
)
def test_runtime_extra_installs_from_where_the_advisor_came_from(tmp_path, monkeypatch, direct_url, command):
    """A clone's `pip install -e .` gets its own directory back (the index's tp-advisor may be another release)."""
    _installed_from(tmp_path, monkeypatch, direct_url)
    assert install_command("bundled") == command
    assert engines.runtime_install_commands(Facts(), torch_missing=True) == [engines.CPU_TORCH_INSTALL, command]
    assert engines.runtime_install_commands(Facts(), torch_missing=False) == [command]


@pytest.mark.parametrize(("mode", "overrides", "refused"), [
    ("serve", ("--bogus", "1"), "unrecognized arguments: --bogus 1"),
    ("generate", ("--max-batch-size", "-3"), "--max-batch-size -3 must be at least 1"),
    ("generate", ("--temperature", "nan"), "--temperature nan must be between 0 (greedy) and 2"),
    ("generate", ("--port", "8000"), "unrecognized arguments: --port 8000"),  # a serve option in generate mode
    ("bench", ("--batch-size", "x"), "--batch-size: invalid int value: 'x'"),
])  # fmt: skip
def test_bundled_arguments_the_runtime_refuses_are_refused_before_torchrun(mode, overrides, refused):
    """The runtime's own parser and value checks (launcher.runtime.worker.argument_error) run before any rank starts."""
    with pytest.raises(EngineCommandError, match="the bundled runtime would refuse its arguments") as exc:
        command_for(plan(tp=2, mode=mode, overrides=overrides))
    assert refused in str(exc.value)


@pytest.mark.parametrize(("mode", "overrides"), [
    ("serve", ("--port", "8000", "--host", "127.0.0.1")), ("generate", ("--prompt", "hi", "--max-tokens", "4")),
    ("generate", ("--help",)),
])  # fmt: skip
def test_bundled_arguments_the_runtime_takes_pass(mode, overrides):
    assert command_for(plan(tp=2, mode=mode, overrides=overrides))[-len(overrides):] == list(overrides)
