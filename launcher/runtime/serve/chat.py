"""Chat messages -> prompt text.

With a chat template in the tokenizer files, the template renders the conversation (with the generation prompt).
Without one (the demo model, base models) the documented plain format is used:

    <role>: <content>\n        one line per message, in order (content kept as given, newlines included)
    assistant:                 the generation prompt, no trailing space
"""

from __future__ import annotations

from typing import Any


def has_chat_template(tokenizer: Any) -> bool:
    flag = getattr(tokenizer, "has_chat_template", False)
    return bool(flag() if callable(flag) else flag)


def plain_chat_prompt(messages: list[dict[str, str]]) -> str:
    lines = [f"{m['role']}: {m['content']}\n" for m in messages]
    return "".join(lines) + "assistant:"


def render_chat(tokenizer: Any, messages: list[dict[str, str]]) -> str:
    if has_chat_template(tokenizer):
        return tokenizer.apply_chat_template(messages)
    return plain_chat_prompt(messages)
