"""CUDA-graph decode (launcher/runtime/cuda_graph.py) as far as it runs without a GPU: buckets, padding and un-padding,
the capability check, the flag, and the static-buffer decode step itself, which on CPU runs eagerly (where CUDA would
replay its graph) and must give the same tokens as the ordinary decode step, at tp 1 and under torchrun at tp 2."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from runtime_models import PROMPTS, open_runtime, save_tiny_model

from launcher.runtime import cuda_graph
from launcher.runtime.cuda_graph import (
    DecodeGraphs,
    batch_buckets,
    cuda_graph_off_reason,
    length_buckets,
    pick_bucket,
)
from launcher.runtime.engine import SamplingParams
from launcher.runtime.layers.moe import MoE
from launcher.runtime.worker import parse_args

REPO = Path(__file__).resolve().parents[1]
KINDS = ("llama", "qwen3", "qwen3_moe")


@pytest.fixture(scope="module")
def model_dirs(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("graph-models")
    return {kind: save_tiny_model(kind, root / kind) for kind in KINDS}


def test_buckets():
    assert batch_buckets(1) == (1,)
    assert batch_buckets(3) == (1, 2, 3)
    assert batch_buckets(8) == (1, 2, 4, 8)
    assert batch_buckets(20) == (1, 2, 4, 8, 16, 20)
    assert batch_buckets(32) == (1, 2, 4, 8, 16, 24, 32)
    assert length_buckets(100) == (100,)
    assert length_buckets(256) == (256,)
    assert length_buckets(300) == (256, 300)
    assert length_buckets(2048) == (256, 512, 1024, 2048)
    assert pick_bucket((1, 2, 4, 8), 3) == 4
    assert pick_bucket((1, 2, 4, 8), 8) == 8
    assert pick_bucket((1, 2, 4, 8), 9) is None


def test_off_reason():
    assert cuda_graph_off_reason(torch.device("cpu"), disabled=False) == "they need a CUDA device; this run is on cpu"
    assert cuda_graph_off_reason(torch.device("cpu"), disabled=True) == "--disable-cuda-graph"
    if not torch.cuda.is_available():
        assert cuda_graph_off_reason(torch.device("cuda"), disabled=False) == "torch sees no CUDA device"


def test_flag():
    assert parse_args([]).disable_cuda_graph is False
    assert parse_args(["--disable-cuda-graph"]).disable_cuda_graph is True


def schedule(engine) -> list:
    """Requests joining, finishing and aborted at different steps, so decode steps see holes among the slots, padded
    rows over slots that wait for their prefill, and lengths across several length buckets; every event in order."""
    greedy = SamplingParams(max_tokens=40, ignore_eos=True)
    sampled = SamplingParams(max_tokens=12, temperature=0.8, top_p=0.9, seed=3, ignore_eos=True)
    engine.add_request(0, PROMPTS[0], greedy)
    engine.add_request(1, PROMPTS[1], SamplingParams(max_tokens=3, ignore_eos=True))
    engine.add_request(2, [9, 8, 7, 6, 5, 4, 3, 2, 1, 10, 11, 12], greedy)
    events, step = [], 0
    while engine.has_work():
        if step == 2:
            engine.add_request(3, [4, 4, 5], sampled)
        if step == 5:
            engine.abort(0)  # slot 0 becomes a hole below running slots
        if step == 9:
            engine.add_request(4, [1, 2, 3, 4, 5, 6], greedy)  # takes slot 0, prefilled after a padded decode
        events += engine.step()
        step += 1
    return events


@pytest.mark.parametrize("kind", KINDS)
def test_static_decode_step_gives_the_same_tokens(kind, model_dirs, monkeypatch):
    monkeypatch.setattr(cuda_graph, "MIN_LENGTH_BUCKET", 16)  # length buckets 16, 32, 64 within these short runs
    eager = schedule(open_runtime(model_dirs[kind], max_batch_size=5, max_model_len=64))

    used: list[tuple[int, int]] = []
    run = DecodeGraphs.run
    monkeypatch.setattr(DecodeGraphs, "run", lambda self, b, n: (used.append((b, n)), run(self, b, n))[1])
    engine = open_runtime(model_dirs[kind], max_batch_size=5, max_model_len=64, cuda_graphs=True)
    assert engine.graphs is not None and not engine.graphs.capture  # CPU: the static step runs eagerly
    static = schedule(engine)

    assert static == eager
    assert len({e.seq_id for e in eager}) == 5 and any(e.finish_reason == "length" for e in eager)
    decode_steps = sum(1 for _ in used)
    assert decode_steps == engine.graphs.replays > 20
    assert {b for b, _ in used} >= {1, 4} and {n for _, n in used} == {16, 32, 64}


def test_unpadding_returns_rows_in_the_callers_order(model_dirs):
    """Logits of a padded static step, rows picked back by slot, equal the ordinary step's for the same sequences."""
    engine = open_runtime(model_dirs["qwen3"], max_batch_size=4, max_model_len=32, cuda_graphs=True)
    for seq_id, prompt in enumerate(([5, 6, 7], [8, 9], [10, 11, 12, 13])):
        engine.add_request(seq_id, prompt, SamplingParams(max_tokens=8, ignore_eos=True))
    engine.step()  # prefill all three into slots 0, 1, 2
    engine.abort(0)
    seqs = sorted(engine.running.values(), key=lambda s: -s.slot)  # slots 2 then 1: out of order, slot 0 a hole
    graphs, engine.graphs = engine.graphs, None
    expected = engine._decode_logits(seqs)
    got = graphs.decode([s.slot for s in seqs], [s.output[-1] for s in seqs], [s.length - 1 for s in seqs])
    assert got.shape == expected.shape == (2, engine.model.config.vocab_size)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)
    assert graphs.inputs[:, 0].tolist() == [0, 0]  # the padded row: token 0 at position 0


def test_no_bucket_falls_back_to_none(model_dirs):
    engine = open_runtime(model_dirs["qwen3"], max_batch_size=2, max_model_len=16, cuda_graphs=True)
    assert engine.graphs.decode([2], [1], [3]) is None  # slot beyond every batch bucket
    assert engine.graphs.decode([0], [1], [16]) is None  # position beyond max_model_len


def test_gathered_experts_equal_the_grouped_and_dense_forms():
    moe = object.__new__(MoE)
    torch.nn.Module.__init__(moe)
    moe.num_experts, moe.top_k, moe.hidden = 6, 2, 12
    generator = torch.Generator().manual_seed(0)
    local = 5
    moe.gate_up = torch.randn(6, 2 * local, 12, generator=generator)
    moe.down = torch.randn(12, 6, local, generator=generator)
    moe.dense_gate_up, moe.dense_down = moe.gate_up.view(-1, 12), moe.down.view(12, -1)
    moe.shard = type("Shard", (), {"size": local})()
    x = torch.randn(3, 12, generator=generator)
    weights, experts = torch.topk(F.softmax(torch.randn(3, 6, generator=generator), -1), 2)
    gathered = moe._gathered(x, weights, experts)
    torch.testing.assert_close(gathered, moe._grouped(x, weights, experts), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(gathered, moe._dense(x, weights, experts), rtol=1e-5, atol=1e-5)


def test_cli_on_cpu_says_graphs_are_off(model_dirs):
    cmd = [sys.executable, "-m", "launcher.runtime", "--model", str(model_dirs["qwen3"]), "--device", "cpu",
           "--prompt", "hi", "--max-tokens", "3", "--max-model-len", "32"]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert run.returncode == 0, run.stderr
    assert "cuda graphs for decode: off (they need a CUDA device; this run is on cpu)" in run.stderr


@pytest.mark.slow
def test_static_decode_under_torchrun_tp2(model_dirs, tmp_path):
    worker = REPO / "tests" / "runtime_tp_worker.py"
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nnodes", "1", "--nproc-per-node", "2",
           "--max-restarts", "0", str(worker), "graph", str(tmp_path), str(model_dirs["qwen3"]), str(model_dirs["qwen3_moe"])]
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    assert run.returncode == 0, run.stderr[-3000:]
    ranks = [torch.load(tmp_path / f"rank{r}.pt") for r in range(2)]
    assert ranks[0] == ranks[1]
    for name, result in ranks[0].items():
        assert result["static"] == result["eager"], name
        assert result["replays"] > 20, name


# ops that make the host wait for the device: `int(t)` / `.item()` and `bool(t)` (seen as item / is_nonzero under
# inference mode, _local_scalar_dense outside it), and ops that size their output from the data. None may run inside a
# CUDA-graph capture. (`.tolist()` is not dispatched at all, so this cannot see it: cuda_graph.py's step has none.)
HOST_SYNC_OPS = ("item", "is_nonzero", "_local_scalar_dense", "nonzero", "masked_select", "unique", "bincount",
                 "repeat_interleave")


def ops_run(fn) -> set[str]:
    from torch.utils._python_dispatch import TorchDispatchMode

    class Record(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.names: set[str] = set()

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.names.add(func.overloadpacket.__name__)
            return func(*args, **(kwargs or {}))

    with Record() as record:
        fn()
    return record.names


@pytest.mark.parametrize("kind", ["qwen3", "qwen3_moe"])
def test_the_static_step_never_waits_for_the_device(kind, model_dirs):
    """What a capture would reject; the ordinary decode step does wait (so the detector can fail)."""
    engine = open_runtime(model_dirs[kind], max_batch_size=4, max_model_len=32, cuda_graphs=True)
    graphs = engine.graphs
    graphs.fill(2, [0, 1], [5, 6], [3, 4])
    for batch in (1, 2, 4):  # MoE: 1 token takes the gathered path, 2 and 4 the dense one (4 experts, top 2)
        with cuda_graph.sync_free_moe(engine.model):
            ops = ops_run(lambda b=batch: graphs.static_step(b, 16))
        assert ops.isdisjoint(HOST_SYNC_OPS), (batch, ops & set(HOST_SYNC_OPS))
        assert "index_put_" in ops or "index_put" in ops  # the KV-cache write did run through the recorder
    if kind == "qwen3_moe":  # outside sync_free_moe one token takes the grouped path, sized on the host
        assert "bincount" in ops_run(lambda: graphs.static_step(1, 16))
    engine.graphs = None
    engine.add_request(0, [5, 6, 7], SamplingParams(max_tokens=4, ignore_eos=True))
    engine.step()
    eager = ops_run(lambda: engine._decode_logits(list(engine.running.values())))
    assert not eager.isdisjoint(HOST_SYNC_OPS)
