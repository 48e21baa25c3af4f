"""The architecture names each vLLM release's resolution and registry hold (conformance/vllm/architectures.py,
advisor/rules/vllm/architectures.json)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))  # conformance/ is a repo folder, not part of the wheel

from conformance.vllm import architectures as extractor  # noqa: E402

STORED = json.loads(extractor.OUT.read_text())["releases"]


def test_stored_releases_hold_the_registry_and_the_per_architecture_config_fixups():
    assert {"0.12.0", "0.33.0"} <= set(STORED)
    for names in STORED.values():
        registry = {n for n, places in names.items() if any(p.startswith(extractor.REGISTRY) for p in places)}
        assert "LlamaForCausalLM" in registry and "Qwen3MoeForCausalLM" in registry
        assert "model_executor/models/config.py:MODELS_CONFIG_MAP" in names["GptOssForCausalLM"]


def test_command_line_usage(capsys):
    assert extractor.main(["--help"]) == 0
    assert extractor.main([]) == 2
    assert extractor.main(["newest"]) == 2
    assert "not a release" in capsys.readouterr().err
