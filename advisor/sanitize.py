"""One function that makes a string safe to show: what a machine, a file or a package says (GPU names, hostnames, package
versions, environment values, model ids, error texts) must never reach the terminal as escape sequences.

Used at the rendering boundary: the rich console of the CLI reports (advisor.report.make_console), the one-line `error:`
messages (advisor.cli), the JSON output (advisor.report.dumps) and the text the TUI shows (advisor.tui).
"""

from __future__ import annotations

import unicodedata


def _unsafe(char: str) -> bool:
    """C0/C1 controls and DEL (ESC starts every terminal sequence; U+009B is a one-character CSI), and the invisible
    format characters (bidi overrides such as U+202E, which reorder what the reader sees)."""
    return unicodedata.category(char) in ("Cc", "Cf", "Cs", "Co", "Cn") and char not in "\n\t"


def _escape(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def clean(text: str, *, ascii_only: bool = False, newlines: bool = True) -> str:
    """``text`` with every control or invisible format character shown as a visible escape (``\\x1b``, ``\\u202e``).

    ``newlines=False`` escapes line breaks and tabs too (for values that must stay on one line). ``ascii_only``: for
    plain output off a terminal, non-ASCII letters lose their accents ("é" -> "e", "…" -> "...") and what has no ASCII
    form becomes "?"."""
    if text.isascii() and text.isprintable():
        return text  # the common case, fast
    out = []
    for char in text:
        if char in "\n\t" and newlines:
            out.append(char)
        elif char in "\n\t" or _unsafe(char):
            out.append(_escape(char))
        elif ascii_only and not char.isascii():
            folded = unicodedata.normalize("NFKD", char).encode("ascii", "ignore").decode("ascii")
            out.append(folded if folded and folded.isprintable() else "?")
        else:
            out.append(char)
    return "".join(out)


def clean_json(text: str) -> str:
    """Serialized JSON with the characters :func:`clean` escapes written as JSON ``\\uXXXX`` escapes (json.dumps with
    ensure_ascii=False escapes C0 controls but leaves C1 controls and bidi overrides raw). The value is unchanged."""
    if text.isascii():
        return text  # json.dumps already escaped every ASCII control character
    out = []
    for char in text:
        if not char.isascii() and _unsafe(char):
            code = ord(char)
            if code >= 0x10000:  # a surrogate pair, as JSON spells characters beyond the BMP
                code -= 0x10000
                out.append(f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}")
            else:
                out.append(f"\\u{code:04x}")
        else:
            out.append(char)
    return "".join(out)
