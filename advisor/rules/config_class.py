"""A config.json whose model_type no config class exists for: both engines load config.json through their own config
registry, else transformers' ``AutoConfig.from_pretrained``, which

- runs the checkpoint's own class (``auto_map``'s AutoConfig) only with trust_remote_code, and refuses with "... contains
  custom code which must be executed" where that is off and it has no class of the model_type;
- refuses a model_type it does not know and that no auto_map names ("Transformers does not recognize this
  architecture").

Which model types exist is read per release, with the transformers its pins give a fresh install (each engine's
config_defaults.json ``model_types``). A config.json without a model_type gets no finding (transformers then guesses
from the path), nor does a catalog entry.
"""

from __future__ import annotations

from collections.abc import Collection

from advisor.rules.engine import Problem


def no_config_class_problems(model, known: Collection[str] | None, trusted: bool, *, engine: str, release: str,
                             transformers: str, remote_id: str, unknown_id: str, source: str) -> list[Problem]:  # fmt: skip
    """The engine's start-up refusal of ``model`` (a ModelSpec) when its model_type is not in ``known``; nothing where
    the release's model types were not read (``known`` None or empty)."""
    # "" is a model_type too: transformers looks it up like any other and finds no class
    if model is None or model.path is None or model.model_type is None or not known or model.model_type in known:
        return []
    which = f"{engine} {release} or its transformers ({transformers})"
    if model.remote_config:
        if trusted:
            return []  # the checkpoint's own config class: the plan reads config.json as written
        return [Problem(
            remote_id, "error",
            f"model_type {model.model_type!r} has no config class in {which}, and config.json's auto_map names the"
            " checkpoint's own one, which transformers runs only with trust_remote_code: the engine stops at start-up"
            " ('contains custom code which must be executed')",
            "pass --trust-remote-code (it runs the checkpoint's Python code: trust its source), or use a release whose"
            f" transformers knows model_type {model.model_type!r}",
            f"{engine} v{release}, {source}",
        )]  # fmt: skip
    return [Problem(
        unknown_id, "error",
        f"model_type {model.model_type!r} has no config class in {which}, and config.json's auto_map names none of"
        " its own: the engine stops at start-up ('Transformers does not recognize this architecture')",
        f"use a release (and transformers) that knows model_type {model.model_type!r}, or correct config.json's"
        " model_type",
        f"{engine} v{release}, {source}",
    )]  # fmt: skip
