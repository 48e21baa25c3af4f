"""The inference engine: preallocated KV cache slots, batched prefill and decode, sampling.

CONTRACT (implemented by issue 6, used by `--mode generate|bench` and by the server of issue 8):

    @dataclass(frozen=True)
    class SamplingParams:
        max_tokens: int = 16
        temperature: float = 0.0          # 0 = greedy
        top_p: float = 1.0
        seed: int | None = None
        stop_token_ids: tuple[int, ...] = ()
        ignore_eos: bool = False

    @dataclass(frozen=True)
    class TokenEvent:
        seq_id: int
        token_id: int
        finished: bool
        finish_reason: str | None         # "stop" | "length" | None while running

    class Engine:
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
        def generate(self, prompts: list[list[int]], params: SamplingParams) -> list[list[int]]

Every rank makes the same calls in the same order (tensor parallelism); the sampled tokens are identical on every rank.
"""
