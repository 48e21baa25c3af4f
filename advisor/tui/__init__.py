"""The interactive face of tp-advisor: a Textual app (the only part of `advisor` that imports textual)."""
