"""Tiny random-weight models of each family, made locally (no network), as
tests/interop/interop.py makes them (the official-encoder fixtures under
tests/interop/fixtures/ were made by that script from the same configs)."""
import json
import os
import shutil
import subprocess

import torch

FAMILIES = ["llama", "qwen2", "qwen3", "mistral", "gemma3", "phi3", "qwen3moe"]

SMALL = dict(hidden_size=64, intermediate_size=160, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, head_dim=16, vocab_size=512, max_position_embeddings=256)

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FIXTURES = os.path.join(REPO, "tests", "interop", "fixtures")
# Its folders that hold no language model of the interop suite's families.
OTHER_FIXTURES = ("flux", "wan", "gemma3-vision")


def llm_config(family, **overrides):
    from transformers import AutoConfig
    kind, extra = {
        "llama": ("llama", dict(tie_word_embeddings=False)),
        "qwen2": ("qwen2", dict(tie_word_embeddings=False)),
        "qwen3": ("qwen3", dict(tie_word_embeddings=True)),
        "mistral": ("mistral", dict(tie_word_embeddings=False)),
        "gemma3": ("gemma3_text", dict(tie_word_embeddings=True, sliding_window=32,
                                       query_pre_attn_scalar=16)),
        "phi3": ("phi3", dict(tie_word_embeddings=False, pad_token_id=0)),
        "qwen3moe": ("qwen3_moe", dict(tie_word_embeddings=False, num_experts=4,
                                       num_experts_per_tok=2, moe_intermediate_size=48,
                                       decoder_sparse_step=1)),
    }[family]
    return AutoConfig.for_model(kind, **{**SMALL, **extra, **overrides})


def randomize_small_params(model, seed):
    # Biases and norms start as zeros and ones: random values catch a tensor left unset.
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for _, p in model.named_parameters():
            if p.dim() == 1:
                p.add_((torch.randn(p.shape, generator=g) * 0.05).to(p.dtype))


def build_llm(family, seed=None, **overrides):
    """The family's tiny model (SMALL, with `overrides` of its config), random weights."""
    from transformers import AutoModelForCausalLM
    seed = sum(map(ord, family)) if seed is None else seed
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(llm_config(family, **overrides),
                                             dtype=torch.bfloat16)
    randomize_small_params(model, seed)
    return model.eval()


def build_gemma3_vision(seed=303):
    """A tiny Gemma 3 with its SigLIP vision tower (Gemma3ForConditionalGeneration), random
    weights. save_pretrained writes it under the names of Google's checkpoints
    ("language_model.model.layers.0...", "vision_tower...."), which transformers renames at
    load ("model.language_model.layers.0..."). The tower keeps SigLIP's attention-pooling head
    (an nn.MultiheadAttention, whose forward reads its out_proj's weight itself)."""
    from transformers import Gemma3Config, Gemma3ForConditionalGeneration
    text = dict(SMALL, model_type="gemma3_text", sliding_window=32, query_pre_attn_scalar=16)
    vision = dict(model_type="siglip_vision_model", hidden_size=32, intermediate_size=64,
                  num_hidden_layers=2, num_attention_heads=2, image_size=32, patch_size=8,
                  vision_use_head=True)
    config = Gemma3Config(text_config=text, vision_config=vision, mm_tokens_per_image=4,
                          image_token_index=500, boi_token_index=501, eoi_token_index=502)
    torch.manual_seed(seed)
    model = Gemma3ForConditionalGeneration(config).to(torch.bfloat16)
    randomize_small_params(model, seed)
    return model.eval()


def save_gemma3_vision(path, layout="transformers", seed=303):
    """build_gemma3_vision's checkpoint in `path`: "transformers" as transformers 5's
    save_pretrained writes it (the vision tower's weights "vision_tower.encoder..."), or
    "google" as Google's Gemma 3 checkpoints on the Hub name them
    ("vision_tower.vision_model.encoder...", the layout vLLM's Gemma 3 reads)."""
    from safetensors.torch import load_file, save_file
    build_gemma3_vision(seed).save_pretrained(path)
    if layout == "google":
        file = os.path.join(path, "model.safetensors")
        tensors = load_file(file)
        save_file({("vision_tower.vision_model." + k[len("vision_tower."):]
                    if k.startswith("vision_tower.") else k): v for k, v in tensors.items()},
                  file, metadata={"format": "pt"})
    else:
        assert layout == "transformers", layout


def save_random_bf16(model, path, seed=1):
    """`model` with random weights in every parameter (N(0, 0.05), from `seed`), saved in `path`
    in BF16, as a published BF16 checkpoint stores it (its float32 modules too)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.05)
    model.to(torch.bfloat16).save_pretrained(path)


# A tiny Wan transformer (diffusers' WanTransformer3DModel), whose class keeps its time embedding
# in float32, and its inputs.
WAN_CONFIG = dict(patch_size=(1, 2, 2), num_attention_heads=2, attention_head_dim=12,
                  in_channels=4, out_channels=4, text_dim=16, freq_dim=16, ffn_dim=32,
                  num_layers=2, cross_attn_norm=True, qk_norm="rms_norm_across_heads",
                  rope_max_seq_len=32)


def wan_inputs(g):
    return dict(hidden_states=torch.randn(1, 4, 2, 8, 8, generator=g),
                timestep=torch.tensor([500]),
                encoder_hidden_states=torch.randn(1, 6, 16, generator=g))


# Tiny vision-language models of transformers (test_vision_language.py, test_vllm_plugin.py):
# {model_type: config arguments beside text_config and vision_config}.
VISION_LANGUAGE = {"llava": dict(image_token_index=500), "llava_next": dict(image_token_index=500),
                   "qwen2_vl": {}, "qwen2_5_vl": {}, "qwen3_vl": {},
                   "mistral3": dict(image_token_index=500), "paligemma": {}, "idefics3": {},
                   "smolvlm": {}, "internvl": {}, "llava_onevision": {}, "aya_vision": {},
                   "qwen3_vl_moe": {}, "llama4": {}, "gemma4": {}}
_VL_TEXT = dict(vocab_size=512, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                head_dim=16, tie_word_embeddings=False)
# One dict for every family's vision config: each reads the names it knows.
_VL_VISION = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                  image_size=32, patch_size=8, depth=2, embed_dim=32, num_heads=2,
                  hidden_act="gelu", out_hidden_size=64, out_hidden_dim=64,
                  fullatt_block_indexes=[1], num_channels=3, head_dim=16)
_MROPE = dict(rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                               "mrope_section": [2, 3, 3]})


def save_vision_language(path, family, seed=1):
    """The tiny `family` model (VISION_LANGUAGE) with random weights, saved in BF16 in `path`.
    KeyError or ValueError where this transformers lacks the family."""
    from transformers import AutoConfig, AutoModelForImageTextToText
    text = dict(_VL_TEXT, **(_MROPE if family in ("qwen2_vl", "qwen2_5_vl") else {}))
    config = AutoConfig.for_model(family, text_config=text, vision_config=dict(_VL_VISION),
                                  **VISION_LANGUAGE[family])
    torch.manual_seed(0)
    save_random_bf16(AutoModelForImageTextToText.from_config(config, dtype=torch.bfloat16), path,
                     seed)


ARCH_SMALL = dict(vocab_size=512, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                  head_dim=16, pad_token_id=0, bos_token_id=1, eos_token_id=2)
ARCH_SEQ2SEQ = dict(d_model=64, d_ff=96, d_kv=16, num_layers=2, num_decoder_layers=2,
                    num_heads=4, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
                    decoder_attention_heads=4, encoder_ffn_dim=96, decoder_ffn_dim=96,
                    decoder_start_token_id=0, num_mel_bins=16, max_source_positions=64,
                    max_target_positions=64, projection_dim=32, global_attn_every_n_layers=1)
ARCH_MOE = dict(num_local_experts=8, num_experts=8, num_experts_per_tok=2,
                shared_expert_intermediate_size=32, tie_word_embeddings=False)
_LINEAR_ATTENTION = dict(ARCH_MOE, layer_types=["linear_attention", "full_attention"],
                         linear_num_key_heads=2, linear_num_value_heads=4,
                         linear_key_head_dim=16, linear_value_head_dim=16,
                         moe_intermediate_size=32)
_ROUTED = dict(ARCH_MOE, n_routed_experts=8, n_shared_experts=1, moe_intermediate_size=32)

# transformers architectures beyond the interop suite's families (test_architectures.py):
# (model_type, class, config arguments beside ARCH_SMALL)
ARCHITECTURES = [
    ("t5", "T5EncoderModel", ARCH_SEQ2SEQ),
    ("t5", "T5EncoderModel", dict(ARCH_SEQ2SEQ, tie_word_embeddings=False)),
    ("umt5", "UMT5EncoderModel", dict(ARCH_SEQ2SEQ, tie_word_embeddings=False)),
    ("t5", "T5ForConditionalGeneration", ARCH_SEQ2SEQ),
    ("bart", "BartForConditionalGeneration", ARCH_SEQ2SEQ),
    ("whisper", "WhisperForConditionalGeneration", ARCH_SEQ2SEQ),
    ("bert", "BertModel", {}), ("xlm-roberta", "XLMRobertaModel", {}),
    ("modernbert", "ModernBertModel", ARCH_SEQ2SEQ),
    ("clip_text_model", "CLIPTextModel", ARCH_SEQ2SEQ),
    ("qwen3", "Qwen3Model", dict(tie_word_embeddings=True)),
    ("llama", "LlamaForSequenceClassification", {}),
    ("mixtral", "MixtralForCausalLM", ARCH_MOE), ("olmoe", "OlmoeForCausalLM", ARCH_MOE),
    ("granitemoe", "GraniteMoeForCausalLM", ARCH_MOE),
    ("phimoe", "PhimoeForCausalLM", ARCH_MOE),
    ("gpt_oss", "GptOssForCausalLM",
     dict(ARCH_MOE, layer_types=["sliding_attention", "full_attention"])),
    ("minimax", "MiniMaxForCausalLM", ARCH_MOE), ("falcon_h1", "FalconH1ForCausalLM", {}),
    ("lfm2", "Lfm2ForCausalLM", {}),
    ("gpt2", "GPT2LMHeadModel", dict(n_embd=64, n_layer=2, n_head=4)),
    # Phi as Phi-2 is made (MLP 4 x hidden wide, as many key/value heads as query heads):
    # vLLM's Phi reads neither intermediate_size nor num_key_value_heads
    ("gpt_neox", "GPTNeoXForCausalLM", {}),
    ("phi", "PhiForCausalLM", dict(intermediate_size=256, num_key_value_heads=4)),
    ("starcoder2", "Starcoder2ForCausalLM", {}), ("cohere", "CohereForCausalLM", {}),
    # experts without a gate (a fused up_proj [E, I, H] beside down_proj), Mamba mixers
    ("nemotron_h", "NemotronHForCausalLM", _ROUTED),
    # linear-attention hybrids with MoE (Qwen3-Next, Qwen3.5), Llama 4's MoE
    ("qwen3_next", "Qwen3NextForCausalLM", dict(_LINEAR_ATTENTION, decoder_sparse_step=1)),
    ("qwen3_5_moe_text", "Qwen3_5MoeForCausalLM", _LINEAR_ATTENTION),
    # Llama 4 routes each token to one expert, its router weight applied to the expert's input:
    # vLLM's CUDA MoE kernels serve that with one expert a token only
    ("llama4_text", "Llama4ForCausalLM",
     dict(ARCH_MOE, intermediate_size_mlp=96, num_experts_per_tok=1)),
    # a conversion rule for attention names (".norm." -> ".kv_norm.") that the final norm's
    # name also matches: transformers keeps that name, as df11 must
    ("deepseek_v4", "DeepseekV4ForCausalLM", _ROUTED),
]


def save_architecture(path, case, seed=1):
    """ARCHITECTURES' `case` with random weights, saved in BF16 in `path`."""
    import transformers
    from transformers import AutoConfig
    model_type, cls_name, extra = case
    config = AutoConfig.for_model(model_type, **{**ARCH_SMALL, **extra})
    torch.manual_seed(0)
    cls = getattr(transformers, cls_name)
    save_random_bf16(cls._from_config(config, dtype=torch.bfloat16), path, seed)


def gemma3_vision_inputs():
    """input_ids with one image's 4 tokens between its begin and end tokens, and the image."""
    ids = torch.tensor([[2, 501, 500, 500, 500, 500, 502, 10, 20, 30, 40, 50]])
    g = torch.Generator().manual_seed(5)
    return dict(input_ids=ids, pixel_values=torch.randn(1, 3, 32, 32, generator=g).to(
        torch.bfloat16))


def llm_skeleton(config_dir):
    """A model built from config_dir's config.json, with weights the loader must replace."""
    from transformers import AutoConfig, AutoModelForCausalLM
    torch.manual_seed(12345)
    config = AutoConfig.from_pretrained(config_dir)
    return AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16).eval()


def half_budget(model) -> int:
    """A GPU memory budget (bytes) for device_map="auto" that holds about half of the tiny
    llama's coded weights: 0.6 of its BF16 size, as the coded model is ~0.68 of it."""
    return int(0.6 * sum(p.numel() * p.element_size() for p in model.parameters()))


def llm_inputs(vocab, batch, length=16, seed=7):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(1, vocab, (batch, length), generator=g)


def flux_config():
    return dict(patch_size=1, in_channels=16, num_layers=1, num_single_layers=2,
                attention_head_dim=16, num_attention_heads=2, joint_attention_dim=32,
                pooled_projection_dim=32, guidance_embeds=True, axes_dims_rope=(4, 6, 6))


def flux_inputs(device, batch=2):
    g = torch.Generator().manual_seed(3)
    c = flux_config()
    img, txt = 16, 8
    inputs = dict(
        hidden_states=torch.randn(batch, img, c["in_channels"], generator=g),
        encoder_hidden_states=torch.randn(batch, txt, c["joint_attention_dim"], generator=g),
        pooled_projections=torch.randn(batch, c["pooled_projection_dim"], generator=g),
        timestep=torch.full((batch,), 0.5), guidance=torch.full((batch,), 3.5),
        img_ids=torch.randint(0, 4, (img, 3), generator=g).float(),
        txt_ids=torch.zeros(txt, 3))
    return {k: (v.to(device, torch.bfloat16) if v.is_floating_point() and "ids" not in k
                else v.to(device)) for k, v in inputs.items()}


def flux_skeleton():
    from diffusers import FluxTransformer2DModel
    torch.manual_seed(999)  # weights the loader must replace
    return FluxTransformer2DModel(**flux_config()).to(torch.bfloat16).eval()


def df11_cli():
    """The df11 tool: $DF11_CLI, else the build tree's."""
    path = os.environ.get("DF11_CLI") or os.path.join(REPO, "build", "cli", "df11")
    if not os.path.exists(path):
        raise FileNotFoundError(f"df11 tool not found at {path}: build it or set DF11_CLI")
    return path


def df11_compress(src, out, *flags):
    shutil.rmtree(out, ignore_errors=True)
    proc = subprocess.run([df11_cli(), "compress", src, "-o", out, "-q", *flags],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


def llama_folders(work, **overrides):
    """The tiny Llama (`overrides` of its config: num_hidden_layers=32, ...) saved in BF16 under
    work/bf16 and compressed into work/df11: (bf16_dir, df11_dir)."""
    bf16_dir, df11_dir = os.path.join(work, "bf16"), os.path.join(work, "df11")
    build_llm("llama", **overrides).save_pretrained(bf16_dir)
    df11_compress(bf16_dir, df11_dir)
    return bf16_dir, df11_dir


def tree_sha256(folder):
    """sha256 of every file under `folder`, by relative path."""
    import hashlib
    out = {}
    for root, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(root, name)
            with open(path, "rb") as f:
                out[os.path.relpath(path, folder)] = hashlib.sha256(f.read()).hexdigest()
    return out


def tensor_span(path, name):
    """(file offset, bytes) of tensor `name`'s data in a safetensors file."""
    import json
    import struct
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
    begin, end = header[name]["data_offsets"]
    return 8 + n + begin, end - begin


def corrupt_copy(src, dst, tensor, how):
    """A copy of folder `src` at `dst` with `how(bytearray)` applied to tensor's bytes (the
    tensor in the first shard, or in the shard whose header lists it)."""
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst)
    shards = [os.path.join(dst, f) for f in sorted(os.listdir(dst)) if f.endswith(".safetensors")]
    shard = next((p for p in shards if tensor in safetensors_names(p)), shards[0])
    at, size = tensor_span(shard, tensor)
    with open(shard, "r+b") as f:
        f.seek(at)
        data = bytearray(f.read(size))
        how(data)
        f.seek(at)
        f.write(data)
    return dst


def safetensors_names(path):
    """The tensor names in a safetensors file's header."""
    import json
    import struct
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        return set(json.loads(f.read(n))) - {"__metadata__"}


def bump_last_output_position(data):
    """The last output position one more than the group's weight count (spec 3.2)."""
    data[-4] = (data[-4] + 1) % 256


def saved_tensors(folder):
    """Every tensor of a folder's .safetensors files, by name."""
    from safetensors import safe_open
    out = {}
    for name in sorted(os.listdir(folder)):
        if name.endswith(".safetensors"):
            with safe_open(os.path.join(folder, name), "pt") as f:
                for key in f.keys():
                    out[key] = f.get_tensor(key)
    return out


# A coded group's stored tensors, each named GROUP.PART (spec/DF11.md 3.2).
CODED_PARTS = ("luts", "encoded_exponent", "sign_mantissa", "output_positions", "gaps",
               "split_positions")


def split_groups(folder):
    """The coded groups of a saved folder whose stored tensors its index maps to more than one
    shard (spec/DF11.md 3.2: found by their `.encoded_exponent`)."""
    with open(os.path.join(folder, next(f for f in os.listdir(folder)
                                        if f.endswith(".safetensors.index.json")))) as f:
        weight_map = json.load(f)["weight_map"]
    groups = [name[:-len(".encoded_exponent")] for name in weight_map
              if name.endswith(".encoded_exponent")]
    return [g for g in groups if len({weight_map[f"{g}.{p}"] for p in CODED_PARTS}) > 1]


def llm_folders(work, family):
    """(BF16 folder, df11 folder) of the family's tiny model under `work` (a pathlib.Path),
    made by the first caller: save_pretrained, then `df11 compress`."""
    bf16_dir, df11_dir = str(work / family / "bf16"), str(work / family / "df11")
    if not os.path.isdir(df11_dir):
        build_llm(family).save_pretrained(bf16_dir)
        df11_compress(bf16_dir, df11_dir)
    return bf16_dir, df11_dir


def bf16_llm(path, device="cpu"):
    """The BF16 model of a folder as transformers loads it, on `device`, in eval mode."""
    from transformers import AutoModelForCausalLM
    return AutoModelForCausalLM.from_pretrained(path, dtype=torch.bfloat16).to(device).eval()
