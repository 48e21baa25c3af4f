"""Incremental detokenization with stop strings.

Token ids arrive one at a time; text is released only once it cannot change any more: a trailing U+FFFD (an incomplete
UTF-8 sequence split across tokens) and any tail that could still grow into a stop string are held back. The text of
the whole completion is therefore exactly the concatenation of the deltas, cut before the first stop string.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

REPLACEMENT_CHAR = "\ufffd"


class TextStream:
    def __init__(self, decode: Callable[[list[int]], str], stop: Iterable[str] = ()) -> None:
        self._decode = decode
        self._stops = [s for s in stop if s]
        self._longest_stop = max((len(s) for s in self._stops), default=0)
        self._ids: list[int] = []
        self._text = ""
        self._emitted = 0  # characters of _text already released
        self.stopped = False  # a stop string was found; the caller should end the sequence

    @property
    def text(self) -> str:
        """Everything released so far."""
        return self._text[: self._emitted]

    def push(self, token_id: int) -> str:
        """Add one generated token; return the newly released text (possibly empty)."""
        if self.stopped:
            return ""
        self._ids.append(token_id)
        self._text = self._decode(self._ids)
        if self._stops and self._cut_at_stop():
            return self._release(len(self._text))
        return self._release(self._safe_end())

    def finish(self) -> str:
        """The sequence ended: release whatever was held back."""
        if self.stopped:
            return ""
        return self._release(len(self._text))

    def _cut_at_stop(self) -> bool:
        # A stop string can only start in the held-back tail or in the new text.
        start = max(0, self._emitted - self._longest_stop)
        hits = [i for i in (self._text.find(s, start) for s in self._stops) if i >= 0]
        if not hits:
            return False
        self._text = self._text[: min(hits)]
        self.stopped = True
        return True

    def _safe_end(self) -> int:
        end = len(self._text)
        if self._text.endswith(REPLACEMENT_CHAR):
            end -= 1
        for hold in range(min(self._longest_stop - 1, end), 0, -1):
            tail = self._text[end - hold : end]
            if any(s.startswith(tail) for s in self._stops):
                return end - hold
        return end

    def _release(self, end: int) -> str:
        if end <= self._emitted:
            return ""
        delta = self._text[self._emitted : end]
        self._emitted = end
        return delta
