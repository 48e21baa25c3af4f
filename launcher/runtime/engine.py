"""The inference engine: preallocated KV cache slots, batched prefill and decode, sampling.

CONTRACT (used by `--mode generate|bench` and by the server): SamplingParams and TokenEvent as defined below, and

    class InferenceEngine:
        max_batch_size: int
        max_model_len: int
        def free_slots(self) -> int
        def add_request(self, seq_id: int, prompt_ids: list[int], params: SamplingParams) -> None
            # ValueError when len(prompt_ids) + params.max_tokens > max_model_len (or the prompt is empty);
            # RuntimeError when no KV slot is free.
        def abort(self, seq_id: int) -> None  # frees the slot; unknown ids are ignored
        def has_work(self) -> bool
        def step(self) -> list[TokenEvent]    # one engine step: prefill sequences added since the last step,
                                              # decode every running one; finished sequences free their slot.
                                              # StepFailed when it fails: the step's sequences are withdrawn
                                              # (slots freed) and named, the engine stays usable.
        def generate(self, prompts: list[list[int]], params: SamplingParams) -> list[list[int]]

Every rank makes the same calls in the same order (tensor parallelism); the sampled tokens are identical on every rank.

Details of this implementation:
- A finishing event with finish_reason "stop" carries the stop token (EOS or one of stop_token_ids); it is not part of
  the completion text, and `generate` leaves it out of the returned ids. "length" events carry a normal token.
- Stop tokens are params.stop_token_ids plus the model's EOS ids (unless ignore_eos).
- Sampling with seed None uses the engine seed combined with seq_id, so runs are reproducible and equal on all ranks.
- With cuda_graphs=True decode steps go through cuda_graph.DecodeGraphs (captured CUDA graphs on a GPU; on CPU the
  same static-buffer step run eagerly, which is how tests check it).
- A step emits at most one token per sequence: sequences prefilled in this step get their first token; sequences that
  were already running get their next one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from launcher.runtime.cuda_graph import DecodeGraphs
from launcher.runtime.model import CausalLM
from launcher.runtime.sampling import make_generator, sample


@dataclass(frozen=True)
class SamplingParams:
    max_tokens: int = 16
    temperature: float = 0.0  # 0 = greedy
    top_p: float = 1.0
    seed: int | None = None
    stop_token_ids: tuple[int, ...] = ()
    ignore_eos: bool = False


@dataclass(frozen=True)
class TokenEvent:
    seq_id: int
    token_id: int
    finished: bool
    finish_reason: str | None  # "stop" | "length" | None while running


class StepFailed(RuntimeError):
    """One engine step failed; its sequences (``seq_ids``) were withdrawn and their slots freed, and the engine serves
    the next step. The server fails those requests alone (launcher/runtime/serve/scheduler.py)."""

    def __init__(self, seq_ids: tuple[int, ...], cause: BaseException) -> None:
        super().__init__(f"{type(cause).__name__}: {cause}")
        self.seq_ids = seq_ids
        self.cause = cause


# The token rank 0 broadcasts when its sampling failed: every rank then fails the step alike (no vocabulary has it).
NO_TOKEN = -1


@dataclass
class Sequence:
    seq_id: int
    prompt: list[int]
    params: SamplingParams
    slot: int
    stop_ids: frozenset[int]
    generator: torch.Generator | None
    output: list[int] = field(default_factory=list)

    @property
    def length(self) -> int:
        return len(self.prompt) + len(self.output)


class InferenceEngine:
    def __init__(
        self,
        model: CausalLM,
        max_batch_size: int,
        max_model_len: int,
        eos_token_ids: tuple[int, ...] = (),
        seed: int = 0,
        cuda_graphs: bool = False,
    ):
        self.model = model
        self.max_batch_size, self.max_model_len = max_batch_size, max_model_len
        self.eos_token_ids = tuple(eos_token_ids)
        self.seed = seed
        self.device = model.device
        self._allocate_kv_cache()
        self._free = list(range(max_batch_size))
        self.waiting: list[Sequence] = []
        self.running: dict[int, Sequence] = {}
        self.graphs = DecodeGraphs(model, max_batch_size, max_model_len) if cuda_graphs else None
        self.prepare_decode_graphs()

    def prepare_decode_graphs(self) -> None:
        """Capture the decode graphs for the current allreduce path (no-op without graphs or on CPU). Only while no
        sequence runs; a path switched later (bench --compare) calls it again."""
        if self.graphs is not None and not self.has_work():
            self.graphs.capture_all()

    def _allocate_kv_cache(self) -> None:
        for layer in self.model.layers:
            attn = layer.attn
            shape = (self.max_batch_size, attn.num_kv_heads, self.max_model_len, attn.head_dim)
            attn.k_cache = torch.zeros(shape, dtype=self.model.dtype, device=self.device)
            attn.v_cache = torch.zeros(shape, dtype=self.model.dtype, device=self.device)

    # -- requests -----------------------------------------------------------------------------------------------
    def free_slots(self) -> int:
        return len(self._free)

    def add_request(self, seq_id: int, prompt_ids: list[int], params: SamplingParams) -> None:
        if not prompt_ids:
            raise ValueError("the prompt is empty")
        if params.max_tokens < 1:
            raise ValueError("max_tokens must be at least 1")
        if len(prompt_ids) + params.max_tokens > self.max_model_len:
            raise ValueError(
                f"prompt ({len(prompt_ids)} tokens) + max_tokens ({params.max_tokens}) exceeds max_model_len "
                f"({self.max_model_len})"
            )
        if seq_id in self.running or any(s.seq_id == seq_id for s in self.waiting):
            raise ValueError(f"sequence {seq_id} is already in the engine")
        if not self._free:
            raise RuntimeError("no free KV-cache slot; wait for a sequence to finish")
        stop = set(params.stop_token_ids) | (set() if params.ignore_eos else set(self.eos_token_ids))
        generator = None
        if params.temperature > 0:
            generator = make_generator(params.seed if params.seed is not None else self.seed * 1_000_003 + seq_id)
        slot = self._free.pop(0)
        self.waiting.append(Sequence(seq_id, list(prompt_ids), params, slot, frozenset(stop), generator))

    def abort(self, seq_id: int) -> None:
        for seq in self.waiting:
            if seq.seq_id == seq_id:
                self.waiting.remove(seq)
                self._release(seq)
                return
        seq = self.running.pop(seq_id, None)
        if seq is not None:
            self._release(seq)

    def _release(self, seq: Sequence) -> None:
        self._free.append(seq.slot)
        self._free.sort()

    def has_work(self) -> bool:
        return bool(self.waiting or self.running)

    # -- steps --------------------------------------------------------------------------------------------------
    def step(self) -> list[TokenEvent]:
        decoding = list(self.running.values())
        prefilling, self.waiting = self.waiting, []
        try:
            return self._step(decoding, prefilling)
        except Exception as exc:
            # Withdraw every sequence of the step, finished or not (its last event is lost with the step); a slot is
            # freed once: one already free was released when its sequence finished earlier in this step.
            seqs = (*decoding, *prefilling)
            for seq in seqs:
                self.running.pop(seq.seq_id, None)
                if seq.slot not in self._free:
                    self._release(seq)
            raise StepFailed(tuple(seq.seq_id for seq in seqs), exc) from exc

    def _step(self, decoding: list[Sequence], prefilling: list[Sequence]) -> list[TokenEvent]:
        events: list[TokenEvent] = []
        if decoding:
            events += self._advance(decoding, self._decode_logits(decoding))
        if prefilling:
            for seq in prefilling:
                self.running[seq.seq_id] = seq
            events += self._advance(prefilling, self._prefill_logits(prefilling))
        return events

    def _prefill_logits(self, seqs: list[Sequence]) -> torch.Tensor:
        """All prompts in one padded batch; padding sits after each prompt, so it never reaches the real tokens."""
        width = max(len(s.prompt) for s in seqs)
        ids = torch.zeros(len(seqs), width, dtype=torch.long)
        for row, seq in enumerate(seqs):
            ids[row, : len(seq.prompt)] = torch.tensor(seq.prompt)
        positions = torch.arange(width).expand(len(seqs), width)
        last = torch.tensor([len(s.prompt) - 1 for s in seqs])
        hidden = self._forward(ids, positions, seqs)
        return self.model.logits(hidden[torch.arange(len(seqs)), last.to(self.device)])

    def _decode_logits(self, seqs: list[Sequence]) -> torch.Tensor:
        if self.graphs is not None:
            logits = self.graphs.decode([s.slot for s in seqs], [s.output[-1] for s in seqs], [s.length - 1 for s in seqs])
            if logits is not None:
                return logits
        ids = torch.tensor([[s.output[-1]] for s in seqs])
        positions = torch.tensor([[s.length - 1] for s in seqs])
        return self.model.logits(self._forward(ids, positions, seqs)[:, 0])

    def _forward(self, ids: torch.Tensor, positions: torch.Tensor, seqs: list[Sequence]) -> torch.Tensor:
        slots = torch.tensor([s.slot for s in seqs], device=self.device)
        return self.model(ids.to(self.device), positions.to(self.device), slots)

    def _advance(self, seqs: list[Sequence], logits: torch.Tensor) -> list[TokenEvent]:
        params = [s.params for s in seqs]
        failure: Exception | None = None
        try:
            if all(p.temperature <= 0 for p in params):  # greedy: argmax and broadcast on the device, one host sync
                chosen = logits.argmax(dim=-1)
            else:
                chosen = torch.tensor(sample(logits, params, [s.generator for s in seqs]), device=self.device)
        except Exception as exc:  # every rank still joins the broadcast, or the others would wait in it for ever
            failure = exc
            chosen = torch.full((len(seqs),), NO_TOKEN, dtype=torch.long, device=self.device)
        # rank 0 decides: identical tokens on every rank even if kernels differ in the last bit
        tokens = self.model.comm.broadcast(chosen).tolist()
        if NO_TOKEN in tokens:  # rank 0's sampling failed: every rank fails this step alike
            raise failure or RuntimeError("sampling failed on rank 0")
        events = []
        for seq, token in zip(seqs, tokens, strict=True):
            reason = None
            if token in seq.stop_ids:
                reason = "stop"
            else:
                seq.output.append(token)
                if len(seq.output) >= seq.params.max_tokens:
                    reason = "length"
            if reason is not None:
                del self.running[seq.seq_id]
                self._release(seq)
            events.append(TokenEvent(seq.seq_id, token, reason is not None, reason))
        return events

    # -- convenience --------------------------------------------------------------------------------------------
    def generate(self, prompts: list[list[int]], params: SamplingParams) -> list[list[int]]:
        """Completions for all prompts (batched up to max_batch_size at a time), stop tokens left out."""
        outputs: dict[int, list[int]] = {i: [] for i in range(len(prompts))}
        pending = list(range(len(prompts)))
        base = 1 << 40  # ids of our own, away from any the caller uses concurrently
        while pending or self.has_work():
            while pending and self.free_slots():
                index = pending.pop(0)
                self.add_request(base + index, prompts[index], params)
            for event in self.step():
                if event.seq_id - base in outputs and event.finish_reason != "stop":
                    outputs[event.seq_id - base].append(event.token_id)
        return [outputs[i] for i in range(len(prompts))]
