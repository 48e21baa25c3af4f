"""Limits of the OpenAI server that both the server's options and the app read (no imports: cheap for either)."""

DEFAULT_MAX_REQUEST_BYTES = 8 * 1024 * 1024  # generous: a 128k-token prompt sent as JSON token ids is about 1 MiB
INFLIGHT_REQUESTS = 4  # maximum-size bodies decoded and tokenized at once (default --max-inflight-bytes); more: 503
DEFAULT_MAX_INFLIGHT_BYTES = INFLIGHT_REQUESTS * DEFAULT_MAX_REQUEST_BYTES
