"""Write advisor/rules/vllm/config_defaults.json: per vLLM release, the model_types whose config class (from the
release's pinned transformers) keeps a config.json's ``text_config`` as a plain dict, which vLLM refuses.

vLLM's ``get_hf_text_config`` (vllm/transformers_utils/config.py) takes ``config.get_text_config()`` and raises "The
text_config extracted from the model config does not have `num_attention_heads` attribute" when that is not the config
itself and has no ``num_attention_heads``: a class with no text sub-config stores the key as a dict. Model types vLLM
registers its own config class for (``_CONFIG_REGISTRY``, same file) are left out: the table then says nothing.

    python -m conformance.vllm.config_defaults 0.33.0 [0.20.2 ...]
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

from conformance.vllm.env import pythonpath, release_dir

OUT = Path(__file__).resolve().parents[2] / "advisor" / "rules" / "vllm" / "config_defaults.json"

# Run on the release's path: prints the model types whose class leaves a text_config dict without num_attention_heads.
_READER = """
import json, sys
from transformers import AutoConfig
from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES
text = {"hidden_size": 256, "num_attention_heads": 4, "num_hidden_layers": 2, "vocab_size": 1000}
out = []
for model_type in sorted(CONFIG_MAPPING_NAMES):
    try:
        config = AutoConfig.for_model(model_type, text_config=dict(text))
        found = config.get_text_config()
    except Exception:
        continue
    if found is not config and not hasattr(found, "num_attention_heads"):
        out.append(model_type)
print(json.dumps(out))
"""


def vllm_config_registry(version: str) -> set[str]:
    """The model types of the release's _CONFIG_REGISTRY (keyword or dict keys), read with ast."""
    tree = ast.parse((release_dir(version) / "site" / "vllm" / "transformers_utils" / "config.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "_CONFIG_REGISTRY" for t in targets):
                value = node.value
                if isinstance(value, ast.Call):
                    keys = {k.arg for k in value.keywords if k.arg}
                    for arg in value.args:
                        if isinstance(arg, ast.Dict):
                            keys |= {k.value for k in arg.keys if isinstance(k, ast.Constant)}
                    return keys
                if isinstance(value, ast.Dict):
                    return {k.value for k in value.keys if isinstance(k, ast.Constant)}
    raise SystemExit(f"vllm {version}: no _CONFIG_REGISTRY in vllm/transformers_utils/config.py")


def read(version: str) -> list[str]:
    env = {**os.environ, "PYTHONPATH": pythonpath(version), "TRANSFORMERS_VERBOSITY": "error"}
    done = subprocess.run([sys.executable, "-c", _READER], env=env, capture_output=True, text=True, timeout=900,
                          check=True)  # fmt: skip
    own = vllm_config_registry(version)
    return sorted(set(json.loads(done.stdout.strip().splitlines()[-1])) - own)


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: python -m conformance.vllm.config_defaults X.Y.Z [X.Y.Z ...]", file=sys.stderr)
        return 2
    doc = json.loads(OUT.read_text()) if OUT.exists() else {}
    doc["about"] = (
        "Per vLLM release: text_config_dict, the model_types whose config class (the release's pinned transformers;"
        " types vLLM registers its own class for left out) keeps a config.json's text_config as a dict, so"
        " get_hf_text_config (vllm/transformers_utils/config.py) refuses the model. Written by python -m"
        " conformance.vllm.config_defaults X.Y.Z."
    )
    releases = doc.setdefault("releases", {})
    for version in argv:
        releases[version] = {"text_config_dict": read(version)}
        print(f"vllm {version}: {len(releases[version]['text_config_dict'])} model types keep text_config as a dict")
    doc["releases"] = dict(sorted(releases.items(), key=lambda kv: tuple(int(x) for x in kv[0].split("."))))
    OUT.write_text(json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
