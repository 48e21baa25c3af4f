"""The InferenceEngine contract (slots, requests, steps, stop tokens, sampling), the demo model, the tokenizer, bench mode."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from runtime_models import PROMPTS, open_runtime, runtime_logits, save_tiny_model

from launcher.runtime import demo
from launcher.runtime.engine import InferenceEngine, SamplingParams, TokenEvent
from launcher.runtime.tokenizer import Tokenizer

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def qwen3_dir(tmp_path_factory) -> Path:
    return save_tiny_model("qwen3", tmp_path_factory.mktemp("engine") / "qwen3")


@pytest.fixture
def engine(qwen3_dir) -> InferenceEngine:
    return open_runtime(qwen3_dir, max_batch_size=3, max_model_len=40)


def greedy(n: int, **kw) -> SamplingParams:
    return SamplingParams(max_tokens=n, ignore_eos=True, **kw)


def test_request_validation_and_slots(engine):
    with pytest.raises(ValueError, match="empty"):
        engine.add_request(1, [], greedy(4))
    with pytest.raises(ValueError, match="exceeds max_model_len"):
        engine.add_request(1, [1] * 30, greedy(11))
    engine.add_request(1, [1] * 30, greedy(10))
    with pytest.raises(ValueError, match="already"):
        engine.add_request(1, [3], greedy(1))
    engine.add_request(2, [4, 5], greedy(3))
    engine.add_request(3, [6], greedy(3))
    assert engine.free_slots() == 0
    with pytest.raises(RuntimeError, match="no free KV-cache slot"):
        engine.add_request(4, [7], greedy(3))
    engine.abort(2)
    engine.abort(999)  # unknown ids are ignored
    assert engine.free_slots() == 1 and engine.has_work()


def test_steps_emit_one_token_per_sequence_and_free_slots(engine):
    engine.add_request(10, PROMPTS[0], greedy(3))
    first = engine.step()
    assert [(e.seq_id, e.finished) for e in first] == [(10, False)]
    engine.add_request(11, PROMPTS[1], greedy(1))  # joins while 10 is decoding
    second = engine.step()
    assert sorted((e.seq_id, e.finished, e.finish_reason) for e in second) == [(10, False, None), (11, True, "length")]
    third = engine.step()
    assert third == [TokenEvent(10, third[0].token_id, True, "length")]
    assert not engine.has_work() and engine.free_slots() == 3


def test_continuous_batching_gives_the_same_tokens_as_running_alone(engine):
    alone = [engine.generate([p], greedy(8))[0] for p in PROMPTS]
    engine.add_request(0, [9, 9, 9], greedy(2))  # occupies slot 0, so the next ones use non-consecutive slots
    engine.add_request(1, PROMPTS[0], greedy(8))
    engine.add_request(2, PROMPTS[1], greedy(8))
    engine.step()
    engine.abort(0)
    out = {1: [], 2: []}
    for event in engine.step() + [e for _ in range(8) for e in engine.step()]:
        out[event.seq_id].append(event.token_id)
    assert [out[1], out[2]] != [[], []]
    first_tokens = engine.generate(PROMPTS, greedy(1))
    assert [alone[0][0], alone[1][0]] == [t[0] for t in first_tokens]
    assert out[1] == alone[0][1:] and out[2] == alone[1][1:]


def test_stop_tokens_finish_with_stop_and_are_left_out(engine):
    expected = engine.generate([PROMPTS[0]], greedy(6))[0]
    stop = expected[2]
    engine.add_request(5, PROMPTS[0], SamplingParams(max_tokens=6, stop_token_ids=(stop,)))
    events = []
    while engine.has_work():
        events += engine.step()
    assert events[-1] == TokenEvent(5, stop, True, "stop")
    assert engine.generate([PROMPTS[0]], SamplingParams(max_tokens=6, stop_token_ids=(stop,)))[0] == expected[:2]


def test_eos_from_the_model_stops_unless_ignored(qwen3_dir):
    probe = open_runtime(qwen3_dir)
    first = probe.generate([PROMPTS[0]], greedy(1))[0][0]
    eng = InferenceEngine(probe.model, 2, 64, eos_token_ids=(first,))
    assert eng.generate([PROMPTS[0]], SamplingParams(max_tokens=4)) == [[]]
    assert len(eng.generate([PROMPTS[0]], greedy(4))[0]) == 4


def test_sampling_is_seeded_and_top_p_tiny_is_greedy(engine):
    hot = SamplingParams(max_tokens=12, temperature=1.5, seed=3, ignore_eos=True)
    a, b = engine.generate(PROMPTS, hot), engine.generate(PROMPTS, hot)
    assert a == b
    assert engine.generate(PROMPTS, SamplingParams(max_tokens=12, temperature=1.5, seed=4, ignore_eos=True)) != a
    nucleus = SamplingParams(max_tokens=8, temperature=1.0, top_p=1e-6, seed=1, ignore_eos=True)
    assert engine.generate(PROMPTS, nucleus) == engine.generate(PROMPTS, greedy(8))


def test_demo_model_is_a_real_qwen3_moe_checkpoint(tmp_path, monkeypatch):
    monkeypatch.setenv("TP_ADVISOR_CACHE", str(tmp_path))
    code = "from launcher.runtime.demo import ensure_demo_model; print(ensure_demo_model())"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    ranks = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=env) for _ in range(2)]
    paths = [rank.communicate(timeout=120)[0].strip() for rank in ranks]  # two "ranks" at once: written once
    assert paths[0] == paths[1] and [p.name for p in tmp_path.iterdir() if not p.name.endswith(".lock")] == [Path(paths[0]).name]
    path = Path(paths[0])
    config = json.loads((path / "config.json").read_text())
    assert {k: config[k] for k in ("hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
                                   "head_dim", "intermediate_size", "moe_intermediate_size", "num_experts",
                                   "num_experts_per_tok", "vocab_size", "tie_word_embeddings")} == {
        "hidden_size": 256, "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 32,
        "intermediate_size": 512, "moe_intermediate_size": 256, "num_experts": 8, "num_experts_per_tok": 2,
        "vocab_size": 384, "tie_word_embeddings": False}
    import transformers

    hf = transformers.AutoModelForCausalLM.from_pretrained(path, attn_implementation="eager").eval()
    ours = runtime_logits(open_runtime(path), PROMPTS)
    with torch.no_grad():
        for prompt, mine in zip(PROMPTS, ours, strict=True):
            torch.testing.assert_close(mine, hf(input_ids=torch.tensor([prompt])).logits[0], atol=2e-4, rtol=0)


def test_demo_tokenizer_bytes_specials_and_chat_template(tmp_path, monkeypatch):
    monkeypatch.setenv("TP_ADVISOR_CACHE", str(tmp_path))
    tok = Tokenizer.from_dir(demo.ensure_demo_model(), (258, 256))
    assert tok.encode("hé") == [104, 195, 169] and tok.decode([104, 195, 169]) == "hé"
    assert tok.encode("<|im_end|>") == [258] and set(tok.eos_token_ids) == {258, 256}
    assert tok.has_chat_template
    text = tok.apply_chat_template([{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}])
    assert text == "<|im_start|>system\nbe brief<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "tokenizer.json").write_text((demo.ensure_demo_model() / "tokenizer.json").read_text())
    plain = Tokenizer.from_dir(tmp_path / "plain")
    assert not plain.has_chat_template
    assert plain.apply_chat_template([{"role": "user", "content": "hi"}]) == "user: hi\nassistant:"


def test_encode_chat_adds_special_tokens_only_for_the_plain_format(tmp_path, monkeypatch):
    from tokenizers.processors import TemplateProcessing

    monkeypatch.setenv("TP_ADVISOR_CACHE", str(tmp_path))
    bos = 256  # <|endoftext|> in the byte tokenizer, added in front like Llama's BOS
    messages = [{"role": "user", "content": "hi"}]
    for name, keep_template in (("templated", True), ("plain", False)):
        tok = Tokenizer.from_dir(demo.ensure_demo_model())
        tok.backend.post_processor = TemplateProcessing(single="<|endoftext|> $A", special_tokens=[("<|endoftext|>", bos)])
        if not keep_template:
            tok.chat_template = None
        rendered = tok.apply_chat_template(messages)
        assert tok.encode_chat(messages) == tok.encode(rendered, add_special_tokens=not keep_template), name
        assert (tok.encode_chat(messages)[0] == bos) == (not keep_template), name


def test_generate_json_and_bench_compare_on_demo(tmp_path, monkeypatch, capsys):
    from launcher.runtime.worker import main

    monkeypatch.setenv("TP_ADVISOR_CACHE", str(tmp_path))
    monkeypatch.delenv("RANK", raising=False)
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    assert main(["--prompt", "hi", "--max-tokens", "5", "--json", "--ignore-eos", "--chat"]) == 0
    line = json.loads(capsys.readouterr().out.strip())
    assert line["prompt"] == "hi" and len(line["token_ids"]) == 5 and isinstance(line["text"], str)
    args = ["--mode", "bench", "--batch-size", "2", "--input-len", "16", "--output-len", "4", "--compare", "--json"]
    assert main([*args, "--allreduce", "flashinfer-fusion"]) == 0
    out = capsys.readouterr().out
    assert "both columns run torch" in out and "largest |logit difference|" in out
    summary = json.loads(out.strip().splitlines()[-1])
    assert summary["max_abs_logit_diff"] == 0.0
    for column in ("torch", "torch (again)"):
        assert summary[column]["decode_tokens_per_s"] > 0 and 0 <= summary[column]["allreduce_share"] <= 1


def test_generate_queues_more_prompts_than_slots(engine):
    prompts = [PROMPTS[0], PROMPTS[1], [3, 1, 4], [1, 5, 9, 2, 6], [5], PROMPTS[1][:2]]
    together = engine.generate(prompts, greedy(5))
    assert together == [engine.generate([p], greedy(5))[0] for p in prompts]
    assert engine.free_slots() == engine.max_batch_size and not engine.has_work()
