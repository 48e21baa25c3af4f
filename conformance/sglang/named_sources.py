"""Where the named grid's configs come from when transformers has no config class for the architecture (issue 31).

Each entry says how its ``tests/conformance/configs/named-<Arch>/config.json`` is written, in this order of preference:

- ``("transformers", model_type, keys)``: transformers' own config class for a model_type it knows under another class
  name (``AutoConfig.for_model``), ``keys`` set on top;
- ``("sglang", "module:Class", keys)``: the release's own config class (``sglang/srt/configs/<module>.py``, the classes
  SGLang ships for remote-code families), instantiated with its defaults inside the release's venv;
- ``("rename", base, keys)``: a draft / variant checkpoint (NextN, MTP, Eagle3, reward and classification heads) is its
  base family's config with ``architectures`` set to the variant's name; ``base`` is another folder of
  tests/conformance/configs/ (written first);
- ``("published", keys, where)``: the fields a public checkpoint's config.json holds, as a public source repeats them.

A checkpoint that ships its config class as remote code carries ``auto_map``; the conformance runner then stands in a
plain config class for that model_type (what ``--trust-remote-code`` would load: the file's keys as attributes).
"""

from __future__ import annotations


def remote(config_class: str) -> dict:
    """The ``auto_map`` a checkpoint with its own configuration file carries."""
    return {"auto_map": {"AutoConfig": f"configuration.{config_class}"}}


QWEN25_15B = {"hidden_size": 1536, "intermediate_size": 8960, "num_hidden_layers": 28, "num_attention_heads": 12,
              "num_key_value_heads": 2, "max_position_embeddings": 32768, "rope_theta": 1000000.0, "rms_norm_eps": 1e-6,
              "hidden_act": "silu", "vocab_size": 151936}  # fmt: skip
# DeepSeek's yarn rope scaling in V3's form (factor 16 over V4's 65536 positions: assumed)
V4_ROPE = {"type": "yarn", "rope_type": "yarn", "factor": 16, "original_max_position_embeddings": 65536,
           "beta_fast": 32, "beta_slow": 1, "mscale": 1.0, "mscale_all_dim": 1.0}  # fmt: skip
V4 = {"rope_scaling": V4_ROPE, "sliding_window": 128}  # the window its window_size field gives

# the class's default of 0 key/value heads is no checkpoint's: Ling 2.0's attention has 4
LING_KV = {"num_key_value_heads": 4}

SOURCES: dict[str, tuple] = {
    # -- transformers knows the model_type under another class name -------------------------------------------------
    "Qwen2ForCausalLM": ("transformers", "qwen2", {}),
    "Olmo3ForCausalLM": ("transformers", "olmo3", {}),
    "Phi4MMForCausalLM": ("transformers", "phi4_multimodal", {}),
    "PixtralForConditionalGeneration": ("transformers", "llava", {"vision_config": {"model_type": "pixtral"},
                                                                 "text_config": {"model_type": "mistral"}}),
    "QuantMixtralForCausalLM": ("transformers", "mixtral", {}),
    "ExaoneMoEForCausalLM": ("transformers", "exaone_moe", {}),
    "GlmImageForConditionalGeneration": ("transformers", "glm_image", {}),
    "LightOnOCRForConditionalGeneration": ("transformers", "lighton_ocr", {}),
    "InternS1ForConditionalGeneration": ("transformers", "internvl", {"text_config": {"model_type": "qwen3_moe"}}),
    "InternS1ProForConditionalGeneration": ("transformers", "internvl", {"text_config": {"model_type": "qwen3_moe"}}),
    "Sarashina2VisionForCausalLM": ("transformers", "qwen2_vl", {}),
    "MossVLForConditionalGeneration": ("transformers", "qwen3_vl", {}),
    "MossVLForCausalLM": ("transformers", "qwen3_vl", {}),
    # -- the release's own config classes ---------------------------------------------------------------------------
    "BailingMM2NativeForConditionalGeneration": ("sglang", "bailing_moe_v2:BailingMM2Config", {}),
    "BailingMMNativeForConditionalGeneration": ("sglang", "bailing_moe_v2:BailingMM2Config", {}),
    "BailingMoeV2ForCausalLM": ("sglang", "bailing_moe_v2:BailingMoeV2Config", LING_KV),
    "BailingMoeForCausalLM": ("sglang", "bailing_moe_v2:BailingMoeV2Config", LING_KV),
    "LLaDA2MoeModelLM": ("sglang", "bailing_moe_v2:BailingMoeV2Config", LING_KV),
    "BailingMoELinearForCausalLM": ("sglang", "bailing_hybrid:BailingHybridConfig", {}),
    "BailingMoeV2_5ForCausalLM": ("sglang", "bailing_hybrid:BailingHybridConfig", {}),
    "BailingMoeV3ForCausalLM": ("sglang", "bailing_hybrid:BailingHybridConfig", {}),
    "BailingMoeV3VLForConditionalGeneration": ("sglang", "bailing_hybrid:BailingMoeV3VLConfig", {}),
    "Cosmos3ForConditionalGeneration": ("sglang", "cosmos3:Cosmos3Config", {}),
    "DeepseekOCRForCausalLM": ("sglang", "deepseek_ocr:DeepseekVLV2Config", {}),
    "DeepseekVL2ForCausalLM": ("sglang", "deepseekvl2:DeepseekVL2Config", {}),
    "DotsOCRForCausalLM": ("sglang", "dots_ocr:DotsOCRConfig", {}),
    "DotsVLMForCausalLM": ("sglang", "dots_vlm:DotsVLMConfig", {}),
    "GigaChat35ForCausalLM": ("sglang", "gigachat35:GigaChat35Config", {}),
    "IQuestQ1ForCausalLM": ("sglang", "iquest_q1:IQuestQ1Config", {}),
    "IQuestQ1MTP": ("sglang", "iquest_q1:IQuestQ1MTPConfig", {}),
    "IQuestLoopCoderForCausalLM": ("sglang", "iquest_q1:IQuestQ1Config", {}),
    "InternLM2ForCausalLM": ("sglang", "internvl:InternLM2Config", remote("InternLM2Config")),
    "InternS2MobiusForConditionalGeneration": ("sglang", "interns2_mobius:InternS2MobiusConfig", {}),
    "InternS2PreviewForConditionalGeneration": ("sglang", "interns2preview:InternS2PreviewConfig", {}),
    "InternVLChatModel": ("sglang", "internvl:InternVLChatConfig", {}),
    # the class leaves the sizes unset; Jet-Nemotron-2B is built on Qwen2.5-1.5B, whose sizes these are
    "JetNemotronForCausalLM": ("sglang", "jet_nemotron:JetNemotronConfig", QWEN25_15B),
    "JetVLMForConditionalGeneration": ("sglang", "jet_vlm:JetVLMConfig", {"text_config": QWEN25_15B}),
    "KimiK3ForConditionalGeneration": ("sglang", "kimi_k3:KimiK3Config", {}),
    "KimiVLForConditionalGeneration": ("sglang", "kimi_vl:KimiVLConfig", {}),
    "LocateAnythingForConditionalGeneration": ("sglang", "locate_anything:LocateAnythingConfig", {}),
    "MiniCPMSALAForCausalLM": ("sglang", "minicpm:MiniCPMHybridConfig", {}),
    "MultiModalityCausalLM": ("sglang", "janus_pro:MultiModalityConfig", {}),
    "MuseGlimmerForCausalLM": ("sglang", "muse_glimmer:MuseGlimmerAssistantConfig", {}),
    "NanbeigeForCausalLM": ("sglang", "nanbeige:NanbeigeConfig", {}),
    "NemotronH_Nano_VL_V2": ("sglang", "nano_nemotron_vl:NemotronH_Nano_VL_V2_Config", {}),
    "NemotronH_Nano_Omni_Reasoning_V3": ("sglang", "nano_nemotron_vl:NemotronH_Nano_Omni_Reasoning_V3_Config", {}),
    "POINTSV15ChatModel": ("sglang", "points_v15_chat:POINTSV15ChatConfig", {}),
    "Step3VLForConditionalGeneration": ("sglang", "step3_vl:Step3VLConfig", {}),
    "StepVLForConditionalGeneration": ("sglang", "step3_vl:Step3VLConfig", {}),
    # the class leaves layer_types unset: one full-attention layer in four, a 512-token window (assumed, Step 3.5's form)
    "Step3p5ForCausalLM": ("sglang", "step3p5:Step3p5Config", {
        "layer_types": ["full_attention" if i % 4 == 0 else "sliding_attention" for i in range(45)],
        "sliding_window": 512}),
    "UnlimitedOCRForCausalLM": ("sglang", "unlimited_ocr:UnlimitedVLConfig", {}),
    "HYV4ForCausalLMNextN": ("sglang", "hy_v4:HYV4Config", {}),
    "Qwen4ExpForCausalLMMTP": ("sglang", "qwen4_exp:Qwen4ExpConfig", {}),
    "LongcatFlashForCausalLMNextN": ("sglang", "longcat_flash:LongcatFlashConfig", {}),
    "LongcatFlashNgramForCausalLM": ("sglang", "longcat_flash:LongcatFlashConfig", {}),
    "KimiK3LinearForCausalLM": ("rename", "named-KimiLinearForCausalLM", {}),
    "DeepseekV41ForCausalLM": ("sglang", "deepseek_v4:DeepSeekV4Config", {**V4, "model_type": "deepseek_v41"}),
    "DeepseekV4ForCausalLMNextN": ("sglang", "deepseek_v4:DeepSeekV4Config", V4),
    "DeepseekV4ForCausalLMDSpark": ("sglang", "deepseek_v4:DeepSeekV4Config", V4),
    "NemotronHPuzzleForCausalLM": ("rename", "nemotron-h-56b", {"model_type": "nemotron_h_puzzle"}),
    # -- draft and variant checkpoints: the base family's config under the variant's name --------------------------
    "BailingMoeForCausalLMNextN": ("rename", "named-BailingMoeForCausalLM", {}),
    "DeepseekV3ForCausalLMNextN": ("rename", "deepseek-v3", {}),
    "MistralLarge3ForCausalLM": ("rename", "deepseek-v3", {}),
    "MistralLarge3ForCausalLMEagle": ("rename", "deepseek-v3", {}),
    "SarvamMLAForCausalLM": ("rename", "deepseek-v3", {}),
    "Eagle3DeepseekV2ForCausalLM": ("rename", "deepseek-v3", {"num_hidden_layers": 1}),  # one MLA layer
    "Ernie4_5_MoeForCausalLMMTP": ("rename", "named-Ernie4_5_MoeForCausalLM", {}),
    "ExaoneMoEForCausalLMMTP": ("rename", "named-ExaoneMoEForCausalLM", {}),
    "GigaChat35ForCausalLMNextN": ("rename", "named-GigaChat35ForCausalLM", {}),
    "Glm4MoeForCausalLMNextN": ("rename", "glm-4.5", {}),
    "Glm4MoeLiteForCausalLMNextN": ("rename", "named-Glm4MoeLiteForCausalLM", {}),
    "Glm5NextForConditionalGenerationNextN": ("rename", "named-Glm5NextForConditionalGeneration", {}),
    "GlmMoeDsaForCausalLMNextN": ("rename", "glm-5", {}),
    "GlmOcrForConditionalGenerationNextN": ("rename", "named-GlmOcrForConditionalGeneration", {}),
    "Dots3NoteForCausalLMNextN": ("rename", "named-Dots3NoteForCausalLM", {}),
    "HYV3ForCausalLMNextN": ("rename", "named-HYV3ForCausalLM", {}),
    "InklingForConditionalGenerationMTP": ("rename", "named-InklingForConditionalGeneration", {}),
    "InternLM2ForRewardModel": ("rename", "named-InternLM2ForCausalLM", {}),
    "KimiK25ForConditionalGeneration": ("rename", "kimi-k2.5", {}),
    "LlamaForSequenceClassificationWithNormal_Weights": ("rename", "llama-3.1-8b", {}),
    "MindSporeForCausalLM": ("rename", "qwen3-32b", {}),
    "MiMoV2ForCausalLM": ("rename", "named-MiMoV2FlashForCausalLM", {}),
    "MiMoV2MTP": ("rename", "named-MiMoV2FlashForCausalLM", {}),
    "MiMoV2ASRForCausalLM": ("rename", "named-MiMoV2FlashForCausalLM", {}),
    "MiniMaxM3SparseForCausalLM": ("rename", "named-MiniMaxM3SparseForConditionalGeneration", {}),
    "NemotronHForCausalLMMTP": ("rename", "nemotron-h-56b", {}),
    "Qwen2ForRewardModel": ("rename", "named-Qwen2ForCausalLM", {}),
    "Qwen3ForRewardModel": ("rename", "qwen3-32b", {}),
    "Qwen3MoeForCausalLMMTP": ("rename", "qwen3-30b-a3b", {}),
    "Qwen3NextForCausalLMMTP": ("rename", "qwen3-next-80b-a3b", {}),
    "Qwen3_5ForCausalLMMTP": ("rename", "named-Qwen3_5ForCausalLM", {}),
    "SDARForCausalLM": ("rename", "qwen3-32b", {}),
    "SDARMoeForCausalLM": ("rename", "qwen3-30b-a3b", {}),
    "Step3p5MTP": ("rename", "named-Step3p5ForCausalLM", {}),
    "LlavaLlamaForCausalLM": ("rename", "llama-3.1-8b", {"mm_vision_tower": "openai/clip-vit-large-patch14-336",
                                                         "mm_projector_type": "mlp2x_gelu"}),
    "LlavaMistralForCausalLM": ("rename", "named-MistralForCausalLM", {"mm_vision_tower": "openai/clip-vit-large-patch14-336",
                                                                     "mm_projector_type": "mlp2x_gelu"}),
    "LlavaQwenForCausalLM": ("rename", "named-Qwen2ForCausalLM", {"mm_vision_tower": "google/siglip-so400m-patch14-384",
                                                                "mm_projector_type": "mlp2x_gelu"}),
    "LlavaVidForCausalLM": ("rename", "named-Qwen2ForCausalLM", {"mm_vision_tower": "google/siglip-so400m-patch14-384",
                                                               "mm_projector_type": "mlp2x_gelu"}),
    "NVILAForConditionalGeneration": ("rename", "named-Qwen2ForCausalLM", {}),
    "NVILALiteForConditionalGeneration": ("rename", "named-Qwen2ForCausalLM", {}),
    "MiDashengLMModel": ("rename", "named-Qwen2ForCausalLM", {}),
    "MiniCPMV": ("rename", "named-Qwen2ForCausalLM", {"model_type": "minicpmv", **remote("MiniCPMVConfig")}),
    "MiniCPMO": ("rename", "named-Qwen2ForCausalLM", {"model_type": "minicpmo", **remote("MiniCPMOConfig")}),
    # -- public checkpoints' fields ---------------------------------------------------------------------------------
    "MiMoForCausalLM": ("published", {
        "model_type": "mimo", "hidden_size": 4096, "intermediate_size": 11008, "num_hidden_layers": 36,
        "num_attention_heads": 32, "num_key_value_heads": 8, "max_position_embeddings": 32768, "vocab_size": 151680,
        "rope_theta": 640000.0, "rms_norm_eps": 1e-5, "attention_bias": True, "num_nextn_predict_layers": 1,
        "hidden_act": "silu", "tie_word_embeddings": False, "torch_dtype": "bfloat16", **remote("MiMoConfig"),
    }, "XiaomiMiMo/MiMo-7B-Base's fields as Megatron-Bridge's MiMo test repeats them"),
    "Grok1ForCausalLM": ("published", {
        "model_type": "grok-1", "vocab_size": 131072, "hidden_size": 6144, "intermediate_size": 32768,
        "max_position_embeddings": 8192, "num_experts_per_tok": 2, "num_local_experts": 8, "num_attention_heads": 48,
        "num_key_value_heads": 8, "num_hidden_layers": 64, "head_dim": 128, "rms_norm_eps": 1e-5,
        "embedding_multiplier_scale": 78.38367176906169, "output_multiplier_scale": 0.5773502691896257,
        "torch_dtype": "bfloat16", **remote("Grok1Config"),
    }, "grok-1's published shape (314B: 64 layers, 48 heads, 8 experts, top 2)"),
    "Gemma4AssistantForCausalLM": ("rename", "named-Gemma4UnifiedAssistantForCausalLM", {}),
    # an embedding model of the Gemma family (EmbeddingGemma is built on Gemma 3's text model)
    "EmbeddingGemma2Model": ("rename", "named-Gemma3ForCausalLM", {}),
    # embedding models of a family (SGLang's bert.py, llama_embedding.py, lfm2.py): the family's config under the name
    "Contriever": ("rename", "named-BertModel", {}),  # a Contriever checkpoint is a BERT encoder
    "LlamaEmbeddingModel": ("rename", "named-LlamaForCausalLM", {}),
    "Lfm2BidirectionalModel": ("rename", "named-Lfm2ForCausalLM", {}),
    # SGLang's dspark_minimax.py builds this draft from MiniMax M3's attention and decoder layers
    "DSparkMiniMaxDraftModel": ("rename", "named-MiniMaxM3SparseForCausalLM", {}),
    "Grok1AForCausalLM": ("rename", "named-Grok1ForCausalLM", {}),
    "Grok1VForCausalLM": ("rename", "named-Grok1ForCausalLM", {}),
    "BaichuanForCausalLM": ("published", {
        "model_type": "baichuan", "hidden_size": 4096, "intermediate_size": 11008, "num_hidden_layers": 32,
        "num_attention_heads": 32, "model_max_length": 4096, "vocab_size": 125696, "rms_norm_eps": 1e-6,
        "hidden_act": "silu", "tie_word_embeddings": False, "torch_dtype": "bfloat16", **remote("BaichuanConfig"),
    }, "baichuan-inc/Baichuan2-7B-Chat's published shape (vLLM's test registry names that checkpoint)"),
    "MiniCPMForCausalLM": ("published", {
        "model_type": "minicpm", "hidden_size": 2304, "intermediate_size": 5760, "num_hidden_layers": 40,
        "num_attention_heads": 36, "num_key_value_heads": 36, "max_position_embeddings": 2048, "vocab_size": 122753,
        "scale_emb": 12, "dim_model_base": 256, "scale_depth": 1.4, "rms_norm_eps": 1e-5, "hidden_act": "silu",
        "tie_word_embeddings": True, "torch_dtype": "bfloat16", **remote("MiniCPMConfig"),
    }, "openbmb/MiniCPM-2B-sft-bf16's published shape (vLLM's test registry names that checkpoint)"),
    "LLaDAModelLM": ("published", {
        "model_type": "llada", "d_model": 4096, "n_heads": 32, "n_kv_heads": 32, "n_layers": 32,
        "mlp_hidden_size": 12288, "include_bias": False, "weight_tying": False, "vocab_size": 126464,
        # the standard names its config class answers for (properties over the OLMo-style ones)
        "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 32, "num_hidden_layers": 32,
        "intermediate_size": 12288, "max_position_embeddings": 4096,
        "embedding_size": 126464, "max_sequence_length": 4096, "rope_theta": 500000.0, **remote("LLaDAConfig"),
    }, "GSAI-ML/LLaDA-8B-Instruct's fields as a public checkpoint validator repeats them"),
}  # fmt: skip
