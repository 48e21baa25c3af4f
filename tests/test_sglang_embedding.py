"""SGLang's embedding mode (advisor/rules/sglang/embedding.py) through the faces a person uses: which models a release
switches to embedding mode by itself, what that changes, and --prefill-only-disable-kv-cache without --is-embedding."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from advisor.cli import main
from advisor.models import spec_from_config
from advisor.rules.sglang.embedding import NEEDS_EMBEDDING_ID, auto_embedding, chunked_prefill_off
from advisor.rules.sglang.releases import RELEASES

CONFIGS = Path(__file__).resolve().parent / "conformance" / "configs"
GEMMA2_EMBEDDING = json.loads((CONFIGS / "named-EmbeddingGemma2Model" / "config.json").read_text())
GEMMA3_TEXT = json.loads((CONFIGS / "named-Gemma3ForCausalLM" / "config.json").read_text())
# EmbeddingGemma: Gemma 3's text model with bidirectional attention (Gemma3TextModel)
EMBEDDING_GEMMA = {**GEMMA3_TEXT, "architectures": ["Gemma3TextModel"], "use_bidirectional_attention": True}
BERT = {"architectures": ["BertModel"], "model_type": "bert", "hidden_size": 768, "num_attention_heads": 12,
        "num_hidden_layers": 12, "intermediate_size": 3072, "vocab_size": 30522, "max_position_embeddings": 512,
        "torch_dtype": "float32"}  # fmt: skip


def spec(config: dict):
    return spec_from_config(config, model_id="t", path=None, origin="directory", where="config.json")


def model_dir(tmp_path: Path, config: dict) -> str:
    (tmp_path / "config.json").write_text(json.dumps(config))
    return str(tmp_path)


def plan(model: str, release: str, *extra: str) -> dict:
    args = ["--profile", "h100-sxm-8", "--model", model, "--engine", "sglang", "--engine-version", release]
    result = CliRunner().invoke(main, [*args, "check", "--json", "--tp", "1", *extra])
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)


def decision(p: dict, decision_id: str) -> dict:
    return next(d for d in p["decisions"] if d["id"] == decision_id)


@pytest.mark.parametrize("release", ["0.5.22", "0.5.23"])
def test_embedding_gemma2_takes_triton_without_chunked_prefill_from_v0_5_22(release, tmp_path):
    p = plan(model_dir(tmp_path, GEMMA2_EMBEDDING), release)
    assert decision(p, "attention_backend")["value"] == "triton"
    memory = decision(p, "memory_defaults")
    assert memory["value"]["chunked_prefill_size"] == -1
    assert any(note.startswith("embedding mode") for note in memory["notes"])


def test_embedding_gemma2_before_its_step_takes_the_default_path(tmp_path):
    p = plan(model_dir(tmp_path, GEMMA2_EMBEDDING), "0.5.21")  # not named by resolve_embedding_model_spec yet
    assert decision(p, "attention_backend")["value"] != "triton"
    assert decision(p, "memory_defaults")["value"]["chunked_prefill_size"] > 0


def test_embedding_gemma_is_keyed_on_the_config_from_v0_5_17():
    model, generative = spec(EMBEDDING_GEMMA), spec(GEMMA3_TEXT | {"use_bidirectional_attention": False})
    for release in RELEASES:
        on = release not in ("0.5.7", "0.5.8", "0.5.9", "0.5.10", "0.5.11", "0.5.12", "0.5.13", "0.5.14", "0.5.15",
                             "0.5.16")  # fmt: skip
        assert (auto_embedding(model, release) is not None) == on, release
        assert (chunked_prefill_off(model, release) is not None) == on, release
        assert auto_embedding(generative, release) is None and chunked_prefill_off(generative, release) is None


def test_an_embedding_list_architecture_switches_mode_but_keeps_chunked_prefill():
    bert = spec(BERT)
    assert auto_embedding(bert, "0.5.16") is None  # no embedding capability before v0.5.17
    for release in ("0.5.17", "0.5.20", "0.5.23"):
        assert auto_embedding(bert, release) is not None
        assert chunked_prefill_off(bert, release) is None
    # a classification architecture is checked before the list and never switched
    assert auto_embedding(spec({**BERT, "architectures": ["BertForSequenceClassification"]}), "0.5.23") is None


def test_is_embedding_given_is_embedding_mode(tmp_path):
    llama = {**BERT, "architectures": ["LlamaForCausalLM"], "model_type": "llama", "torch_dtype": "bfloat16"}
    model = model_dir(tmp_path, llama)
    assert not any(n.startswith("embedding mode") for n in decision(plan(model, "0.5.23"), "memory_defaults")["notes"])
    given = plan(model, "0.5.23", "--", "--is-embedding")
    assert any("--is-embedding given" in n for n in decision(given, "memory_defaults")["notes"])
    assert not [x for x in given["problems"] if x["severity"] == "error"]


@pytest.mark.parametrize("release", ["0.5.12", "0.5.17", "0.5.23"])
def test_prefill_only_disable_kv_cache_needs_is_embedding(release, tmp_path):
    # even for an architecture the release switches to embedding mode: the check runs before that switch
    model = model_dir(tmp_path, GEMMA2_EMBEDDING if release == "0.5.23" else BERT)
    refused = plan(model, release, "--", "--prefill-only-disable-kv-cache")
    assert NEEDS_EMBEDDING_ID in [x["id"] for x in refused["problems"] if x["severity"] == "error"]
    accepted = plan(model, release, "--", "--prefill-only-disable-kv-cache", "--is-embedding")
    assert NEEDS_EMBEDDING_ID not in [x["id"] for x in accepted["problems"]]


def test_launch_dry_run_refuses_prefill_only_without_is_embedding(tmp_path):
    model = model_dir(tmp_path, BERT)
    args = ["--profile", "h100-sxm-8", "--model", model, "--engine", "sglang", "--engine-version", "0.5.23"]
    refused = CliRunner().invoke(
        main, [*args, "launch", "--dry-run", "--tp", "1", "--", "--prefill-only-disable-kv-cache"]
    )
    assert refused.exit_code == 1 and "refuses --prefill-only-disable-kv-cache at start-up" in refused.output
