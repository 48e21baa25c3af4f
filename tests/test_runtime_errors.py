"""Bad checkpoints and bad flags: one clear error naming the tensor, file or fix; the CLI exits 2 without a traceback."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from runtime_models import PROMPTS, build_hf_model, open_runtime, runtime_logits, save_tiny_model
from safetensors.torch import load_file, save_file

from launcher.runtime.errors import RuntimeUsageError, WeightError

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def llama_dir(tmp_path_factory) -> Path:
    return save_tiny_model("llama", tmp_path_factory.mktemp("err") / "llama")


def edited_copy(src: Path, dst: Path, edit) -> Path:
    shutil.copytree(src, dst)
    tensors = load_file(str(dst / "model.safetensors"))
    edit(tensors)
    save_file(tensors, str(dst / "model.safetensors"), metadata={"format": "pt"})
    return dst


def test_mis_shaped_tensor_is_named(llama_dir, tmp_path):
    name = "model.layers.1.self_attn.k_proj.weight"
    bad = edited_copy(llama_dir, tmp_path / "m", lambda t: t.__setitem__(name, torch.zeros(16, 64)))
    with pytest.raises(WeightError, match=rf"tensor {name} has shape \[16, 64\], expected \[32, 64\]"):
        open_runtime(bad)


def test_missing_tensor_is_named(llama_dir, tmp_path):
    name = "model.layers.0.mlp.down_proj.weight"
    bad = edited_copy(llama_dir, tmp_path / "m", lambda t: t.pop(name))
    with pytest.raises(WeightError, match=rf"tensor {name} is missing"):
        open_runtime(bad)


def test_extra_tensor_is_named(llama_dir, tmp_path):
    name = "model.layers.0.mlp.surprise.weight"
    bad = edited_copy(llama_dir, tmp_path / "m", lambda t: t.__setitem__(name, torch.zeros(2)))
    with pytest.raises(WeightError, match=rf"unexpected tensor {name}"):
        open_runtime(bad)


def test_truncated_file_is_named(llama_dir, tmp_path):
    bad = shutil.copytree(llama_dir, tmp_path / "m")
    file = bad / "model.safetensors"
    file.write_bytes(file.read_bytes()[: file.stat().st_size // 2])
    with pytest.raises(WeightError, match=r"model\.safetensors"):
        open_runtime(bad)


def test_sharded_checkpoint_with_index_loads_and_missing_shard_is_named(tmp_path):
    model = build_hf_model("qwen3")
    model.save_pretrained(tmp_path / "sharded", max_shard_size="60KB")
    sharded = tmp_path / "sharded"
    assert (sharded / "model.safetensors.index.json").is_file()
    shutil.copy(save_tiny_model("qwen3", tmp_path / "single") / "tokenizer.json", sharded)
    single = runtime_logits(open_runtime(tmp_path / "single"), PROMPTS)
    assert all(torch.equal(a, b) for a, b in zip(runtime_logits(open_runtime(sharded), PROMPTS), single, strict=True))
    shard = sorted(sharded.glob("model-*.safetensors"))[-1]
    shard.unlink()
    with pytest.raises(WeightError, match=shard.name):
        open_runtime(sharded)


def test_unsupported_architecture_lists_supported_and_points_to_sglang(llama_dir, tmp_path):
    bad = shutil.copytree(llama_dir, tmp_path / "m")
    config = json.loads((bad / "config.json").read_text())
    config["architectures"] = ["MistralForCausalLM"]
    (bad / "config.json").write_text(json.dumps(config))
    with pytest.raises(RuntimeUsageError, match=r"MistralForCausalLM is not supported.*Qwen3MoeForCausalLM.*--engine sglang"):
        open_runtime(bad)


def test_tp_that_does_not_divide_heads_is_refused(llama_dir):
    from launcher.runtime.config import check_tp, load_config

    with pytest.raises(RuntimeUsageError, match="--tp-size 3 does not divide attention heads 4"):
        check_tp(load_config(llama_dir), 3)


def run_cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    full_env.pop("RANK", None), full_env.pop("WORLD_SIZE", None)
    return subprocess.run([sys.executable, "-m", "launcher.runtime", *args], capture_output=True, text=True, timeout=120,
                          env=full_env, cwd=REPO)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--tp-size", "2"], "error: --tp-size 2 does not equal WORLD_SIZE 1; run it under torchrun with --nproc-per-node 2"),
        (["--model", "/nonexistent/model"], "error: model directory /nonexistent/model does not exist"),
    ],
)
def test_cli_errors_are_one_line_with_exit_2(args, message):
    run = run_cli(*args)
    assert run.returncode == 2
    assert run.stderr.strip().splitlines() == [run.stderr.strip()]
    assert run.stderr.startswith(message), run.stderr
    assert "Traceback" not in run.stderr


def test_cli_bad_checkpoint_is_one_line_with_exit_2(llama_dir, tmp_path):
    bad = edited_copy(llama_dir, tmp_path / "m", lambda t: t.pop("model.norm.weight"))
    run = run_cli("--model", str(bad), "--log-level", "ERROR")
    assert run.returncode == 2
    assert run.stderr.strip() == f"error: tensor model.norm.weight is missing from the checkpoint in {bad}"


def test_serve_preflight_fails_before_the_model_is_touched():
    """A busy port or a public host is reported first: the model directory here does not even exist."""
    import socket

    pytest.importorskip("launcher.runtime.serve")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        run = run_cli("--mode", "serve", "--model", "/nonexistent/model", "--port", str(port))
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert run.stderr.strip() == f"error: 127.0.0.1:{port} is already in use; stop the other server or pick another --port"
    run = run_cli("--mode", "serve", "--model", "/nonexistent/model", "--host", "0.0.0.0")
    assert run.returncode == 2
    assert run.stderr.strip().startswith("error: --host 0.0.0.0 is not a loopback address")


def test_serve_help_lists_the_serve_options(capsys):
    from launcher.runtime.worker import parse_args

    with pytest.raises(SystemExit) as exit_info:
        parse_args(["--mode", "serve", "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert "--port" in out and "--max-queue" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--max-model-len", "0"], "error: --max-model-len 0 must be at least 2 (a prompt token and one more)"),
        (["--temperature", "-1"], "error: --temperature -1.0 must be between 0 (greedy) and 2"),
        (["--temperature", "nan"], "error: --temperature nan must be between 0 (greedy) and 2"),
        (["--top-p", "2"], "error: --top-p 2.0 must be above 0 and at most 1"),
        (["--top-p", "0"], "error: --top-p 0.0 must be above 0 and at most 1"),
        (["--max-tokens", "0"], "error: --max-tokens 0 must be at least 1"),
        (["--max-batch-size", "0"], "error: --max-batch-size 0 must be at least 1"),
        (["--mode", "serve", "--max-request-bytes", "0"], "error: --max-request-bytes 0 must be at least 1"),
    ],
)
def test_values_the_runtime_cannot_use_are_one_line_usage_errors(args, message):
    run = run_cli(*args, "--model", "/nonexistent/model")  # refused before the model is even looked for
    assert (run.returncode, run.stderr.strip()) == (2, message)


def config_copy(src: Path, dst: Path, text: str) -> Path:
    shutil.copytree(src, dst)
    (dst / "config.json").write_text(text)
    return dst


@pytest.mark.parametrize(("text", "kind"), [("[1, 2]", "a list"), ("null", "null"), ('"llama"', "a string")])
def test_a_config_json_that_is_not_an_object_is_one_line(llama_dir, tmp_path, text, kind):
    bad = config_copy(llama_dir, tmp_path / "m", text)
    run = run_cli("--model", str(bad))
    assert run.returncode == 2, run.stderr
    assert run.stderr.strip() == f"error: {bad}/config.json holds {kind}, not a JSON object; pass a Hugging Face model directory"


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("num_attention_heads", 0, "num_attention_heads is 0; it must be a positive integer"),
        ("hidden_size", -8, "hidden_size is -8; it must be a positive integer"),
        ("num_hidden_layers", "many", "lacks or garbles a required field"),
    ],
)
def test_nonsense_sizes_are_one_line(llama_dir, tmp_path, field, value, message):
    config = json.loads((llama_dir / "config.json").read_text())
    config[field] = value
    bad = config_copy(llama_dir, tmp_path / "m", json.dumps(config))
    run = run_cli("--model", str(bad))
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr
    assert len(run.stderr.strip().splitlines()) == 1
    if message:
        assert message in run.stderr


def test_a_model_too_large_to_allocate_says_how_much_memory_it_needs(llama_dir, tmp_path):
    config = json.loads((llama_dir / "config.json").read_text())
    config.update(hidden_size=400_000_000, num_attention_heads=4, head_dim=16)  # terabytes: beyond any machine
    bad = config_copy(llama_dir, tmp_path / "m", json.dumps(config))
    run = run_cli("--model", str(bad))
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr
    assert re.fullmatch(
        r"error: the model needs about [\d.]+ GiB per rank \(weights [\d.]+ GiB \+ KV cache [\d.]+ GiB for "
        r"--max-batch-size 8 x --max-model-len \d+\) but this machine has [\d.]+ GiB free; lower --max-model-len or "
        r"--max-batch-size, raise --tp-size, or use a smaller --dtype",
        run.stderr.strip(),
    ), run.stderr


def test_a_max_model_len_too_large_to_allocate_says_how_much_memory_it_needs(llama_dir, tmp_path):
    config = json.loads((llama_dir / "config.json").read_text())
    config["max_position_embeddings"] = 10**9
    big = config_copy(llama_dir, tmp_path / "m", json.dumps(config))
    run = run_cli("--model", str(big), "--max-model-len", str(10**9))
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr
    assert "x --max-model-len 1000000000) but this machine has" in run.stderr
    kv = float(re.search(r"KV cache ([\d.]+) GiB", run.stderr).group(1))
    assert kv > 1000
