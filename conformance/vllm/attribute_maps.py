"""Write advisor/transformers_attribute_maps.json: transformers' ``attribute_map`` aliases of the config keys the
advisor reads, per model_type, from the transformers a vLLM release's environment pins.

transformers' ``PretrainedConfig.__setattr__`` / ``__getattribute__`` (configuration_utils.py) send a name in a config
class's ``attribute_map`` to the key it maps to, so GPT-2's ``n_head`` *is* its ``num_attention_heads`` and DBRX's
``max_seq_len`` its ``max_position_embeddings`` to every engine that reads the config through transformers.

    python -m conformance.vllm.attribute_maps 0.33.0
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conformance.vllm.env import pythonpath

OUT = Path(__file__).resolve().parents[2] / "advisor" / "transformers_attribute_maps.json"

# Run inside the release's interpreter path: prints {model_type: {canonical: alias}} for the keys models.py reads.
_READER = """
import json, sys
from transformers import AutoConfig
from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES
wanted = set(sys.argv[1].split(","))
out = {}
for model_type in sorted(CONFIG_MAPPING_NAMES):
    try:
        cls = type(AutoConfig.for_model(model_type))
    except Exception:
        continue
    aliases = {k: v for k, v in (getattr(cls, "attribute_map", None) or {}).items() if k in wanted and k != v}
    if aliases:
        out[model_type] = dict(sorted(aliases.items()))
print(json.dumps(out))
"""


def read(version: str, keys: tuple[str, ...]) -> dict[str, dict[str, str]]:
    env = {**os.environ, "PYTHONPATH": pythonpath(version), "TRANSFORMERS_VERBOSITY": "error"}
    done = subprocess.run([sys.executable, "-c", _READER, ",".join(keys)], env=env, capture_output=True, text=True,
                          timeout=600, check=True)  # fmt: skip
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str]) -> int:
    from advisor.models import ALIASED_KEYS

    if len(argv) != 1:
        print("usage: python -m conformance.vllm.attribute_maps X.Y.Z", file=sys.stderr)
        return 2
    version = argv[0]

    maps = read(version, ALIASED_KEYS)
    doc = {
        "about": "transformers' attribute_map aliases (canonical key -> the key a config.json may spell it with) per"
        f" model_type, for the keys advisor/models.py reads; read from vLLM {version}'s pinned transformers by"
        f" python -m conformance.vllm.attribute_maps {version}.",
        "release": version,
        "model_types": maps,
    }
    OUT.write_text(json.dumps(doc, indent=1, sort_keys=False) + "\n")
    print(f"{OUT}: {len(maps)} model types")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
