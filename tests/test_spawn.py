"""launcher.spawn against real processes: torchrun with gloo workers, and plain children that misbehave."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from launcher import diagnosis, spawn

# A stand-in for the runtime: real gloo collectives under real torchrun, with the failure modes we must handle.
WORKER = textwrap.dedent(
    """
    import os, sys, time
    import torch, torch.distributed as dist
    from torch.distributed.elastic.multiprocessing.errors import record

    @record
    def main():
        mode, args = sys.argv[1], sys.argv[2:]
        dist.init_process_group("gloo")
        rank = dist.get_rank()
        if mode == "stubborn-fail" and rank == 0:
            import signal
            signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a rank that will not die when torchrun asks
            print("ready: http://127.0.0.1:8124", flush=True)
            time.sleep(600)
        if mode == "stubborn-fail":
            time.sleep(1.0)
            raise ValueError("rank 1 gives up")
        print(f"args {args!r}", flush=True)
        t = torch.ones(4)
        step = 0
        while True:
            dist.all_reduce(t)
            if mode == "fail" and rank == 1 and step == 2:
                raise ValueError("tensor 'model.layers.0.w' has shape (3, 4), expected (4, 4)")
            if mode == "serve" and rank == 0 and step == 1:
                print("ready: http://127.0.0.1:8123", flush=True)
            if mode == "generate" and step == 3:
                break
            step += 1
            time.sleep(0.1)
        print(f"completion from rank {rank}: {t[0].item():.0f}", flush=True)
        dist.destroy_process_group()

    if __name__ == "__main__":
        main()
    """
)

# A plain child (no torchrun) that ignores SIGTERM and starts a grandchild in its own session that ignores it too:
# only SIGKILL to every tracked descendant gets rid of both.
STUBBORN = textwrap.dedent(
    """
    import signal, subprocess, sys, time
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    child = subprocess.Popen([sys.executable, "-c",
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('grandchild up', flush=True); time.sleep(600)"],
        start_new_session=True)
    time.sleep(0.5)
    print("ready: http://127.0.0.1:9", flush=True)
    time.sleep(600)
    """
)


def torchrun(script: Path, *args: str, nproc: int = 2) -> list[str]:
    return [
        sys.executable, "-m", "torch.distributed.run", "--standalone", "--nnodes", "1",
        "--nproc-per-node", str(nproc), "--max-restarts", "0", str(script), *args,
    ]  # fmt: skip


@pytest.fixture
def worker(tmp_path: Path) -> Path:
    path = tmp_path / "worker.py"
    path.write_text(WORKER)
    return path


def tree(run: spawn.Run) -> list[psutil.Process]:
    root = psutil.Process(run.pid)
    return [root, *root.children(recursive=True)]


def assert_all_gone(procs: list[psutil.Process]) -> None:
    alive = [p.pid for p in procs if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert alive == [], f"processes survived: {alive}"


def test_torchrun_argv_gets_log_flags_once():
    argv = [sys.executable, "-m", "torch.distributed.run", "--standalone", "-m", "launcher.runtime"]
    out = spawn.with_torchrun_logs(argv, "/r/logs")
    assert out[:7] == [sys.executable, "-m", "torch.distributed.run", "--log-dir", "/r/logs", "--tee", "3"]
    assert out[7:] == ["--standalone", "-m", "launcher.runtime"]
    assert spawn.with_torchrun_logs(out, "/other") == out
    assert spawn.with_torchrun_logs(["torchrun", "x.py"], "L") == ["torchrun", "--log-dir", "L", "--tee", "3", "x.py"]
    assert spawn.with_torchrun_logs(["python", "-m", "sglang.launch_server"], "L") == ["python", "-m", "sglang.launch_server"]


def test_failure_reads_like_a_sentence():
    assert str(spawn.Failure(rank=1, exitcode=-9, summary="Signal 9")) == "rank 1 failed (exit -9, SIGKILL): Signal 9"
    assert str(spawn.Failure(rank=None, exitcode=2, summary="boom")) == "the engine failed (exit 2): boom"


@pytest.mark.parametrize(
    ("lines", "error"),
    [
        (["[rank 0] INFO model demo (Qwen3MoeForCausalLM)", "[rank 0] INFO allreduce strategy: torch"], None),
        (["I1130 12:00:00.123 4242 init.cpp:12] gloo up", "2026-11-30 12:00:00,123 WARNING slow"], None),
        (["ready", "[rank 1] error: cannot read x", "[rank 0] INFO shutting down"], "cannot read x"),
        (["INFO loading", "Segmentation fault (core dumped)"], "Segmentation fault (core dumped)"),
    ],
)
def test_a_routine_log_line_is_never_taken_for_the_error(lines, error):
    assert diagnosis._last_error_line(lines) == error


def test_a_process_killed_by_a_signal_without_an_error_line_says_so(tmp_path: Path):
    run = spawn.start([sys.executable, "-c", "import os, time; print('INFO started', flush=True); time.sleep(60)"],
                      run_dir=tmp_path / "run")  # fmt: skip
    deadline = time.monotonic() + 30
    while not any(line.text == "INFO started" for line in run.lines) and time.monotonic() < deadline:
        time.sleep(0.05)
    os.kill(run.pid, signal.SIGKILL)
    assert run.wait(30) == -9
    assert str(run.failure) == "the engine failed (exit -9, SIGKILL): killed by signal 9 (SIGKILL)"


def test_a_lifeline_outlives_the_launcher_and_tears_the_tree_down(tmp_path: Path):
    """A launcher that dies without a word (SIGKILL) takes its run with it: the lifeline sees its pipe close."""
    script = tmp_path / "parent.py"
    script.write_text(
        "import sys, time\n"
        "from launcher import spawn\n"
        "run = spawn.start([sys.executable, '-c', 'import subprocess, sys, time; "
        "subprocess.Popen([sys.executable, \"-c\", \"import time; time.sleep(600)\"], start_new_session=True); "
        "print(\"ready: http://x\", flush=True); time.sleep(600)'], run_dir=sys.argv[1])\n"
        "run.wait_ready(60)\n"
        "print('started', flush=True)\n"
        "time.sleep(600)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(spawn.__file__).resolve().parents[1])}
    launcher = subprocess.Popen([sys.executable, str(script), str(tmp_path / "run")], stdout=subprocess.PIPE, text=True,
                                env=env)  # fmt: skip
    procs: list[psutil.Process] = []
    try:
        assert launcher.stdout is not None and launcher.stdout.readline().strip() == "started"
        me = psutil.Process(launcher.pid)
        deadline = time.monotonic() + 10
        while len(me.children(recursive=True)) < 3 and time.monotonic() < deadline:
            time.sleep(0.1)  # the engine's own child (another session) appears a moment later
        procs = me.children(recursive=True)  # the lifeline, the engine and the engine's child
        assert len(procs) == 3, [p.cmdline() for p in procs]
        launcher.kill()
        launcher.wait(10)
        _, alive = psutil.wait_procs(procs, timeout=10)
        assert alive == [], [p.cmdline() for p in alive]
    finally:
        launcher.kill()
        for proc in procs:
            with contextlib.suppress(psutil.Error):
                proc.kill()


@pytest.mark.slow
def test_clean_run_streams_rank_lines_and_keeps_per_rank_logs(worker: Path, tmp_path: Path, monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)  # torchrun would announce its default in a banner
    weird = "/models/my model; rm -rf ~"
    lines: list[spawn.LogLine] = []
    states: list[str] = []
    run = spawn.start(
        torchrun(worker, "generate", weird), run_dir=tmp_path / "run", on_line=lines.append,
        on_state=lambda r: states.append(r.state),
    )  # fmt: skip
    assert run.wait(90) == 0
    assert run.state == spawn.EXITED and run.failure is None and states == [spawn.EXITED]
    by_rank = {ln.rank: ln.text for ln in lines if ln.text.startswith("args") and ln.stream == "stdout"}
    assert by_rank == {0: f"args [{weird!r}]", 1: f"args [{weird!r}]"}  # verbatim: no shell anywhere
    assert {ln.text for ln in lines if ln.text.startswith("completion")} == {
        "completion from rank 0: 16",
        "completion from rank 1: 16",
    }
    run_dir = tmp_path / "run"
    assert (run_dir / "launcher.log").read_text().count("completion from rank") == 2
    assert json.loads((run_dir / "argv.json").read_text())["argv"] == run.argv
    rank_logs = sorted(p.relative_to(run_dir / "logs").parts[-2:] for p in (run_dir / "logs").glob("*/attempt_0/*/stdout.log"))
    assert rank_logs == [("0", "stdout.log"), ("1", "stdout.log")]
    assert run.survivors == []
    assert not [ln.text for ln in lines if "OMP_NUM_THREADS" in ln.text]


@pytest.mark.slow
def test_exception_on_one_rank_names_the_rank_and_error(worker: Path, tmp_path: Path):
    lines: list[spawn.LogLine] = []
    run = spawn.start(torchrun(worker, "fail"), run_dir=tmp_path / "run", on_line=lines.append)
    procs = [psutil.Process(run.pid)]
    code = run.wait(60)
    assert code not in (0, None)
    assert run.state == spawn.FAILED
    assert run.failure.rank == 1
    assert run.failure.summary == "ValueError: tensor 'model.layers.0.w' has shape (3, 4), expected (4, 4)"
    assert "raise ValueError" in (run.failure.traceback or "")
    # The rank's traceback arrives on stderr, with torch's own "[rank1]:" prefix folded into the rank.
    assert any(ln.rank == 1 and ln.stream == "stderr" and ln.text.startswith("ValueError: tensor") for ln in lines)
    assert_all_gone(procs)
    assert run.survivors == []


@pytest.mark.slow
def test_sigkill_of_one_rank_tears_everything_down_fast(worker: Path, tmp_path: Path):
    run = spawn.start(torchrun(worker, "serve"), run_dir=tmp_path / "run")
    assert run.wait_ready(90), [str(ln) for ln in run.tail()]
    assert run.url == "http://127.0.0.1:8123" and run.state == spawn.READY
    procs = tree(run)
    workers = psutil.Process(run.pid).children()
    victim = next(p for p in workers if "serve" in p.cmdline())
    rank = int(victim.environ()["RANK"])
    started = time.monotonic()
    victim.send_signal(signal.SIGKILL)
    code = run.wait(15)
    elapsed = time.monotonic() - started
    assert code not in (0, None)
    assert elapsed < 10, elapsed
    assert run.state == spawn.FAILED
    assert run.failure.rank == rank and run.failure.exitcode == -9
    assert "SIGKILL" in str(run.failure)
    assert_all_gone(procs)


@pytest.mark.slow
def test_a_rank_that_ignores_sigterm_does_not_hold_up_the_teardown(worker: Path, tmp_path: Path):
    # torchrun would wait its full shutdown timeout (30 s here) for rank 0; spawn kills everything FAIL_FAST_S after
    # torchrun reported the failure.
    run = spawn.start(torchrun(worker, "stubborn-fail"), run_dir=tmp_path / "run", env={"TORCH_ELASTIC_SHUTDOWN_TIMEOUT": "30"})
    assert run.wait_ready(90)
    procs = tree(run)
    started = time.monotonic()
    assert run.wait(60) is not None
    assert time.monotonic() - started < 25  # torchrun alone would have waited 30 s for rank 0
    assert run.state == spawn.FAILED
    assert run.failure.rank == 1 and run.failure.summary == "ValueError: rank 1 gives up", run.failure
    assert_all_gone(procs)


@pytest.mark.slow
def test_stop_while_ready_leaves_nothing(worker: Path, tmp_path: Path):
    run = spawn.start(torchrun(worker, "serve"), run_dir=tmp_path / "run")
    assert run.wait_ready(90)
    procs = tree(run)
    assert len(procs) == 3  # torchrun + 2 ranks
    started = time.monotonic()
    run.stop(timeout=10)
    assert time.monotonic() - started < 10
    assert run.state == spawn.STOPPED
    assert_all_gone(procs)


def test_stop_kills_children_that_ignore_sigterm_even_in_other_sessions(tmp_path: Path):
    script = tmp_path / "stubborn.py"
    script.write_text(STUBBORN)
    lines: list[str] = []
    run = spawn.start([sys.executable, str(script)], run_dir=tmp_path / "run", on_line=lambda ln: lines.append(ln.text))
    assert run.wait_ready(30)
    procs = tree(run)
    assert len(procs) == 2 and os.getsid(procs[1].pid) != os.getsid(procs[0].pid)
    started = time.monotonic()
    run.stop(timeout=3)
    assert time.monotonic() - started < 6
    assert run.state == spawn.STOPPED and run.returncode == -signal.SIGKILL
    assert_all_gone(procs)
    assert "grandchild up" in lines


def test_leftovers_are_reaped_when_the_child_exits_on_its_own(tmp_path: Path):
    # The child starts a long-lived grandchild in another session and exits 3: the grandchild must not outlive it.
    code = (
        "import subprocess, sys, time; "
        "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'], start_new_session=True); "
        "print('grandchild', p.pid, flush=True); time.sleep(1.5); print('ValueError: bad shard', flush=True); sys.exit(3)"
    )
    lines: list[str] = []
    run = spawn.start([sys.executable, "-c", code], run_dir=tmp_path / "run", on_line=lambda ln: lines.append(ln.text))
    assert run.wait(30) == 3
    assert run.state == spawn.FAILED
    assert run.failure.summary == "ValueError: bad shard" and run.failure.rank is None
    grandchild = int(next(t for t in lines if t.startswith("grandchild")).split()[1])
    assert not psutil.pid_exists(grandchild) or psutil.Process(grandchild).status() == psutil.STATUS_ZOMBIE


def test_line_prefixes_and_the_uvicorn_ready_line_of_engines_without_ranks(tmp_path: Path):
    code = (
        "import sys; "
        "print('[rank1]: from rank one'); print('[default0]:[rank0]: torch prefix folded'); print('[0]: summary header'); "
        "print('INFO:     Uvicorn running on http://127.0.0.1:30000 (Press CTRL+C to quit)'); "
        "print('to stderr', file=sys.stderr)"
    )
    lines: list[spawn.LogLine] = []
    run = spawn.start([sys.executable, "-c", code], run_dir=tmp_path / "run", on_line=lines.append)
    assert run.wait(30) == 0
    got = {(ln.rank, ln.text, ln.stream) for ln in lines}
    assert (1, "from rank one", "stdout") in got
    assert (0, "torch prefix folded", "stdout") in got
    assert (None, "[0]: summary header", "stdout") in got
    assert (None, "to stderr", "stderr") in got
    assert run.url == "http://127.0.0.1:30000"
    assert run.state == spawn.EXITED  # ready was passed through on the way


def test_a_signal_before_the_run_exists_stops_it_as_soon_as_it_is_attached(tmp_path: Path):
    before = signal.getsignal(signal.SIGTERM)
    with spawn.forward_signals() as forwarder:
        assert signal.getsignal(signal.SIGTERM) != before
        os.kill(os.getpid(), signal.SIGTERM)  # handled by the forwarder, not by pytest
        run = spawn.start([sys.executable, "-c", "import time; time.sleep(600)"], run_dir=tmp_path / "run")
        forwarder.attach(run)
        assert run.wait(15) is not None
    assert forwarder.received == [signal.SIGTERM]
    assert run.state == spawn.STOPPED and run.returncode == -signal.SIGTERM
    assert signal.getsignal(signal.SIGTERM) == before  # handlers restored
