"""`advisor launch` without starting anything: --dry-run argv per engine and release, refusals, missing engines."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from advisor.cli import main

MODEL = "Qwen/Qwen3-30B-A3B"  # Qwen3MoeForCausalLM: on SGLang's fusion list from v0.5.7
RELEASES = [f"0.5.{n}" for n in range(7, 19)]
BOOL_FLAG = ["--enable-flashinfer-allreduce-fusion"]
BACKEND_FLAG = ["--flashinfer-allreduce-fusion-backend", "auto"]


def invoke(*args: str):
    return CliRunner().invoke(main, ["launch", *args], catch_exceptions=False)


def dry_run(*args: str) -> list[list[str]]:
    result = invoke("--dry-run", *args)
    assert result.exit_code == 0, result.stderr
    return [shlex.split(line) for line in result.stdout.splitlines() if not line.startswith("#")]


def tiny_llama_dir(model: Path) -> Path:
    """A model directory the bundled launch accepts: a small Llama config.json and the files the runtime looks for."""
    model.mkdir()
    (model / "config.json").write_text(
        '{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,'
        ' "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 256,'
        ' "torch_dtype": "float32"}'
    )
    for present in ("model.safetensors", "tokenizer.json"):  # what the runtime looks for before it starts
        (model / present).write_bytes(b"")
    return model


def fusion_flag(release: str) -> list[str]:
    """The flag SGLang sets when it auto-enables the fusion: a bool up to v0.5.13, the backend from v0.5.14."""
    return BOOL_FLAG if tuple(map(int, release.split("."))) <= (0, 5, 13) else BACKEND_FLAG


def sglang(*tail: str, tp: int = 8) -> list[str]:
    """A profile's plan: the command a person types on that machine, not this machine's interpreter."""
    return ["python3", "-m", "sglang.launch_server", "--model-path", MODEL, "--tp-size", str(tp), *tail]


@pytest.mark.parametrize("release", RELEASES)
def test_sglang_argv_per_release_on_h200(release: str):
    # H200 (SM90), one node, tp 8, no DP attention, no a2a: every modelled release auto-enables the fusion.
    argv = dry_run("--engine", "sglang", "--engine-version", release, "--profile", "h200-8", "--model", MODEL)
    assert argv == [sglang(*fusion_flag(release))]


@pytest.mark.parametrize("release", RELEASES)
def test_sglang_argv_per_release_on_h20(release: str):
    # H20 was excluded until v0.5.13 removed the exclusion.
    argv = dry_run("--engine", "sglang", "--engine-version", release, "--profile", "h20-8", "--model", MODEL)
    expected = fusion_flag(release) if tuple(map(int, release.split("."))) >= (0, 5, 13) else []
    assert argv == [sglang(*expected)]


@pytest.mark.parametrize("release", ["0.5.7", "0.5.13", "0.5.14", "0.5.18"])
def test_sglang_dp_attention_blocks_the_fusion_and_is_spelled_out(release: str):
    argv = dry_run(
        "--engine", "sglang", "--engine-version", release, "--profile", "h200-8", "--model", MODEL,
        "--dp-attention", "--dp-size", "8",
    )  # fmt: skip
    assert argv == [sglang("--enable-dp-attention", "--dp-size", "8")]


@pytest.mark.parametrize(("release", "tail"), [("0.5.13", []), ("0.5.14", BACKEND_FLAG), ("0.5.18", BACKEND_FLAG)])
def test_sglang_multi_node_on_b200_one_command_per_node(release: str, tail: list[str]):
    # Multi-node blocks the fusion up to v0.5.13; from v0.5.14 SM100 may fuse across nodes (mnnvl).
    result = invoke(
        "--dry-run", "--engine", "sglang", "--engine-version", release, "--profile", "b200-8", "--model", MODEL,
        "--nnodes", "2", "--tp", "16", "--dist-init-addr", "10.0.0.1:5000",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "# node 0 of 2" and lines[2] == "# node 1 of 2"
    for rank, line in ((0, lines[1]), (1, lines[3])):
        node = ["--nnodes", "2", "--node-rank", str(rank), "--dist-init-addr", "10.0.0.1:5000"]
        assert shlex.split(line) == sglang(*node, *tail, tp=16)


def test_sglang_user_overrides_after_double_dash_reach_the_argv_and_the_rules():
    argv = dry_run(
        "--engine", "sglang", "--engine-version", "0.5.18", "--profile", "h200-8", "--model", MODEL,
        "--", "--enforce-disable-flashinfer-allreduce-fusion", "--port", "30001",
    )  # fmt: skip
    assert argv == [sglang("--enforce-disable-flashinfer-allreduce-fusion", "--port", "30001")]


def test_bundled_default_is_the_demo_model_at_tp_2_on_cpu():
    result = invoke("--dry-run", "--profile", "cpu-only")
    assert result.exit_code == 0, result.stderr
    assert shlex.split(result.stdout) == [
        "python3", "-m", "torch.distributed.run", "--standalone", "--nnodes", "1", "--nproc-per-node", "2",
        "--max-restarts", "0", "-m", "launcher.runtime", "--model", "demo", "--tp-size", "2", "--dtype", "auto",
        "--device", "cpu", "--allreduce", "torch", "--mode", "serve",
    ]  # fmt: skip
    assert "bundled runtime" in result.stderr and "tp 2 on CPU" in result.stderr


def test_bundled_mode_and_extra_args_and_a_path_with_spaces_and_semicolons(tmp_path):
    model = tiny_llama_dir(tmp_path / "my model; rm -rf ~")
    argv = dry_run("--profile", "cpu-only", "--engine", "bundled", "--model", str(model), "--mode", "generate",
                   "--", "--prompt", "a b; c", "--max-tokens", "3")  # fmt: skip
    assert len(argv) == 1
    cmd = argv[0]
    assert cmd[cmd.index("--model") + 1] == str(model)
    assert cmd[cmd.index("--mode") + 1] == "generate"
    assert cmd[-4:] == ["--prompt", "a b; c", "--max-tokens", "3"]


def test_bundled_multi_node_prints_a_rendezvous_command_per_node():
    result = invoke("--dry-run", "--profile", "h200-8", "--engine", "bundled", "--nnodes", "2", "--tp", "8",
                    "--dist-init-addr", "node0:29400")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    commands = [shlex.split(line) for line in result.stdout.splitlines() if not line.startswith("#")]
    assert len(commands) == 2
    for rank, argv in enumerate(commands):
        at = argv.index("--nnodes")
        assert argv[at : at + 8] == ["--nnodes", "2", "--node-rank", str(rank), "--rdzv-backend", "c10d",
                                     "--rdzv-endpoint", "node0:29400"]  # fmt: skip
        assert argv[argv.index("--nproc-per-node") + 1] == "4" and argv[argv.index("--tp-size") + 1] == "8"
        assert argv[argv.index("--device") + 1] == "cuda"


def test_plan_errors_refuse_to_start_and_say_why():
    # 16 ranks on an 8-GPU machine is an error in the plan.
    result = invoke("--profile", "h200-8", "--engine", "bundled", "--tp", "16")
    assert result.exit_code == 1
    assert "not starting: the plan has" in result.stderr and "--force" in result.stderr
    assert "error" in result.stderr
    # --dry-run still prints the command, and says it would be refused.
    result = invoke("--dry-run", "--profile", "h200-8", "--engine", "bundled", "--tp", "16")
    assert result.exit_code == 1
    assert "-m launcher.runtime" in result.stdout and "would refuse" in result.stderr


def test_a_simulated_machine_is_never_launched():
    result = invoke("--profile", "cpu-only", "--engine", "bundled")
    assert result.exit_code == 2
    assert "--dry-run" in result.stderr and "simulated:cpu-only" in result.stderr


def test_sglang_not_installed_gives_the_install_hint():
    # This machine's venv has no sglang (the live probe says so), so launching it must fail before starting anything.
    result = invoke("--engine", "sglang", "--model", MODEL)
    assert result.exit_code == 1
    assert "sglang is not installed" in result.stderr and "pip install" in result.stderr
    assert "Traceback" not in result.stderr


def test_check_and_launch_name_the_same_install_command():
    from advisor.rules.command import install_command

    result = invoke("--engine", "sglang", "--model", MODEL)
    check = CliRunner().invoke(main, ["check", "--json", "--engine", "sglang", "--model", MODEL])
    problem = next(p for p in json.loads(check.stdout)["problems"] if p["id"] == "sglang_not_installed")
    assert install_command("sglang") in result.stderr and install_command("sglang") in problem["fix"]


def test_summary_counts_conditions_in_words():
    result = invoke("--dry-run", "--profile", "cpu-only")
    assert "auto-enabled: its condition holds" in result.stderr  # the device decision has one condition
    assert "all 1 conditions" not in result.stderr


def test_node_rank_out_of_range_is_a_usage_error():
    result = invoke("--dry-run", "--profile", "cpu-only", "--engine", "bundled", "--node-rank", "3")
    assert result.exit_code == 2 and "--node-rank 3" in result.stderr


def test_strict_refuses_on_warnings_too():
    # flashinfer-python 0.6.12 beside flashinfer-jit-cache 0.6.11: a warning or an error depending on the rules;
    # with --strict either way the launch is refused, and --force overrides the refusal (then the simulated machine
    # is what stops it).
    args = ["--profile", "h200-8", "--engine", "bundled", "--tp", "8", "--with-package", "flashinfer-python==0.6.12",
            "--with-package", "flashinfer-jit-cache==0.6.11+cu128"]  # fmt: skip
    result = invoke(*args, "--strict")
    assert result.exit_code == 1 and "not starting: the plan has" in result.stderr
    result = invoke(*args, "--strict", "--force")
    assert result.exit_code == 2 and "--dry-run" in result.stderr


def test_dist_init_addr_must_be_host_port():
    result = invoke("--dry-run", "--profile", "h200-8", "--engine", "bundled", "--nnodes", "2", "--dist-init-addr", "node0")
    assert result.exit_code == 2 and "HOST:PORT" in result.stderr


def test_a_path_with_terminal_escapes_is_shown_escaped_in_the_command(tmp_path):
    """A model directory (or prompt) holding ESC must not reach the terminal raw: the printed command shows it escaped."""
    model = tiny_llama_dir(tmp_path / "m\x1b]0;pwned\x07")
    result = invoke("--dry-run", "--profile", "cpu-only", "--engine", "bundled", "--model", str(model), "--mode",
                    "generate", "--", "--prompt", "\x1b[2J")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert "\x1b" not in result.stdout and "\x07" not in result.stdout
    assert "\\x1b]0;pwned\\x07" in result.stdout and "\\x1b[2J" in result.stdout
