"""Errors the runtime reports as one clear line (no traceback) before exiting non-zero."""


class RuntimeUsageError(Exception):
    """Bad flags or a bad model directory: printed as one line, exit code 2."""


class WeightError(RuntimeUsageError):
    """A checkpoint tensor is missing, extra, mis-shaped, or its file is unreadable."""
