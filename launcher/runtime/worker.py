"""One tensor-parallel worker: flags, process group, model, then generate / bench / serve.

Run by torchrun (`python -m torch.distributed.run ... -m launcher.runtime ...`), or directly for tp 1.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from launcher.runtime import contract
from launcher.runtime.errors import RuntimeUsageError

if TYPE_CHECKING:
    import torch

log = logging.getLogger("launcher.runtime")
DTYPES = contract.DTYPES


class _RefusingParser(argparse.ArgumentParser):
    """A parser that raises what argparse would print and exit with (Python 3.10's exit_on_error=False still exits
    for unrecognized arguments)."""

    def error(self, message: str):
        raise RuntimeUsageError(message)


def build_parser(parser_class: type[argparse.ArgumentParser] = argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser = parser_class(prog="python -m launcher.runtime", description=__doc__)
    parser.add_argument("--model", default="demo", help="Hugging Face model directory, or 'demo' (default)")
    parser.add_argument("--tp-size", type=int, default=1, help="tensor-parallel size (must equal torchrun's WORLD_SIZE)")
    parser.add_argument("--dtype", choices=DTYPES, default="auto", help="auto: bfloat16 on CUDA, float32 on CPU")
    parser.add_argument("--device", choices=contract.DEVICES, default="auto")
    parser.add_argument(contract.ALLREDUCE_FLAG, choices=contract.ALLREDUCE_CHOICES, default=contract.ALLREDUCE_TORCH)
    parser.add_argument("--max-model-len", type=int, default=None,
                        help=f"tokens per sequence (default min({contract.MAX_MODEL_LEN}, model))")
    parser.add_argument("--max-batch-size", type=int, default=contract.MAX_BATCH_SIZE,
                        help="sequences in flight (KV-cache slots)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--disable-cuda-graph",
        action="store_true",
        help="run decode steps eagerly on CUDA (by default they replay CUDA graphs; always eager on CPU)",
    )
    parser.add_argument("--mode", choices=contract.MODES, default="generate")
    parser.add_argument("--log-level", default="INFO")
    gen = parser.add_argument_group("generate")
    gen.add_argument("--prompt", action="append", default=None, help="prompt text (repeatable)")
    gen.add_argument("--max-tokens", type=int, default=32)
    gen.add_argument("--temperature", type=float, default=0.0, help="0 = greedy")
    gen.add_argument("--top-p", type=float, default=1.0)
    gen.add_argument("--json", action="store_true", help='one JSON line per prompt: {"prompt", "text", "token_ids"}')
    gen.add_argument("--chat", action="store_true", help="wrap each prompt in the model's chat template")
    gen.add_argument("--ignore-eos", action="store_true")
    bench = parser.add_argument_group("bench")
    bench.add_argument("--batch-size", type=int, default=4)
    bench.add_argument("--input-len", type=int, default=128)
    bench.add_argument("--output-len", type=int, default=32)
    bench.add_argument("--compare", action="store_true", help="run both allreduce strategies side by side")
    parser.epilog = "serve options: see --mode serve --help"
    return parser


def parse_args(
    argv: list[str] | None, parser_class: type[argparse.ArgumentParser] = argparse.ArgumentParser
) -> argparse.Namespace:
    """The serve options come from the serve package, imported only for --mode serve (it pulls in the web stack)."""
    parser = build_parser(parser_class)
    # A first pass that knows only --mode, so `--mode serve --help` lists the serve options instead of exiting early.
    mode_only = argparse.ArgumentParser(add_help=False)
    mode_only.add_argument("--mode")
    known, _ = mode_only.parse_known_args(argv)
    if known.mode == "serve":
        try:
            from launcher.runtime.serve import add_serve_args
        except ImportError:
            pass
        else:
            add_serve_args(parser)
    return parser.parse_args(argv)


def argument_error(argv: list[str]) -> str | None:
    """Why the runtime would refuse ``argv`` before loading anything (its parser, then :func:`check_values`), as one
    line; None when it takes them. The advisor asks before torchrun starts the ranks, so a typo after ``--`` is one
    line at once rather than a failure on every rank."""
    if "-h" in argv or "--help" in argv:
        return None  # the runtime prints its help and exits: nothing to refuse
    mode_only = argparse.ArgumentParser(add_help=False)
    mode_only.add_argument("--mode")
    known, _ = mode_only.parse_known_args(argv)
    if known.mode == "serve" and importlib.util.find_spec("fastapi") is None:
        return None  # without the web stack the serve options cannot be read; the launch reports the missing install
    try:
        check_values(parse_args(argv, _RefusingParser))
    except RuntimeUsageError as exc:
        return str(exc)
    return None


def resolve_dtype(name: str, device: torch.device) -> torch.dtype:
    import torch

    return getattr(torch, contract.auto_dtype(device.type) if name == "auto" else name)


def run(args: argparse.Namespace) -> int:
    from launcher.runtime.dist import env_world_size

    world = env_world_size()
    if args.tp_size != world:
        how = "run it under torchrun with --nproc-per-node" if world == 1 else "match torchrun's --nproc-per-node"
        raise RuntimeUsageError(f"--tp-size {args.tp_size} does not equal WORLD_SIZE {world}; {how} {args.tp_size}")
    check_values(args)
    if args.mode == "serve" and os.environ.get("RANK", "0") == "0":
        _serve_preflight(args)

    import torch

    from launcher.runtime.dist import init_parallel, pick_device, shutdown_parallel

    device = pick_device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise RuntimeUsageError("--device cuda but torch sees no CUDA device; use --device cpu")
    ctx = init_parallel(device)
    _setup_logging(args.log_level, ctx.rank, ctx.world_size)
    torch.manual_seed(args.seed)
    try:
        return _run_mode(args, ctx)
    finally:
        shutdown_parallel()


def check_values(args: argparse.Namespace) -> None:
    """Values argparse accepts but the runtime cannot use: one line each, before anything is loaded."""
    at_least_one = ["max_batch_size", "max_tokens", "batch_size", "input_len", "output_len"]
    for name in at_least_one:
        if getattr(args, name) < 1:
            raise RuntimeUsageError(f"--{name.replace('_', '-')} {getattr(args, name)} must be at least 1")
    if args.max_model_len is not None and args.max_model_len < 2:
        raise RuntimeUsageError(f"--max-model-len {args.max_model_len} must be at least 2 (a prompt token and one more)")
    if not 0 <= args.temperature <= 2:  # "not" also refuses nan
        raise RuntimeUsageError(f"--temperature {args.temperature} must be between 0 (greedy) and 2")
    if not 0 < args.top_p <= 1:
        raise RuntimeUsageError(f"--top-p {args.top_p} must be above 0 and at most 1")


def _check_memory(config, ctx, dtype: torch.dtype, batch: int, max_len: int) -> str:
    """Refuse at once when this rank's weights and KV cache cannot fit; the estimate's description otherwise."""
    from launcher.runtime.config import GIB, memory_estimate

    need = memory_estimate(config, ctx.world_size, dtype.itemsize, batch, max_len)
    if ctx.device.type == "cuda":
        import torch

        free, where, sharing = torch.cuda.mem_get_info(ctx.device)[0], f"{ctx.device} has", 1
    else:
        import psutil

        # CPU ranks of one node share its memory
        sharing = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
        free, where = psutil.virtual_memory().available, "this machine has"
    if need.total * sharing > free:
        ranks = f" x {sharing} ranks" if sharing > 1 else ""
        raise RuntimeUsageError(
            f"the model needs {need.describe(batch, max_len)}{ranks} but {where} {free / GIB:.1f} GiB free; lower "
            "--max-model-len or --max-batch-size, raise --tp-size, or use a smaller --dtype"
        )
    return need.describe(batch, max_len)


def _serve_preflight(args: argparse.Namespace) -> None:
    """A busy port or a public --host fails in a second, before the weights are read (the server checks again when it
    binds). Rank 0 only: it is the rank that binds, and other ranks probing the same port at once could collide;
    torchrun stops them when rank 0 exits."""
    try:
        from launcher.runtime.serve import preflight_error
    except ImportError:
        return  # reported by _run_mode as "--mode serve is not available"
    problem = preflight_error(args)
    if problem is not None:
        raise RuntimeUsageError(problem)


def _run_mode(args, ctx) -> int:
    import torch

    from launcher.runtime.communicator import Communicator
    from launcher.runtime.cuda_graph import cuda_graph_off_reason
    from launcher.runtime.demo import ensure_demo_model
    from launcher.runtime.engine import InferenceEngine
    from launcher.runtime.loader import load_model
    from launcher.runtime.modeldir import check_model_dir
    from launcher.runtime.tokenizer import Tokenizer

    model_dir = ensure_demo_model() if args.model == "demo" else Path(args.model).expanduser()
    config = check_model_dir(model_dir)  # the same checks `advisor check --engine bundled` reports
    if config.is_text_backbone_of_vl:
        log.info("%s: running the text backbone only (text prompts; images are not supported)", config.architecture)
    dtype = resolve_dtype(args.dtype, ctx.device)
    max_len = args.max_model_len or min(contract.MAX_MODEL_LEN, config.max_position_embeddings)
    if not 2 <= max_len <= config.max_position_embeddings:
        raise RuntimeUsageError(
            f"--max-model-len {max_len} must be 2..{config.max_position_embeddings} (the model's max_position_embeddings)"
        )
    tokenizer = Tokenizer.from_dir(model_dir, config.eos_token_ids)
    batch = max(args.max_batch_size, args.batch_size) if args.mode == "bench" else args.max_batch_size
    need = _check_memory(config, ctx, dtype, batch, max_len)
    comm = Communicator(ctx, args.allreduce)
    # the largest step is a prefill of every slot; fusion.workspace_tokens caps the workspace, larger steps fall back
    comm.setup(batch * max_len, config.hidden_size, dtype)
    try:
        if ctx.is_first:
            log.info("model %s (%s), tp %d, %s on %s", model_dir, config.architecture, ctx.world_size, dtype, ctx.device)
        try:
            model = load_model(model_dir, config, comm, dtype, max_len, show_progress=ctx.is_first and sys.stderr.isatty())
            graphs_off = cuda_graph_off_reason(ctx.device, args.disable_cuda_graph)
            if ctx.is_first:
                log.info("cuda graphs for decode: %s", "on" if graphs_off is None else f"off ({graphs_off})")
            engine = InferenceEngine(model, batch, max_len, tokenizer.eos_token_ids, seed=args.seed, cuda_graphs=graphs_off is None)
        except (MemoryError, RuntimeError) as err:  # torch.OutOfMemoryError is a RuntimeError
            if not isinstance(err, MemoryError | torch.OutOfMemoryError) and "allocate" not in str(err):
                raise
            raise RuntimeUsageError(
                f"out of memory while allocating the model: it needs {need}; lower --max-model-len or "
                "--max-batch-size, raise --tp-size, or use a smaller --dtype"
            ) from None
        if args.mode == "generate":
            from launcher.runtime.generate import run_generate

            return run_generate(engine, tokenizer, args, ctx)
        if args.mode == "bench":
            from launcher.runtime.bench import run_bench

            return run_bench(engine, args, ctx)
        try:
            from launcher.runtime.serve import run_serve
        except ImportError:
            raise RuntimeUsageError("--mode serve is not available in this build (launcher.runtime.serve is missing)") from None
        return run_serve(engine, tokenizer, args, ctx.rank, ctx.world_size, ctx.group)
    finally:
        comm.close()


def _setup_logging(level: str, rank: int, world: int) -> None:
    prefix = f"[rank {rank}] " if world > 1 else ""
    logging.basicConfig(level=level.upper(), format=f"{prefix}%(levelname)s %(message)s", stream=sys.stderr)
    if rank != 0:
        logging.getLogger("launcher.runtime").setLevel(max(logging.WARNING, logging.getLogger().level))


def die_with_torchrun_agent() -> None:
    """Under torchrun, ask Linux to SIGKILL this rank when its parent (the agent) dies, however it dies: a killed agent
    must not leave ranks serving with no one to stop them. The agent starts ranks from its main thread, which lives as
    long as it does (the signal follows the thread that forked)."""
    if not sys.platform.startswith("linux") or "TORCHELASTIC_RUN_ID" not in os.environ:
        return
    import ctypes
    import signal

    parent = os.getppid()
    pr_set_pdeathsig = 1
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0)
    if parent == 1 or os.getppid() != parent:  # the agent died before the request took effect
        os._exit(128 + signal.SIGKILL)


def main(argv: list[str] | None = None) -> int:
    die_with_torchrun_agent()
    args = parse_args(argv)
    try:
        return run(args)
    except RuntimeUsageError as err:
        rank = os.environ.get("RANK")
        prefix = f"[rank {rank}] " if rank is not None and os.environ.get("WORLD_SIZE", "1") != "1" else ""
        print(f"{prefix}error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
