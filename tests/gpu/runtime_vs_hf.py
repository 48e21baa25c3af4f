"""The bundled runtime against transformers on the same random checkpoints: greedy tokens and throughput.

Two checkpoints are built with transformers (random weights, saved in bfloat16): a dense Qwen3 with Qwen/Qwen3-0.6B's
shape and a Qwen3-MoE with 64 experts (top 8). For each:
- float32, the exact check: transformers' greedy tokens (generate, one prompt at a time) must equal the runtime's, with
  decode through CUDA graphs and without (a failure otherwise);
- bfloat16: the share of greedy tokens that agree (reported; bf16 rounding may flip near-ties);
- bfloat16 speed at each batch size: prefill and decode tokens/s of the runtime with CUDA graphs, without, and of
  transformers' generate, side by side; the batch-1 decode bound set by memory bandwidth (bytes of weights read per
  token / measured device-to-device copy bandwidth).
`--tiny --device cpu` runs every step with tiny shapes (the static decode step then runs eagerly): the dry run.

usage: python tests/gpu/runtime_vs_hf.py --out runtime.json --models DIR [--device cuda|cpu] [--tiny]
Exit 0 when the float32 tokens agree for every model, 1 otherwise.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from pathlib import Path

import torch

# Qwen/Qwen3-0.6B's config.json (hidden 1024, 28 layers, 16 heads / 8 kv heads of 128, intermediate 3072, tied).
FULL = {
    "qwen3": dict(vocab_size=151936, hidden_size=1024, intermediate_size=3072, num_hidden_layers=28,
                  num_attention_heads=16, num_key_value_heads=8, head_dim=128, tie_word_embeddings=True),
    "qwen3_moe": dict(vocab_size=151936, hidden_size=1024, intermediate_size=3072, num_hidden_layers=8,
                      num_attention_heads=16, num_key_value_heads=4, head_dim=128, moe_intermediate_size=384,
                      num_experts=64, num_experts_per_tok=8, norm_topk_prob=True, tie_word_embeddings=False),
}
TINY = {
    "qwen3": dict(vocab_size=512, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, head_dim=16, tie_word_embeddings=True),
    "qwen3_moe": dict(vocab_size=512, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
                      num_key_value_heads=2, head_dim=16, moe_intermediate_size=16, num_experts=64,
                      num_experts_per_tok=8, norm_topk_prob=True, tie_word_embeddings=False),
}
# (batch sizes, input len, output len) of the speed runs; prompts of the exactness check; new tokens there
FULL_PLAN = ((1, 8, 32), 128, 64, (7, 19, 33, 64), 32)
TINY_PLAN = ((1, 4), 8, 4, (3, 7), 6)
INIT_RANGE = 0.1  # larger than transformers' 0.02, so logits are spread out and greedy choices are not near-ties


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def build_checkpoint(kind: str, shape: dict, path: Path, device: torch.device) -> None:
    """A random transformers model built on `device`, saved in bfloat16 with a byte-level tokenizer."""
    import transformers as tf

    from launcher.runtime.demo import build_byte_tokenizer

    cls, config_cls = {
        "qwen3": (tf.Qwen3ForCausalLM, tf.Qwen3Config),
        "qwen3_moe": (tf.Qwen3MoeForCausalLM, tf.Qwen3MoeConfig),
    }[kind]
    config = config_cls(**shape, rms_norm_eps=1e-6, max_position_embeddings=4096, initializer_range=INIT_RANGE,
                        bos_token_id=1, eos_token_id=2)
    torch.manual_seed(0)
    with torch.device(device):
        model = cls(config)
    with torch.no_grad():  # norms start at one; perturb them so a wrong norm wiring shows
        for name, param in model.named_parameters():
            if "norm" in name:
                param.add_(torch.randn_like(param) * 0.1)
    model.to(torch.bfloat16).save_pretrained(path)
    build_byte_tokenizer(max(shape["vocab_size"], 259)).save(str(path / "tokenizer.json"))


def load_reference(path: Path, device: torch.device, dtype: torch.dtype):
    """transformers' model from the checkpoint, loaded as a user loads it. Not the built model cast with .to(): that
    casts the rotary inverse frequencies too (a buffer transformers keeps in float32), and the reference then differs
    from transformers itself by about 1e-2 in every position's angle (seen on the H200: no token agreed after the
    first few)."""
    import transformers as tf

    model = tf.AutoModelForCausalLM.from_pretrained(path, dtype=dtype).to(device).eval()
    model.generation_config.eos_token_id = None
    model.generation_config.pad_token_id = 0
    return model


def open_engine(model_dir: Path, device: torch.device, dtype: torch.dtype, max_batch: int, max_len: int):
    from launcher.runtime.communicator import Communicator
    from launcher.runtime.config import load_config
    from launcher.runtime.dist import init_parallel
    from launcher.runtime.engine import InferenceEngine
    from launcher.runtime.loader import load_model

    config = load_config(model_dir)
    comm = Communicator(init_parallel(device), "torch")
    comm.setup(max_batch * max_len, config.hidden_size, dtype)
    model = load_model(model_dir, config, comm, dtype, max_len)
    return InferenceEngine(model, max_batch, max_len, config.eos_token_ids, cuda_graphs=True)


def hf_greedy(model, prompts: list[list[int]], new_tokens: int, device: torch.device) -> list[list[int]]:
    out = []
    with torch.no_grad():
        for prompt in prompts:
            ids = torch.tensor([prompt], device=device)
            tokens = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=new_tokens,
                                    min_new_tokens=new_tokens, do_sample=False)
            out.append(tokens[0, len(prompt):].tolist())
    return out


def runtime_greedy(engine, prompts: list[list[int]], new_tokens: int, graphs: bool) -> list[list[int]]:
    from launcher.runtime.engine import SamplingParams

    saved = engine.graphs
    engine.graphs = saved if graphs else None
    try:
        return engine.generate(prompts, SamplingParams(max_tokens=new_tokens, ignore_eos=True))
    finally:
        engine.graphs = saved


def agreement(a: list[list[int]], b: list[list[int]]) -> dict:
    same = sum(x == y for ra, rb in zip(a, b, strict=True) for x, y in zip(ra, rb, strict=True))
    total = sum(len(r) for r in a)
    first = next((i for i, (ra, rb) in enumerate(zip(a, b, strict=True)) if ra != rb), None)
    return {"equal": a == b, "tokens_agreeing": same, "tokens": total, "first_differing_prompt": first}


def max_logit_difference(engine, hf, prompt: list[int], device: torch.device) -> float:
    """Largest |runtime - transformers| over the logits of every position of one prompt (one prefill each)."""
    from launcher.runtime.bench import prefill_logits

    with torch.no_grad():
        reference = hf(input_ids=torch.tensor([prompt], device=device)).logits.float()
    return float((prefill_logits(engine, [prompt]).float() - reference).abs().max())


def step_breakdown(engine, batch: int, steps: int = 50) -> dict:
    """Milliseconds of one decode graph's replay alone (the GPU's share of a step) against a whole engine decode step
    (graph plus the host's work around it: inputs, argmax, the token copy back), at this batch size."""
    from launcher.runtime.engine import SamplingParams

    graphs, device = engine.graphs, engine.device
    steps = min(steps, engine.max_model_len - 4)  # a 2-token prompt, a first token, the timed steps, one more
    bucket = graphs.buckets_for(list(range(batch)), [engine.max_model_len - 1] * batch)
    graphs.run(*bucket)
    sync(device)
    start = time.perf_counter()
    for _ in range(steps):
        graphs.run(*bucket)
    sync(device)
    replay_ms = (time.perf_counter() - start) * 1000 / steps
    params = SamplingParams(max_tokens=steps + 2, ignore_eos=True)
    for i in range(batch):
        engine.add_request((1 << 42) + i, [5, 6], params)
    engine.step()  # prefill
    engine.step()
    sync(device)
    start = time.perf_counter()
    for _ in range(steps):
        engine.step()
    sync(device)
    step_ms = (time.perf_counter() - start) * 1000 / steps
    while engine.has_work():
        engine.step()
    return {"batch": batch, "bucket": list(bucket), "graph_replay_ms": replay_ms, "engine_step_ms": step_ms}


def decode_kernels(engine, batch: int, top: int = 10) -> dict:
    """What one static decode step (the code the graphs capture) launches, under torch's profiler, run eagerly so each
    kernel is seen: how many, their summed device time, and the `top` by time. On CPU: the operators instead."""
    from torch.profiler import ProfilerActivity, profile

    from launcher.runtime.cuda_graph import sync_free_moe

    graphs, device = engine.graphs, engine.device
    length = graphs.length_buckets[-1]
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with sync_free_moe(engine.model):
        graphs.static_step(batch, length)  # warm-up
        sync(device)
        with profile(activities=activities) as prof:
            graphs.static_step(batch, length)
            sync(device)
    on_device = device.type == "cuda"
    rows = []
    for event in prof.key_averages():
        micros = event.self_device_time_total if on_device else event.self_cpu_time_total
        if micros > 0 and (not on_device or event.device_type.name == "CUDA"):
            rows.append({"name": event.key[:90], "calls": event.count, "us": round(micros, 1)})
    rows.sort(key=lambda row: -row["us"])
    return {"batch": batch, "kernels" if on_device else "operators": sum(r["calls"] for r in rows),
            "total_us": round(sum(r["us"] for r in rows), 1), "top": rows[:top]}


def runtime_speed(engine, prompts: list[list[int]], output_len: int, graphs: bool) -> dict:
    from launcher.runtime.bench import measure

    saved = engine.graphs
    engine.graphs = saved if graphs else None
    try:
        measure(engine, prompts, 2)  # warm-up at the measured shapes (first calls pick kernels, grow the allocator)
        result = measure(engine, prompts, output_len)
    finally:
        engine.graphs = saved
    return {"prefill_tokens_per_s": result["prefill_tokens_per_s"], "decode_tokens_per_s": result["decode_tokens_per_s"]}


def hf_speed(model, prompts: list[list[int]], output_len: int, device: torch.device) -> dict:
    """Prefill: one forward over the prompts. Decode: (generate N tokens - generate 1 token) for N - 1 steps."""
    ids = torch.tensor(prompts, device=device)
    mask = torch.ones_like(ids)

    def timed(fn) -> float:
        sync(device)
        start = time.perf_counter()
        fn()
        sync(device)
        return time.perf_counter() - start

    def generate(n: int):
        return model.generate(ids, attention_mask=mask, max_new_tokens=n, min_new_tokens=n, do_sample=False)

    with torch.no_grad():
        generate(2)  # warm-up
        prefill = timed(lambda: model(input_ids=ids, attention_mask=mask))
        one = timed(lambda: generate(1))
        full = timed(lambda: generate(output_len))
    batch = len(prompts)
    return {
        "prefill_tokens_per_s": batch * ids.shape[1] / prefill,
        "decode_tokens_per_s": batch * (output_len - 1) / max(full - one, 1e-9),
    }


def copy_bandwidth(device: torch.device) -> float:
    """Bytes/s of a device-to-device copy (read + write), the reachable memory bandwidth."""
    size = (1 << 30) if device.type == "cuda" else (1 << 26)
    src = torch.empty(size, dtype=torch.uint8, device=device)
    dst = torch.empty_like(src)
    dst.copy_(src)
    sync(device)
    start = time.perf_counter()
    for _ in range(10):
        dst.copy_(src)
    sync(device)
    return 2 * size * 10 / (time.perf_counter() - start)


def bytes_per_token(shape: dict, element_size: int = 2) -> int:
    """Weights read for one decode token: everything except the embedding table (one row) and unrouted experts."""
    h, layers, vocab = shape["hidden_size"], shape["num_hidden_layers"], shape["vocab_size"]
    d, heads, kv = shape["head_dim"], shape["num_attention_heads"], shape["num_key_value_heads"]
    attention = h * (heads + 2 * kv) * d + heads * d * h
    if "num_experts" in shape:
        mlp = shape["num_experts_per_tok"] * 3 * h * shape["moe_intermediate_size"] + shape["num_experts"] * h
    else:
        mlp = 3 * h * shape["intermediate_size"]
    return element_size * (layers * (attention + mlp) + vocab * h)


def run_model(kind: str, shape: dict, plan: tuple, root: Path, device: torch.device, report: dict) -> bool:
    batches, input_len, output_len, check_lens, new_tokens = plan
    generator = torch.Generator().manual_seed(1)
    vocab = shape["vocab_size"]
    check_prompts = [torch.randint(3, vocab, (n,), generator=generator).tolist() for n in check_lens]
    max_batch, max_len = max(batches), max(input_len + output_len, max(check_lens) + new_tokens)
    result: dict = {"shape": shape, "max_batch_size": max_batch, "max_model_len": max_len}
    report[kind] = result

    start = time.perf_counter()
    build_checkpoint(kind, shape, root / kind, device)
    result["build_s"] = round(time.perf_counter() - start, 1)

    # float32: the exact check
    hf = load_reference(root / kind, device, torch.float32)
    hf_tokens = hf_greedy(hf, check_prompts, new_tokens, device)
    engine = open_engine(root / kind, device, torch.float32, max_batch, max_len)
    result["float32"] = {
        "graphs_vs_transformers": agreement(runtime_greedy(engine, check_prompts, new_tokens, True), hf_tokens),
        "eager_vs_transformers": agreement(runtime_greedy(engine, check_prompts, new_tokens, False), hf_tokens),
        "max_abs_logit_diff": max_logit_difference(engine, hf, check_prompts[-1], device),
        "static_steps": engine.graphs.replays,
        "captured_graphs": len(engine.graphs.graphs),
    }
    ok = result["float32"]["graphs_vs_transformers"]["equal"] and result["float32"]["eager_vs_transformers"]["equal"]
    del engine, hf
    gc.collect()

    # bfloat16: agreement, then speed
    hf = load_reference(root / kind, device, torch.bfloat16)
    engine = open_engine(root / kind, device, torch.bfloat16, max_batch, max_len)
    hf_bf16 = hf_greedy(hf, check_prompts, new_tokens, device)
    result["bfloat16"] = {
        "graphs_vs_transformers": agreement(runtime_greedy(engine, check_prompts, new_tokens, True), hf_bf16),
        "max_abs_logit_diff": max_logit_difference(engine, hf, check_prompts[-1], device),
    }
    speed = []
    for batch in batches:
        prompts = torch.randint(3, vocab, (batch, input_len), generator=generator).tolist()
        row = {
            "batch": batch,
            "runtime_cuda_graphs": runtime_speed(engine, prompts, output_len, graphs=True),
            "runtime_eager": runtime_speed(engine, prompts, output_len, graphs=False),
            "transformers": hf_speed(hf, prompts, output_len, device),
        }
        row["decode_speedup_vs_transformers"] = (
            row["runtime_cuda_graphs"]["decode_tokens_per_s"] / row["transformers"]["decode_tokens_per_s"]
        )
        speed.append(row)
        print(f"{kind} batch {batch}: " + ", ".join(
            f"{name} prefill {row[name]['prefill_tokens_per_s']:.0f} decode {row[name]['decode_tokens_per_s']:.0f} tok/s"
            for name in ("runtime_cuda_graphs", "runtime_eager", "transformers")), flush=True)
    result["speed_bfloat16"] = speed
    result["decode_step_ms"] = [step_breakdown(engine, batch) for batch in batches]
    result["decode_profile"] = decode_kernels(engine, batches[0])
    result["captured_graphs_bfloat16"] = len(engine.graphs.graphs)
    result["weights_bytes_per_token"] = bytes_per_token(shape)
    del engine, hf
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--models", type=Path, required=True, help="directory for the checkpoints")
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--tiny", action="store_true", help="tiny shapes (the CPU dry run)")
    parser.add_argument("--only", choices=tuple(FULL), action="append", help="one model kind (repeatable)")
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        print("error: --device cuda but torch sees no CUDA device; use --device cpu --tiny", file=sys.stderr)
        return 2
    shapes, plan = (TINY, TINY_PLAN) if args.tiny else (FULL, FULL_PLAN)
    report: dict = {"device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
                    "torch": torch.__version__, "tiny": args.tiny}
    report["copy_bandwidth_bytes_per_s"] = copy_bandwidth(device)
    ok = True
    for kind in args.only or tuple(shapes):
        try:
            ok &= run_model(kind, shapes[kind], plan, args.models, device, report.setdefault("models", {}))
        finally:
            args.out.write_text(json.dumps(report, indent=1))
    for result in report["models"].values():
        bound = report["copy_bandwidth_bytes_per_s"] / result["weights_bytes_per_token"]
        result["batch1_decode_bound_tokens_per_s"] = bound
        batch1 = next((r for r in result["speed_bfloat16"] if r["batch"] == 1), None)
        if batch1:
            result["batch1_bound_over_measured"] = bound / batch1["runtime_cuda_graphs"]["decode_tokens_per_s"]
    report["float32_tokens_agree"] = ok
    args.out.write_text(json.dumps(report, indent=1))
    print(f"float32 greedy tokens agree with transformers: {ok}", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
