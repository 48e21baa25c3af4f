"""Decode steps replayed from CUDA graphs: one graph per (batch bucket, KV-length bucket), captured at start-up.

Why: a decode step of a small model is a few hundred small kernels; launched one by one from Python, the launches, not
the GPU, set the pace. A CUDA graph replays the whole step in one launch.

How the step is made static (same shapes, same memory, no host sync inside):
- Row i of a graph is KV-cache slot i. A step padded to bucket B runs rows 0..B-1, so the cache is read as the view
  cache[:B] (no gather). The engine hands out the lowest free slot first, so running sequences sit in the low slots;
  a row whose slot is not decoding gets token 0 at position 0: it writes position 0 of a slot that is free or waiting
  for its prefill (which rewrites position 0 after the decode, in the same step) and its logits are dropped.
- Keys are read up to a length bucket L with a mask `key <= position` built on the device from the positions buffer,
  so one graph serves every length up to L (attention reads L keys per row: L buckets keep that close to the need).
- Token ids, positions and slots live in buffers allocated once; the logits are copied into one static output buffer
  that every graph writes its first B rows of.
- MoE layers take their sync-free paths (`MoE.sync_free`): the grouped expert loop sizes itself on the host.
Graphs depend on the allreduce path that was active when they were captured (torch, FlashInfer's fused kernels), so
they are keyed by it too (`bench --compare` switches paths and captures again).

Off on CPU (there is nothing to capture). `replay` on CPU runs the same static-buffer step eagerly: that is how the
tests check the static step token for token against the ordinary one without a GPU.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import torch

from launcher.runtime.layers.attention import AttentionBatch
from launcher.runtime.layers.moe import MoE

if TYPE_CHECKING:
    from launcher.runtime.model import CausalLM

log = logging.getLogger("launcher.runtime")

SMALL_BATCH_BUCKETS = (1, 2, 4, 8)  # then every multiple of BATCH_BUCKET_STEP up to the engine's batch size
BATCH_BUCKET_STEP = 8
MIN_LENGTH_BUCKET = 256  # then doubling up to max_model_len


def batch_buckets(max_batch_size: int) -> tuple[int, ...]:
    """Batch sizes graphs are captured for; the last is always max_batch_size (every slot)."""
    sizes = {b for b in SMALL_BATCH_BUCKETS if b < max_batch_size}
    sizes.update(range(BATCH_BUCKET_STEP * 2, max_batch_size, BATCH_BUCKET_STEP))
    sizes.add(max_batch_size)
    return tuple(sorted(sizes))


def length_buckets(max_model_len: int) -> tuple[int, ...]:
    """KV lengths graphs attend over: MIN_LENGTH_BUCKET doubling, the last always max_model_len."""
    sizes, size = [], MIN_LENGTH_BUCKET
    while size < max_model_len:
        sizes.append(size)
        size *= 2
    return (*sizes, max_model_len)


def pick_bucket(buckets: tuple[int, ...], need: int) -> int | None:
    """The smallest bucket holding `need`, or None when none does."""
    return next((b for b in buckets if b >= need), None)


def cuda_graph_off_reason(device: torch.device, disabled: bool) -> str | None:
    """Why decode will not use CUDA graphs on this device (None: it will)."""
    if disabled:
        return "--disable-cuda-graph"
    if device.type != "cuda":
        return f"they need a CUDA device; this run is on {device.type}"
    if not torch.cuda.is_available():
        return "torch sees no CUDA device"
    return None


def allreduce_path(model: CausalLM) -> tuple[bool, bool]:
    """What Communicator.add_rmsnorm runs right now: the fused allreduce, FlashInfer's tp-1 fused norm (else torch)."""
    comm = model.comm
    return comm.fusion is not None, comm.fused_norm_tp1 is not None


@contextmanager
def sync_free_moe(model: CausalLM) -> Iterator[None]:
    """MoE layers avoid their host-synchronising path while a static step is traced or run."""
    layers = [m for m in model.modules() if isinstance(m, MoE)]
    for layer in layers:
        layer.sync_free = True
    try:
        yield
    finally:
        for layer in layers:
            layer.sync_free = False


class DecodeGraphs:
    """Static buffers and the captured graphs of one engine (its model and KV cache, which must never be reallocated)."""

    def __init__(self, model: CausalLM, max_batch_size: int, max_model_len: int):
        self.model = model
        self.device = model.device
        self.capture = self.device.type == "cuda"  # on CPU, replay runs the static step eagerly
        self.batch_buckets = batch_buckets(max_batch_size)
        self.length_buckets = length_buckets(max_model_len)
        # rows: token ids, positions; slots are the rows themselves
        self.inputs = torch.zeros(2, max_batch_size, dtype=torch.long, device=self.device)
        self.slots = torch.arange(max_batch_size, device=self.device)
        self.logits = torch.zeros(max_batch_size, model.config.vocab_size, dtype=torch.float32, device=self.device)
        self.graphs: dict[tuple, torch.cuda.CUDAGraph] = {}
        self.pool = None
        self.replays = 0  # steps served by this class (graph replays on CUDA, static eager steps on CPU)

    # -- the static step ------------------------------------------------------------------------------------------
    def static_step(self, batch: int, length: int) -> None:
        """Decode rows 0..batch-1 from the input buffers into self.logits[:batch]; the code a graph captures."""
        ids, positions = self.inputs[0, :batch].unsqueeze(1), self.inputs[1, :batch].unsqueeze(1)
        slots = self.slots[:batch]
        at = AttentionBatch.static_decode(positions, slots, length, self.model.rotary)
        hidden = self.model(ids, positions, slots, at=at)
        self.logits[:batch].copy_(self.model.logits(hidden[:, 0]))

    def fill(self, batch: int, slots: list[int], tokens: list[int], positions: list[int]) -> None:
        """Write one step's inputs into rows 0..batch-1 (rows not decoding: token 0 at position 0)."""
        host = torch.zeros(2, batch, dtype=torch.long)
        index = torch.tensor(slots)
        host[0, index] = torch.tensor(tokens)
        host[1, index] = torch.tensor(positions)
        self.inputs[:, :batch].copy_(host)

    def buckets_for(self, slots: list[int], positions: list[int]) -> tuple[int, int] | None:
        batch = pick_bucket(self.batch_buckets, max(slots) + 1)
        length = pick_bucket(self.length_buckets, max(positions) + 1)
        return None if batch is None or length is None else (batch, length)

    def decode(self, slots: list[int], tokens: list[int], positions: list[int]) -> torch.Tensor | None:
        """Logits [len(slots), vocab] of one decode step (row r: the sequence in slots[r], its last token and its
        position), or None when no bucket holds the step (the caller runs it eagerly). The result may be a view of
        the static output buffer: use it before the next step."""
        buckets = self.buckets_for(slots, positions)
        if buckets is None:
            return None
        batch, length = buckets
        self.fill(batch, slots, tokens, positions)
        self.run(batch, length)
        self.replays += 1
        if slots == list(range(batch)):
            return self.logits[:batch]
        return self.logits[torch.tensor(slots, device=self.device)]

    def run(self, batch: int, length: int) -> None:
        if not self.capture:
            with sync_free_moe(self.model):
                self.static_step(batch, length)
            return
        key = (batch, length, allreduce_path(self.model))
        graph = self.graphs.get(key)
        if graph is None:  # inputs already hold this step: warm-up and capture recompute exactly what it writes
            graph = self._capture(batch, length)
        graph.replay()

    # -- capture (CUDA) -------------------------------------------------------------------------------------------
    def capture_all(self) -> None:
        """Capture every bucket pair for the current allreduce path, largest first (smaller graphs then fit in the
        memory the larger ones left in the shared pool). Only while no sequence is running: the warm-up and capture
        runs write position 0 of every slot. No-op on CPU."""
        if not self.capture:
            return
        start = time.perf_counter()
        path = allreduce_path(self.model)
        self.inputs.zero_()
        count = 0
        for batch in reversed(self.batch_buckets):
            for length in reversed(self.length_buckets):
                if (batch, length, path) not in self.graphs:
                    self._capture(batch, length)
                    count += 1
        if count and self.model.comm.ctx.is_first:
            log.info(
                "cuda graphs: captured %d decode graphs (batch %s x kv length %s) in %.1f s",
                count, list(self.batch_buckets), list(self.length_buckets), time.perf_counter() - start,
            )

    def _capture(self, batch: int, length: int) -> torch.cuda.CUDAGraph:
        comm = self.model.comm
        timing, comm.timing = comm.timing, False  # its synchronize would break the capture
        try:
            with sync_free_moe(self.model):
                # warm-up on a side stream, as torch.cuda.graph asks (lazy initialisations happen outside the capture)
                stream = torch.cuda.Stream(self.device)
                stream.wait_stream(torch.cuda.current_stream(self.device))
                with torch.cuda.stream(stream):
                    for _ in range(2):
                        self.static_step(batch, length)
                torch.cuda.current_stream(self.device).wait_stream(stream)
                graph = torch.cuda.CUDAGraph()
                if self.pool is None:
                    self.pool = torch.cuda.graph_pool_handle()
                with torch.cuda.graph(graph, pool=self.pool):
                    self.static_step(batch, length)
        finally:
            comm.timing = timing
        self.graphs[(batch, length, allreduce_path(self.model))] = graph
        return graph
