"""Tokenizer from tokenizer.json (the `tokenizers` library) plus the chat template from tokenizer_config.json."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from tokenizers import Tokenizer as HFTokenizer

from launcher.runtime.errors import RuntimeUsageError
from launcher.runtime.modeldir import no_tokenizer_message

if TYPE_CHECKING:
    from jinja2 import Template

PLAIN_CHAT_FORMAT = "role: content lines, then 'assistant:'"  # used when the model ships no chat template


class Tokenizer:
    def __init__(self, backend: HFTokenizer, config: dict, eos_token_ids: tuple[int, ...]):
        self.backend = backend
        self.config = config
        self.eos_token_ids = eos_token_ids
        self.chat_template: str | None = config.get("chat_template") if isinstance(config.get("chat_template"), str) else None

    @classmethod
    def from_dir(cls, path: str | Path, extra_eos_ids: tuple[int, ...] = ()) -> Tokenizer:
        path = Path(path)
        file = path / "tokenizer.json"
        if not file.is_file():
            raise RuntimeUsageError(no_tokenizer_message(path))
        try:
            backend = HFTokenizer.from_file(str(file))
        except Exception as err:
            raise RuntimeUsageError(f"cannot read {file}: {err}") from None
        config: dict = {}
        config_file = path / "tokenizer_config.json"
        if config_file.is_file():
            try:
                config = json.loads(config_file.read_text())
            except (OSError, json.JSONDecodeError) as err:
                raise RuntimeUsageError(f"cannot read {config_file}: {err}") from None
        template_file = path / "chat_template.jinja"
        if "chat_template" not in config and template_file.is_file():
            config["chat_template"] = template_file.read_text()
        eos: list[int] = list(extra_eos_ids)
        eos_token = config.get("eos_token")
        if isinstance(eos_token, dict):
            eos_token = eos_token.get("content")
        if isinstance(eos_token, str):
            token_id = backend.token_to_id(eos_token)
            if token_id is not None and token_id not in eos:
                eos.append(token_id)
        return cls(backend, config, tuple(eos))

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        """Token ids; add_special_tokens adds what the tokenizer's post-processor adds (Llama's BOS). Text rendered
        by apply_chat_template already holds those tokens: encode it with add_special_tokens=False."""
        # encode_batch releases the GIL while it works (encode does not): a server thread tokenizing a long prompt
        # leaves the event loop free
        return self.backend.encode_batch([text], add_special_tokens=add_special_tokens)[0].ids

    def min_tokens(self, text: str) -> int:
        """A lower bound on len(encode(text)), costing no more than one pass over the text: lets the server refuse a
        prompt longer than the context before tokenizing it (tokenizing takes ~250 bytes of memory per character).

        Every piece of the text is covered by one token (or, with byte fallback or byte-level BPE, by several), and no
        token covers more than `_longest_token` of it, so tokens >= ceil(size / longest). Byte-level BPE (GPT-2, Llama
        3, Qwen): sizes in UTF-8 bytes, a vocabulary entry's characters each standing for one byte. Other tokenizers:
        sizes in characters; sound as long as the normalizer and pre-tokenizer only add or replace characters (the
        SentencePiece-style Prepend/Replace normalizers do) rather than delete them."""
        byte_level, longest = self._longest_token
        size = len(text.encode("utf-8", "surrogatepass")) if byte_level else len(text)
        return -(-size // longest)

    @functools.cached_property
    def _longest_token(self) -> tuple[bool, int]:
        """(byte_level, the most bytes (byte-level) or characters (others) one token can stand for in the text)."""
        try:
            spec = json.loads(self.backend.to_str())
        except Exception:
            spec = {}
        pre = spec.get("pre_tokenizer") or {}
        pres = pre.get("pretokenizers", [pre]) if pre.get("type") == "Sequence" else [pre]
        byte_level = spec.get("normalizer") is None and any(p.get("type") == "ByteLevel" for p in pres if p)
        vocab = self.backend.get_vocab(with_added_tokens=False)
        added = [t.content for t in self.backend.get_added_tokens_decoder().values()]
        longest = max((len(token) for token in vocab), default=1)  # byte-level: one character per byte
        longest = max([longest, *(len(t.encode("utf-8")) if byte_level else len(t) for t in added)])
        return byte_level, max(longest, 1)

    def decode(self, ids: list[int]) -> str:
        return self.backend.decode(list(ids), skip_special_tokens=True)

    @property
    def has_chat_template(self) -> bool:
        return self.chat_template is not None

    def apply_chat_template(self, messages: list[dict]) -> str:
        """The prompt text for a conversation, ending where the assistant's reply starts."""
        if self._compiled_chat_template is None:
            lines = [f"{m['role']}: {m['content']}" for m in messages]
            return "\n".join(lines) + "\nassistant:"
        specials = {k: v for k, v in self.config.items() if k.endswith("_token") and isinstance(v, str)}
        return self._compiled_chat_template.render(messages=messages, add_generation_prompt=True, **specials)

    def encode_chat(self, messages: list[dict], check: Callable[[str], None] | None = None) -> list[int]:
        """Token ids of the conversation's prompt. A template writes the special tokens (BOS) itself; the plain format
        gets them from the tokenizer. ``check`` sees the rendered text before it is tokenized (and may raise)."""
        text = self.apply_chat_template(messages)
        if check is not None:
            check(text)
        return self.encode(text, add_special_tokens=not self.has_chat_template)

    @functools.cached_property
    def _compiled_chat_template(self) -> Template | None:
        """The chat template parsed once (the server renders it per request), in jinja2's sandbox."""
        if self.chat_template is None:
            return None
        from jinja2.sandbox import ImmutableSandboxedEnvironment

        env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)

        def raise_exception(message: str) -> None:
            raise ValueError(message)

        env.globals["raise_exception"] = raise_exception
        return env.from_string(self.chat_template)
