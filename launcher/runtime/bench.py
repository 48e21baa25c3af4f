"""`--mode bench`: prefill and decode throughput, the share of step time spent in allreduce, and with --compare
both allreduce strategies side by side with the largest absolute difference of their outputs."""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import torch

from launcher.runtime.contract import ALLREDUCE_FUSION, ALLREDUCE_TORCH
from launcher.runtime.engine import InferenceEngine, SamplingParams
from launcher.runtime.errors import RuntimeUsageError

if TYPE_CHECKING:
    from launcher.runtime.communicator import Communicator
    from launcher.runtime.dist import ParallelContext


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


@contextmanager
def strategy(comm: Communicator, name: str) -> Iterator[None]:
    """Run with the plain torch path even when a fused one is set up (for --compare)."""
    saved = comm.fusion, comm.fused_norm_tp1
    if name == ALLREDUCE_TORCH:
        comm.fusion, comm.fused_norm_tp1 = None, None
    try:
        yield
    finally:
        comm.fusion, comm.fused_norm_tp1 = saved


def measure(engine: InferenceEngine, prompts: list[list[int]], output_len: int) -> dict:
    """One batch: time of the prefill step, then of the decode steps; allreduce time over both."""
    comm, device = engine.model.comm, engine.device
    params = SamplingParams(max_tokens=output_len, ignore_eos=True)
    base = 1 << 41
    for i, ids in enumerate(prompts):
        engine.add_request(base + i, ids, params)
    comm.allreduce_seconds, comm.timing = 0.0, True
    try:
        _sync(device)
        start = time.perf_counter()
        first = engine.step()
        _sync(device)
        prefill_s = time.perf_counter() - start
        tokens = {e.seq_id: [e.token_id] for e in first}
        start = time.perf_counter()
        steps = 0
        while engine.has_work():
            for event in engine.step():
                tokens[event.seq_id].append(event.token_id)
            steps += 1
        _sync(device)
        decode_s = time.perf_counter() - start
    finally:
        comm.timing = False
    batch = len(prompts)
    return {
        "prefill_tokens_per_s": batch * len(prompts[0]) / prefill_s,
        "decode_tokens_per_s": batch * steps / decode_s if steps else 0.0,
        "allreduce_share": comm.allreduce_seconds / (prefill_s + decode_s),
        "prefill_s": prefill_s,
        "decode_s": decode_s,
        "tokens": [tokens[base + i] for i in range(batch)],
    }


def prefill_logits(engine: InferenceEngine, prompts: list[list[int]]) -> torch.Tensor:
    ids = torch.tensor(prompts, device=engine.device)
    positions = torch.arange(ids.shape[1], device=engine.device).expand_as(ids)
    slots = torch.arange(len(prompts), device=engine.device)
    return engine.model.logits(engine.model(ids, positions, slots))


def run_bench(engine: InferenceEngine, args: argparse.Namespace, ctx: ParallelContext) -> int:
    if args.input_len + args.output_len > engine.max_model_len:
        raise RuntimeUsageError(
            f"--input-len {args.input_len} + --output-len {args.output_len} exceed --max-model-len "
            f"{engine.max_model_len}; lower them or raise --max-model-len"
        )
    if args.batch_size > engine.max_batch_size or args.batch_size < 1 or args.output_len < 1:
        raise RuntimeUsageError("--batch-size must be 1..--max-batch-size and --output-len at least 1")
    comm = engine.model.comm
    vocab = engine.model.config.vocab_size
    generator = torch.Generator().manual_seed(args.seed)
    prompts = torch.randint(0, vocab, (args.batch_size, args.input_len), generator=generator).tolist()
    measure(engine, prompts, 2)  # warm-up at the measured shapes (first calls pick kernels, grow the allocator)

    strategies = [ALLREDUCE_TORCH, comm.strategy] if args.compare else [comm.strategy]
    if args.compare and comm.strategy == ALLREDUCE_TORCH and ctx.is_first:
        print(f"note: {ALLREDUCE_FUSION} is not active ({comm.reason}); both columns run torch", flush=True)
    results, logits = {}, {}
    for name in strategies:
        label = name if name not in results else f"{name} (again)"
        with strategy(comm, name):
            engine.prepare_decode_graphs()  # graphs are per allreduce path: capture this one's before timing
            results[label] = measure(engine, prompts, args.output_len)
            logits[label] = prefill_logits(engine, prompts)
    if ctx.is_first:
        _report(results, logits, args, ctx, comm, engine.graphs is not None and engine.graphs.capture)
    return 0


def _report(results: dict, logits: dict, args, ctx, comm, engine_graphs: bool = False) -> None:
    shape = f"batch {args.batch_size}, input {args.input_len}, output {args.output_len}, tp {ctx.world_size}"
    print(f"bench: {shape}; allreduce strategy {comm.strategy} ({comm.reason})")
    if engine_graphs:
        print("decode steps replay CUDA graphs: the allreduce share counts the prefill step only")
    print(f"{'strategy':<22}{'prefill tok/s':>16}{'decode tok/s':>16}{'allreduce share':>18}")
    for label, r in results.items():
        share = f"{100 * r['allreduce_share']:.1f}%"
        print(f"{label:<22}{r['prefill_tokens_per_s']:>16.1f}{r['decode_tokens_per_s']:>16.1f}{share:>18}")
    summary = {label: {k: v for k, v in r.items() if k != "tokens"} for label, r in results.items()}
    if len(results) == 2:
        (a, ra), (b, rb) = results.items()
        diff = float((logits[a] - logits[b]).abs().max())
        same = sum(x == y for x, y in zip(ra["tokens"], rb["tokens"], strict=True))
        print(f"largest |logit difference| {a} vs {b}: {diff:.3g}; identical greedy outputs: {same}/{len(ra['tokens'])}")
        summary["max_abs_logit_diff"] = diff
    if args.json:
        print(json.dumps(summary), flush=True)
