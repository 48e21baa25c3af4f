"""`advisor launch` for real: torchrun + the bundled runtime on CPU (gloo), killed, interrupted and fed bad weights.

Each test runs `python -m advisor launch` as a child process, like a user in a terminal, and afterwards asks psutil for
any process that still belongs to the run (by command line or by the torchrun error-file variable pointing into it).
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

pytestmark = pytest.mark.slow


class Launch:
    """`advisor launch ARGS` in the background, with its stdout/stderr lines collected as they arrive."""

    def __init__(self, tmp_path: Path, *args: str) -> None:
        self.tmp_path = tmp_path
        env = dict(os.environ, TP_ADVISOR_RUNS=str(tmp_path / "runs"), PYTHONUNBUFFERED="1")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "advisor", "launch", *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        )  # fmt: skip
        self.stdout: list[str] = []
        self.stderr: list[str] = []
        self.events: queue.Queue[tuple[str, str]] = queue.Queue()
        self._threads = [
            threading.Thread(target=self._pump, args=(self.proc.stdout, self.stdout, "out"), daemon=True),
            threading.Thread(target=self._pump, args=(self.proc.stderr, self.stderr, "err"), daemon=True),
        ]
        for t in self._threads:
            t.start()

    def _pump(self, pipe, sink: list[str], name: str) -> None:
        for line in pipe:
            sink.append(line.rstrip("\n"))
            self.events.put((name, line.rstrip("\n")))

    def wait_for(self, pattern: str, stream: str, timeout: float = 120) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                name, line = self.events.get(timeout=0.5)
            except queue.Empty:
                if self.proc.poll() is not None and self.events.empty():
                    break
                continue
            if name == stream and re.search(pattern, line):
                return line
        self.kill()
        raise AssertionError(f"no {pattern!r} on {stream}; stderr:\n" + "\n".join(self.stderr[-40:]))

    def wait(self, timeout: float) -> int:
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise
        for t in self._threads:
            t.join(5)
        return code

    def kill(self) -> None:
        with contextlib.suppress(psutil.Error):
            root = psutil.Process(self.proc.pid)
            for p in [*root.children(recursive=True), root]:
                with contextlib.suppress(psutil.Error):
                    p.kill()

    def workers(self) -> list[psutil.Process]:
        root = psutil.Process(self.proc.pid)
        return [p for p in root.children(recursive=True) if "launcher.runtime" in p.cmdline() and "-m" in p.cmdline()
                and "torch.distributed.run" not in p.cmdline()]  # fmt: skip

    def run_dir(self) -> Path:
        line = next(ln for ln in self.stderr if ln.startswith("logs: "))
        return Path(line.split("logs: ", 1)[1])


def leftovers(tmp_path: Path) -> list[str]:
    """Every live process that belongs to a run under tmp_path (torchrun by its --log-dir, ranks by their error file)."""
    return [f"{proc.pid}: {' '.join(proc.info['cmdline'] or ())}" for proc in _leftover_processes(tmp_path)]


@pytest.fixture(autouse=True)
def _kill_leftovers(tmp_path: Path):
    """A failed test must not leave its engine serving (the assertions above it have looked already)."""
    yield
    for proc in _leftover_processes(tmp_path):
        with contextlib.suppress(psutil.Error):
            proc.kill()


def _leftover_processes(tmp_path: Path) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["pid", "cmdline", "status"]):
        try:
            if proc.info["status"] == psutil.STATUS_ZOMBIE:
                continue
            cmd = " ".join(proc.info["cmdline"] or ())
            error_file = proc.environ().get("TORCHELASTIC_ERROR_FILE", "")
        except psutil.Error:
            continue
        if str(tmp_path) in cmd or error_file.startswith(str(tmp_path)):
            found.append(proc)
    return found


def demo_checkpoint(path: Path) -> Path:
    from launcher.runtime.demo import write_demo_checkpoint

    path.mkdir(parents=True)
    write_demo_checkpoint(path)
    return path


def test_generate_with_the_demo_model_at_tp_2_prints_completions(tmp_path: Path):
    run = Launch(tmp_path, "--mode", "generate", "--tp", "2",
                 "--", "--prompt", "Hello", "--prompt", "tensor parallel", "--max-tokens", "3", "--json")  # fmt: skip
    assert run.wait(180) == 0, "\n".join(run.stderr[-40:])
    completions = [json.loads(line) for line in run.stdout if line.startswith("{")]
    assert [c["prompt"] for c in completions] == ["Hello", "tensor parallel"]
    assert all(len(c["token_ids"]) >= 1 for c in completions)
    assert any("tp 2 on CPU" in line for line in run.stderr) or any("GPU" in line for line in run.stderr[:1])
    assert any("the demo model has random weights" in line for line in run.stderr)
    assert not any("OMP_NUM_THREADS" in line for line in run.stderr)  # torchrun's banner: spawn sets it for the ranks
    logs = run.run_dir() / "logs"
    assert sorted(p.parent.name for p in logs.glob("*/attempt_0/*/stdout.log")) == ["0", "1"]
    assert (run.run_dir() / "launcher.log").is_file()
    assert leftovers(tmp_path) == []


def test_a_model_path_with_spaces_and_semicolons_reaches_the_runtime_verbatim(tmp_path: Path):
    model = demo_checkpoint(tmp_path / "my model; touch pwned")
    run = Launch(tmp_path, "--mode", "generate", "--tp", "2", "--model", str(model),
                 "--", "--prompt", "hi; echo $HOME", "--max-tokens", "2", "--json")  # fmt: skip
    assert run.wait(180) == 0, "\n".join(run.stderr[-40:])
    # The runtime's rank 0 names the directory it opened, and echoes the prompt it got.
    assert any(f"model {model} (" in line for line in run.stderr), "\n".join(run.stderr[-20:])
    assert [json.loads(line)["prompt"] for line in run.stdout if line.startswith("{")] == ["hi; echo $HOME"]
    assert not any(p.name == "pwned" for p in Path.cwd().iterdir())
    assert not any("random weights" in line for line in run.stderr)  # a real model directory: no demo note
    assert leftovers(tmp_path) == []


def test_sigkill_of_one_rank_stops_everything_within_10_s(tmp_path: Path):
    run = Launch(tmp_path, "--tp", "2", "--mode", "serve", "--", "--port", "0")
    run.wait_for(r"^ready: http://", "out")
    victim = next(p for p in run.workers() if p.environ().get("RANK") == "1")
    started = time.monotonic()
    victim.send_signal(signal.SIGKILL)
    code = run.wait(15)
    elapsed = time.monotonic() - started
    assert code != 0
    assert elapsed < 10, elapsed
    summary = run.stderr[-2]
    assert summary.startswith("error: rank 1 failed (exit -9, SIGKILL)"), "\n".join(run.stderr[-10:])
    assert not any(line.startswith("Traceback") for line in run.stderr)  # torchrun's own traceback stays in the log
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("mode", ["serve", "generate"])
def test_sigint_stops_cleanly_within_10_s(tmp_path: Path, mode: str):
    if mode == "serve":
        run = Launch(tmp_path, "--tp", "2", "--mode", "serve", "--", "--port", "0")
        run.wait_for(r"^ready: http://", "out")
    else:
        run = Launch(tmp_path, "--tp", "2", "--mode", "generate",
                     "--", "--prompt", "long", "--max-tokens", "1900", "--ignore-eos")  # fmt: skip
        run.wait_for(r"^\[rank 0\] INFO model ", "err")
        time.sleep(1.0)  # decoding
        assert run.proc.poll() is None
    assert len(run.workers()) == 2
    started = time.monotonic()
    run.proc.send_signal(signal.SIGINT)
    code = run.wait(15)
    assert time.monotonic() - started < 10
    assert code == 130, "\n".join(run.stderr[-10:])
    assert run.stderr[-1].startswith("stopped (SIGINT); every rank is gone")
    assert not any(line.startswith("Traceback") for line in run.stderr)
    assert leftovers(tmp_path) == []


def test_a_mis_shaped_tensor_is_named_and_nothing_remains(tmp_path: Path):
    from safetensors.torch import load_file, save_file

    model = demo_checkpoint(tmp_path / "broken")
    weights = load_file(model / "model.safetensors")
    name = "model.layers.1.mlp.gate.weight" if "model.layers.1.mlp.gate.weight" in weights else sorted(weights)[3]
    weights[name] = weights[name][:-1].clone()
    save_file(weights, model / "model.safetensors", metadata={"format": "pt"})

    run = Launch(tmp_path, "--mode", "generate", "--tp", "2", "--model", str(model))
    code = run.wait(180)
    assert code != 0
    summary = next(line for line in run.stderr if line.startswith("error: rank "))
    assert re.match(r"error: rank [01] failed \(exit \d+\): ", summary), summary
    assert name in summary
    assert leftovers(tmp_path) == []


def _serving(tmp_path: Path) -> Launch:
    run = Launch(tmp_path, "--tp", "2", "--mode", "serve", "--", "--port", "0")
    run.wait_for(r"^ready: http://", "out")
    assert len(run.workers()) == 2
    return run


def _wait_gone(procs: list[psutil.Process], timeout: float) -> list[psutil.Process]:
    """The processes of ``procs`` still running (zombies count as gone) after at most ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        alive = []
        for proc in procs:
            with contextlib.suppress(psutil.Error):
                if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                    alive.append(proc)
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.2)


def test_sighup_a_closed_terminal_stops_cleanly_with_exit_129(tmp_path: Path):
    run = _serving(tmp_path)
    started = time.monotonic()
    run.proc.send_signal(signal.SIGHUP)
    code = run.wait(15)
    assert time.monotonic() - started < 10
    assert code == 129, "\n".join(run.stderr[-10:])
    assert run.stderr[-1].startswith("stopped (SIGHUP); every rank is gone"), "\n".join(run.stderr[-10:])
    assert not any(line.startswith("Traceback") for line in run.stderr)
    # the engine got SIGTERM (its clean teardown), not the hangup
    log = (run.run_dir() / "launcher.log").read_text()
    assert re.findall(r"got signal: (\d+)", log) == [str(int(signal.SIGTERM))], log[-2000:]
    assert leftovers(tmp_path) == []


def test_sigkill_of_the_launcher_takes_its_whole_tree_within_seconds(tmp_path: Path):
    run = _serving(tmp_path)
    tree = psutil.Process(run.proc.pid).children(recursive=True)  # torchrun, both ranks (and the lifeline)
    assert sum("launcher.runtime" in p.cmdline() for p in tree) == 3, [p.cmdline() for p in tree]
    run.proc.send_signal(signal.SIGKILL)
    run.wait(5)
    alive = _wait_gone(tree, timeout=10)
    assert alive == [], [p.cmdline() for p in alive]
    assert leftovers(tmp_path) == []


def test_ranks_die_with_their_torchrun_agent_even_without_a_launcher(tmp_path: Path):
    """The parent-death signal each rank sets: SIGKILL of a bare torchrun leaves no rank serving."""
    argv = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nnodes", "1", "--nproc-per-node", "2",
            "--max-restarts", "0", "-m", "launcher.runtime", "--tp-size", "2", "--device", "cpu", "--mode", "serve",
            "--port", "0", "--log-level", "WARNING"]  # fmt: skip
    env = dict(os.environ, PYTHONUNBUFFERED="1", TORCHELASTIC_ERROR_FILE=str(tmp_path / "error.json"))
    agent = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    ranks: list[psutil.Process] = []
    try:
        assert agent.stdout is not None
        for line in agent.stdout:
            if line.startswith("ready: "):
                break
        ranks = psutil.Process(agent.pid).children(recursive=True)
        assert len(ranks) == 2
        agent.kill()
        agent.wait(5)
        alive = _wait_gone(ranks, timeout=5)
        assert alive == [], [p.cmdline() for p in alive]
    finally:
        agent.kill()
        for proc in ranks:
            with contextlib.suppress(psutil.Error):
                proc.kill()


def test_sigkill_of_the_torchrun_agent_is_reported_as_such_not_as_a_rank_error(tmp_path: Path):
    run = _serving(tmp_path)
    agent = next(p for p in psutil.Process(run.proc.pid).children() if "torch.distributed.run" in p.cmdline())
    agent.kill()
    code = run.wait(15)
    assert code == 137, "\n".join(run.stderr[-10:])
    summary = next(line for line in run.stderr if line.startswith("error: "))
    assert summary == (
        f"error: the torchrun agent (pid {agent.pid}) failed (exit -9, SIGKILL): the agent was killed by signal 9"
        " (SIGKILL); its ranks were stopped"
    )
    assert leftovers(tmp_path) == []


def test_sigint_while_the_ranks_start_stops_without_tracebacks(tmp_path: Path):
    """Ctrl-C while the ranks still import torch: each rank ends with 130, quietly (it printed a KeyboardInterrupt
    traceback from launcher/runtime/__main__.py's imports before)."""
    run = Launch(tmp_path, "--tp", "2", "--mode", "generate")
    deadline = time.monotonic() + 30
    while len(run.workers()) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(run.workers()) == 2
    time.sleep(0.3)  # inside `import torch`, which takes seconds here
    run.proc.send_signal(signal.SIGINT)
    code = run.wait(15)
    assert code == 130, "\n".join(run.stderr[-10:])
    assert not any("Traceback" in line or "KeyboardInterrupt" in line for line in run.stderr), "\n".join(run.stderr)
    assert leftovers(tmp_path) == []
