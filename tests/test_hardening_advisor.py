"""Hostile but realistic input to the real `advisor` command (the advisor's side): outputs that are not regular
files, inputs that never end, a Hugging Face cache whose refs/main is broken, numbers that are not numbers, full and
closed stdout, escape sequences from files, invalid values. Each case: a documented exit code, one `error:` line (or
none), no traceback, no hang, and nothing touched that the command was not asked to write."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

import pytest
from advisor_command import advisor_argv, offline_env, run_advisor

from launcher.files import MAX_INPUT_BYTES, FileRefused, read_text, write_text_atomic

B300 = ["--profile", "b300-8"]
BUNDLED = ["--engine", "bundled"]


@pytest.fixture
def env(tmp_path):
    return offline_env(tmp_path, "CUDA_VISIBLE_DEVICES", "TP_ADVISOR_RUNS", "TP_ADVISOR_CACHE", "COLUMNS")


run = run_advisor


def one_error(result: subprocess.CompletedProcess, code: int, *words: str, after_summary: bool = False) -> str:
    """The run failed with ``code`` and exactly one `error:` line naming every word; no traceback. ``after_summary``:
    `advisor launch` prints its plan summary on stderr first, so the error is the last line there."""
    lines = result.stderr.splitlines()
    assert result.returncode == code, (result.returncode, result.stderr)
    errors = [line for line in lines if line.startswith("error: ")]
    assert len(errors) == 1 and lines[-1] == errors[0] and (after_summary or len(lines) == 1), result.stderr
    assert "Traceback" not in result.stderr + (result.stdout or "")
    for word in words:
        assert word in errors[0], (word, errors[0])
    return errors[0]


def saved_facts(tmp_path: Path, env, **changes) -> Path:
    """The b300-8 profile as a facts file, with ``changes`` applied to the JSON (``gpu0_name=...`` and so on)."""
    data = json.loads(run(["probe", *B300, "--json"], env).stdout)
    for key, value in changes.items():
        if key == "gpu0_name":
            data["gpus"][0]["name"] = value
        elif key == "gpu0_memory":
            data["gpus"][0]["memory_total_mib"] = value
        elif key == "hostname":
            data["host"]["hostname"] = value
        else:
            data[key] = value
    path = tmp_path / "facts.json"
    path.write_text(json.dumps(data, ensure_ascii=False, allow_nan=True), encoding="utf-8")
    return path


# -- 1. outputs that are not regular files ------------------------------------------------------------------------------


def test_probe_output_refuses_a_fifo_a_device_and_a_directory_and_leaves_them(tmp_path, env):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    device_link = tmp_path / "null-link"
    device_link.symlink_to(os.devnull)
    directory = tmp_path / "dir"
    directory.mkdir()
    for target, code, word in ((fifo, 1, "FIFO"), (Path(os.devnull), 1, "character device"),
                               (device_link, 1, "character device"), (directory, 2, "directory")):  # fmt: skip
        one_error(run(["probe", *B300, "-o", str(target)], env), code, word)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)
    assert device_link.is_symlink() and os.readlink(device_link) == os.devnull
    assert directory.is_dir() and not list(directory.iterdir())
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "hf") == ["dir", "fifo", "null-link"]  # no temp file


def test_probe_output_through_a_symlink_writes_the_target_and_keeps_the_link(tmp_path, env):
    target = tmp_path / "real" / "facts.json"
    target.parent.mkdir()
    target.write_text("old\n")
    os.chmod(target, 0o640)
    link = tmp_path / "facts-link.json"
    link.symlink_to(target)
    result = run(["probe", *B300, "-o", str(link)], env)
    assert result.returncode == 0, result.stderr
    assert link.is_symlink() and Path(os.readlink(link)) == target
    assert json.loads(target.read_text())["source"] == "simulated:b300-8"
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o640  # replaced in place: its permissions kept
    assert sorted(p.name for p in target.parent.iterdir()) == ["facts.json"]  # no temporary file left


def test_every_writer_of_a_user_path_refuses_what_is_not_a_file(tmp_path):
    """The TUI's plan export and the safe writer itself (probe -o is covered above)."""
    pytest.importorskip("textual")
    from advisor.context import Options, make_plan
    from advisor.tui.screens.export import write_plan_json

    plan = make_plan(Options(profile="b300-8", engine="bundled"))
    fifo = tmp_path / "plan.fifo"
    os.mkfifo(fifo)
    with pytest.raises(FileRefused, match="FIFO"):
        write_plan_json(plan, fifo)
    with pytest.raises(FileRefused, match="character device"):
        write_text_atomic(os.devnull, "x")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and stat.S_ISCHR(os.stat(os.devnull).st_mode)
    link = tmp_path / "plan-link.json"
    link.symlink_to(tmp_path / "plan.json")  # a dangling link: its target is created
    write_plan_json(plan, link)
    assert link.is_symlink() and json.loads((tmp_path / "plan.json").read_text())["schema_version"] == 1


# -- 4. inputs that never end ----------------------------------------------------------------------------------------------


def test_facts_from_a_device_a_fifo_or_a_huge_file_is_one_line_and_no_hang(tmp_path, env):
    fifo = tmp_path / "facts.fifo"
    os.mkfifo(fifo)
    huge = tmp_path / "huge.json"
    with open(huge, "wb") as handle:
        handle.truncate(MAX_INPUT_BYTES + 1)  # sparse: costs no disk
    one_error(run(["check", *BUNDLED, "--facts", "/dev/zero"], env), 1, "/dev/zero", "character device")
    one_error(run(["check", *BUNDLED, "--facts", str(fifo)], env), 1, "FIFO")
    one_error(run(["check", *BUNDLED, "--facts", str(huge)], env), 1, "16 MiB limit")


def test_config_json_linked_to_dev_zero_or_huge_is_one_line(tmp_path, env):
    zero = tmp_path / "zero-model"
    zero.mkdir()
    (zero / "config.json").symlink_to("/dev/zero")
    huge = tmp_path / "huge-model"
    huge.mkdir()
    with open(huge / "config.json", "wb") as handle:
        handle.truncate(MAX_INPUT_BYTES + 1)
    one_error(run(["check", *B300, "--model", str(zero)], env), 1, "config.json", "character device")
    one_error(run(["check", *B300, "--model", str(huge)], env), 1, "config.json", "16 MiB limit")


def test_the_safe_reader_stops_at_the_cap_even_when_the_size_lies():
    with pytest.raises(FileRefused, match="character device"):
        read_text("/dev/zero", limit=1024)  # st_size 0, endless content: refused before any read
    with pytest.raises(FileNotFoundError):
        read_text("/nonexistent/facts.json")


# -- 5. the Hugging Face cache's refs/main --------------------------------------------------------------------------------


def _snapshot(hub: Path, model_id: str, revision: str, architecture: str | None) -> Path:
    snap = hub / ("models--" + model_id.replace("/", "--")) / "snapshots" / revision
    snap.mkdir(parents=True)
    if architecture:
        (snap / "config.json").write_text(json.dumps({"architectures": [architecture], "hidden_size": 64}))
    return snap


def test_a_broken_refs_main_snapshot_is_an_error_not_another_revision(tmp_path, env):
    hub = tmp_path / "hf" / "hub"
    _snapshot(hub, "org/model", "good", "LlamaForCausalLM")
    broken = _snapshot(hub, "org/model", "main-rev", None)
    (broken / "config.json").symlink_to("../../blobs/missing-blob")  # the blob was never downloaded
    (hub / "models--org--model" / "refs").mkdir()
    (hub / "models--org--model" / "refs" / "main").write_text("main-rev")
    one_error(run(["check", *B300, "--model", "org/model"], env), 1, "main-rev", "broken link", "no other revision")
    (hub / "models--org--model" / "refs" / "main").write_text("gone-rev")
    one_error(run(["check", *B300, "--model", "org/model"], env), 1, "refs/main", "gone-rev")


def test_without_refs_main_the_snapshot_used_and_why_are_shown(tmp_path, env):
    hub = tmp_path / "hf" / "hub"
    _snapshot(hub, "org/model", "only-rev", "LlamaForCausalLM")
    result = run(["check", *B300, "--model", "org/model", "--json"], env)
    notes = json.loads(result.stdout)["model"]["notes"]
    assert "only-rev" in notes and "no refs/main" in notes
    human = run(["check", *B300, "--model", "org/model"], env).stdout
    assert "Hugging Face cache snapshot only-rev (no refs/main" in human


# -- 6. numbers that are not numbers, full and closed stdout, directory variables ------------------------------------------


@pytest.mark.parametrize("memory", [float("nan"), float("inf"), -1, 1.5, True, "80 GiB"])
def test_a_facts_file_with_impossible_gpu_memory_is_one_line(tmp_path, env, memory):
    path = saved_facts(tmp_path, env, gpu0_memory=memory)
    one_error(run(["check", *BUNDLED, "--facts", str(path)], env), 1, "facts.json", "advisor probe -o")


@pytest.mark.parametrize(
    "args",
    [["check", *B300, *BUNDLED], ["check", *B300, *BUNDLED, "--json"], ["probe", *B300], ["probe", *B300, "--json"],
     ["explain", "flashinfer_allreduce_fusion", *B300, *BUNDLED], ["profiles"]],
)  # fmt: skip
def test_stdout_on_a_full_device_is_one_line(env, args):
    with open("/dev/full", "w") as full:
        result = run(args, env, stdout=full, stderr=subprocess.PIPE)
    one_error(result, 1, "cannot write the output", "No space left")


@pytest.mark.parametrize("args", [["check", *B300, *BUNDLED], ["check", *B300, *BUNDLED, "--json"], ["probe", *B300]])
def test_a_closed_pipe_is_a_quiet_exit(env, args):
    """`advisor check | true`: the reader is gone before the first line is written (EPIPE on every write, and on the
    interpreter's final flush); the advisor says nothing on stderr."""
    with subprocess.Popen([*advisor_argv(), *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True) as proc:  # fmt: skip
        proc.stdout.close()
        stderr = proc.stderr.read()
        code = proc.wait(timeout=60)
    assert stderr == "" and code in (0, 1), (code, stderr)


@pytest.mark.parametrize("variable", ["TP_ADVISOR_RUNS", "TP_ADVISOR_CACHE"])
def test_a_directory_variable_pointing_at_a_file_is_one_line(tmp_path, env, variable):
    afile = tmp_path / "a-file"
    afile.write_text("not a directory")
    for value in (afile, afile / "below"):
        result = run(["launch", *BUNDLED, "--mode", "generate"], {**env, variable: str(value)})
        line = one_error(result, 1, f"{variable}={value}", "not a directory", after_summary=True)
        assert "regular file" in line
    assert afile.read_text() == "not a directory"


# -- 7. escape sequences from files ---------------------------------------------------------------------------------------

HOSTILE = "evil\x1b]0;pwned\x07\x1b[2J\x9b31m\u202egpu"


def test_escape_sequences_in_facts_never_reach_the_output(tmp_path, env):
    path = saved_facts(tmp_path, env, hostname=HOSTILE, gpu0_name=HOSTILE + " é")
    human = run(["check", *BUNDLED, "--facts", str(path)], env)
    assert human.returncode == 0, human.stderr
    assert human.stdout.isascii(), [c for c in human.stdout if not c.isascii()][:5]  # piped: plain ASCII, as promised
    assert "\x1b" not in human.stdout and "\x07" not in human.stdout
    assert "evil\\x1b]0;pwned\\x07\\x1b[2J" in human.stdout and "\\u202egpu e" in human.stdout  # shown, escaped
    out = run(["check", *BUNDLED, "--json", "--facts", str(path)], env).stdout
    assert not any(c in out for c in "\x1b\x07\x9b\u202e")  # C0 escaped by json, C1 and bidi by advisor.sanitize
    assert json.loads(out)["facts"]["host"]["hostname"] == HOSTILE  # the value itself is kept, only escaped
    name = tmp_path / "x\x1b[2J.json"
    line = one_error(run(["check", "--facts", str(name)], env), 1, "no such facts file")
    assert "\x1b" not in line and "x\\x1b[2J.json" in line


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.mark.anyio
async def test_escape_sequences_in_facts_never_reach_the_tui(tmp_path, env):
    pytest.importorskip("textual")
    from rich.console import Console
    from textual.widgets import DataTable, Static
    from tui_helpers import make_app, settle

    from advisor.tui.widgets.decision_table import DecisionTable

    path = saved_facts(tmp_path, env, hostname=HOSTILE, gpu0_name=HOSTILE)
    app = make_app(facts_file=str(path), engine="bundled")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("m")  # the machine tab
        await pilot.pause(0.5)
        shown = [app.sub_title]
        console = Console(width=200, file=open(os.devnull, "w"))  # noqa: SIM115
        with console.capture() as capture:
            for widget in app.screen.query(Static):
                console.print(widget.visual if hasattr(widget, "visual") else widget.render())
        shown.append(capture.get())
        for table in [*app.screen.query(DataTable), *app.screen.query(DecisionTable)]:
            for row in range(table.row_count):
                shown.extend(str(cell) for cell in table.get_row_at(row))
    text = "\n".join(shown)
    assert "evil" in text, text[:500]
    assert not any(c in text for c in "\x1b\x07\x9b\u202e"), [line for line in text.splitlines() if "evil" in line]


# -- 9. invalid values -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--dtype", "fp7"], ("--dtype", "bfloat16, float16, float32")),
        (["--moe-a2a-backend", "../../x"], ("--moe-a2a-backend", "deepep")),
        (["--with-package", "flashinfer-python==bar"], ("'bar' is not a version",)),
        (["--with-package", "../x==1.0"], ("not a package name",)),
    ],
)
def test_invalid_values_are_usage_errors(env, args, words):
    one_error(run(["check", *B300, *BUNDLED, *args], env), 2, *words)


def test_profile_sees_cuda_visible_devices_like_the_live_probe(env):
    data = json.loads(run(["check", *B300, *BUNDLED, "--json"], {**env, "CUDA_VISIBLE_DEVICES": "2,3"}).stdout)
    assert data["facts"]["visible_gpus"] == [2, 3] and data["intent"]["tp"] == 2
    assert data["facts"]["environment"]["CUDA_VISIBLE_DEVICES"] == "2,3"
    human = run(["check", *B300, *BUNDLED], {**env, "CUDA_VISIBLE_DEVICES": "2,3"}).stdout
    assert "engine sees  GPU2, GPU3 (CUDA_VISIBLE_DEVICES=2,3)" in human


def test_facts_that_contradict_themselves_are_one_line(tmp_path, env):
    no_gpus = saved_facts(tmp_path, env, gpus=[], visible_gpus=[])
    one_error(run(["check", *BUNDLED, "--facts", str(no_gpus)], env), 1, "contradictory", "topology link")
    twice = saved_facts(tmp_path, env, visible_gpus=[0, 0, 17])
    one_error(run(["check", *BUNDLED, "--facts", str(twice)], env), 1, "contradictory", "twice")
    stranger = saved_facts(tmp_path, env, visible_gpus=[0, 17])
    one_error(run(["check", *BUNDLED, "--facts", str(stranger)], env), 1, "contradictory", "GPU 17")


def test_one_sanitizing_function_for_text_and_json():
    from advisor.sanitize import clean, clean_json

    plain = "NVIDIA H100 80GB HBM3"
    assert clean(plain) is plain  # the common case costs nothing
    assert clean("a\x1b[2Jb\x9bc\u202ed\ne") == "a\\x1b[2Jb\\x9bc\\u202ed\ne"
    assert clean("a\nb\tc", newlines=False) == "a\\x0ab\\x09c"
    assert clean("café…漢", ascii_only=True) == "cafe...?"
    dumped = json.dumps({"name": "x\x1b\x9b\u202e\U000e0001y"}, ensure_ascii=False)
    safe = clean_json(dumped)
    assert safe.isascii() and json.loads(safe) == json.loads(dumped)


def test_controls_rich_drops_are_shown_escaped_too(tmp_path, env):
    """rich drops BEL, backspace, vertical tab, form feed and CR from a value; the report shows them escaped instead."""
    path = saved_facts(tmp_path, env, hostname="ho\x07st\x08a\x0bb\x0cc\rd")
    human = run(["check", *BUNDLED, "--facts", str(path)], env)
    assert human.returncode == 0, human.stderr
    assert "ho\\x07st\\x08a\\x0bb\\x0cc\\x0dd" in human.stdout
