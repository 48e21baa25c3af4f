"""`advisor check --engine bundled` reports what the bundled runtime would refuse at start, from the runtime's own checks
(launcher/runtime/modeldir.py), and `advisor launch` then refuses without --force: check and launch never disagree."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from advisor.cli import main
from launcher.runtime.errors import RuntimeUsageError
from launcher.runtime.modeldir import check_model_dir

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def offline(empty_hf_cache):
    pass


@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory) -> Path:
    from launcher.runtime.demo import write_demo_checkpoint

    path = tmp_path_factory.mktemp("demo") / "model"
    path.mkdir()
    write_demo_checkpoint(path)
    return path


def broken_copy(demo_dir: Path, dst: Path, edit: Callable[[Path], None]) -> Path:
    dst.mkdir()
    for file in demo_dir.iterdir():
        (dst / file.name).symlink_to(file)  # the weights are large; only what is edited is copied
    (dst / "config.json").unlink()
    (dst / "config.json").write_text((demo_dir / "config.json").read_text())
    edit(dst)
    return dst


def edit_config(**fields) -> Callable[[Path], None]:
    def edit(path: Path) -> None:
        config = json.loads((path / "config.json").read_text())
        config.update(fields)
        (path / "config.json").write_text(json.dumps(config))

    return edit


BROKEN = {
    "gpt2": edit_config(architectures=["GPT2LMHeadModel"]),
    "yarn rope": edit_config(rope_scaling={"rope_type": "yarn", "factor": 4.0}),
    "no safetensors": lambda p: (p / "model.safetensors").unlink(),
    "no tokenizer.json": lambda p: (p / "tokenizer.json").unlink(),
    "quantized": edit_config(quantization_config={"quant_method": "fp8"}),
}


def check(*args: str) -> tuple[int, dict]:
    result = CliRunner().invoke(main, ["check", "--json", *args], catch_exceptions=False)
    return result.exit_code, json.loads(result.stdout)


def bundled_problems(data: dict) -> list[tuple[str, str, str]]:
    return [(p["id"], p["severity"], p["message"]) for p in data["problems"] if p["id"].startswith("bundled_")]


@pytest.mark.parametrize("what", list(BROKEN))
def test_check_reports_what_the_runtime_refuses_in_the_runtimes_own_words(demo_dir, tmp_path, what):
    model = broken_copy(demo_dir, tmp_path / "m", BROKEN[what])
    with pytest.raises(RuntimeUsageError) as refused:
        check_model_dir(model)
    code, data = check("--engine", "bundled", "--model", str(model), "--tp", "2")
    assert code == 1
    assert bundled_problems(data) == [
        ("bundled_model_unsupported", "error", f"the bundled runtime would refuse it: {refused.value}")
    ]


def test_the_runtime_refuses_with_that_same_line(demo_dir, tmp_path):
    model = broken_copy(demo_dir, tmp_path / "m", BROKEN["gpt2"])
    _, data = check("--engine", "bundled", "--model", str(model))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("RANK", None), env.pop("WORLD_SIZE", None)
    run = subprocess.run([sys.executable, "-m", "launcher.runtime", "--model", str(model)], capture_output=True,
                         text=True, timeout=120, env=env)  # fmt: skip
    assert run.returncode == 2
    message = bundled_problems(data)[0][2]
    assert run.stderr.strip() == "error: " + message.removeprefix("the bundled runtime would refuse it: ")


def test_a_good_directory_and_the_demo_model_have_no_such_problem(demo_dir):
    assert bundled_problems(check("--engine", "bundled", "--model", str(demo_dir))[1]) == []
    assert bundled_problems(check("--engine", "bundled")[1]) == []


def test_a_catalog_id_without_weights_on_disk_is_an_error_here_and_info_for_another_machine():
    code, data = check("--engine", "bundled", "--model", "Qwen/Qwen3-30B-A3B", "--tp", "2")
    assert code == 1
    assert [(i, s) for i, s, _ in bundled_problems(data)] == [("bundled_weights_missing", "error")]
    assert bundled_problems(data)[0][2].startswith("the weights of Qwen/Qwen3-30B-A3B are not on disk here:")
    _, data = check("--profile", "h200-8", "--engine", "bundled", "--model", "Qwen/Qwen3-30B-A3B", "--tp", "8")
    assert [(i, s) for i, s, _ in bundled_problems(data)] == [("bundled_weights_missing", "info")]
    _, data = check("--profile", "h200-8", "--engine", "bundled", "--model", "deepseek-ai/DeepSeek-V3", "--tp", "8")
    assert [(i, s) for i, s, _ in bundled_problems(data)] == [
        ("bundled_model_unsupported", "error"),
        ("bundled_weights_missing", "info"),
    ]


@pytest.mark.parametrize("model", ["gpt2", "Qwen/Qwen3-30B-A3B"])
def test_launch_refuses_without_force_and_starts_nothing(demo_dir, tmp_path, model):
    target = str(broken_copy(demo_dir, tmp_path / "m", BROKEN[model])) if model in BROKEN else model
    runs = tmp_path / "runs"
    result = CliRunner().invoke(
        main, ["launch", "--engine", "bundled", "--model", target, "--tp", "2", "--mode", "generate"],
        env={"TP_ADVISOR_RUNS": str(runs)}, catch_exceptions=False,
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    assert "error: not starting: the plan has 1 error(s)" in result.stderr
    assert not runs.exists()  # no run directory: nothing was spawned
