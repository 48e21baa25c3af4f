"""`--mode generate`: complete each --prompt and print it (rank 0); every rank runs the same engine calls."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from launcher.runtime.engine import InferenceEngine, SamplingParams
from launcher.runtime.errors import RuntimeUsageError
from launcher.runtime.tokenizer import Tokenizer

if TYPE_CHECKING:
    from launcher.runtime.dist import ParallelContext

DEFAULT_PROMPT = "Tensor parallelism splits every layer across GPUs"


def run_generate(engine: InferenceEngine, tokenizer: Tokenizer, args: argparse.Namespace, ctx: ParallelContext) -> int:
    if args.max_tokens < 1:
        raise RuntimeUsageError("--max-tokens must be at least 1")
    texts = args.prompt or [DEFAULT_PROMPT]
    prompts = []
    for text in texts:
        ids = tokenizer.encode_chat([{"role": "user", "content": text}]) if args.chat else tokenizer.encode(text)
        if not ids:
            raise RuntimeUsageError("a --prompt is empty; give it some text")
        if len(ids) + args.max_tokens > engine.max_model_len:
            raise RuntimeUsageError(
                f"prompt of {len(ids)} tokens + --max-tokens {args.max_tokens} exceeds --max-model-len "
                f"{engine.max_model_len}; shorten the prompt, lower --max-tokens or raise --max-model-len"
            )
        prompts.append(ids)
    params = SamplingParams(
        max_tokens=args.max_tokens,
        temperature=args.temperature,
        top_p=args.top_p,
        seed=args.seed,
        ignore_eos=args.ignore_eos,
    )
    outputs = engine.generate(prompts, params)
    if ctx.is_first and getattr(args, "model", None) == "demo":
        # stderr, so the completions on stdout stay exactly the engine's (and `--json | jq` works)
        print("note: the demo model has random weights, so its text is meaningless; pass --model DIR for a real one",
              file=sys.stderr, flush=True)  # fmt: skip
    if ctx.is_first:
        for text, ids in zip(texts, outputs, strict=True):
            completion = tokenizer.decode(ids)
            if args.json:
                print(json.dumps({"prompt": text, "text": completion, "token_ids": ids}), flush=True)
            else:
                print(f"{text!r} -> {completion!r}", flush=True)
    return 0
