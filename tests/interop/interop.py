#!/usr/bin/env python3
"""df11 against the DFloat11 ecosystem, on a machine with a CUDA GPU (issue 9, item 7).

For tiny random-weight models of each family this script
  (a) compresses the saved BF16 model with `df11 compress`, loads the output with the
      official loader (dfloat11.DFloat11Model.from_pretrained, bfloat16_model= a model built
      from the config) and checks that its logits are torch.equal to the BF16 model's, and for
      the language models that greedy generation of 32 tokens at batch 1 and at batch 8 gives
      the BF16 model's tokens;
  (b) compresses the same model with the official encoder (dfloat11.compress_model), runs
      `df11 verify --against`, `df11 inspect` and `df11 decompress` on its output, loads the
      restored folder with transformers or diffusers and checks that its logits are
      torch.equal to the original's.
Every check prints one line "PASS|FAIL family step: detail"; the last line counts them. The
official encoder's outputs are left under OUT/<family>/official* (small: the CI fixtures
under tests/interop/fixtures/ were made this way).

Needs: torch with CUDA, transformers, the wheels dfloat11, dahuffman (and diffusers for flux).
Usage: interop.py --df11 PATH_TO_DF11 --work DIR [--families a,b] [--batch8-study]
       interop.py --df11 PATH --work DIR --probe-load FOLDER [--probe-load FOLDER ...]
       interop.py --single-file-fixtures tests/interop/fixtures [--families a,b]
         (CPU, no GPU: the official encoder's default output, see single_file_fixtures)
       interop.py --module-files-fixtures tests/interop/fixtures [--families a,b]
         (CPU, no GPU: its save_single_file=False output, see single_file_fixtures)
       interop.py --multimodal-fixtures tests/interop/fixtures
         (CPU, no GPU: both outputs for Gemma 3 with its vision tower, see multimodal_fixtures)
       interop.py --diffusers-fixtures tests/interop/fixtures
         (CPU, no GPU: the save_single_file=False output for FLUX and Wan, see diffusers_fixtures)
"""
import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import traceback
import types

import torch

# dfloat11 0.5.0 finds its PTX through pkg_resources, which new setuptools no longer ships.
try:
    import pkg_resources  # noqa: F401
except ImportError:
    shim = types.ModuleType("pkg_resources")

    def _resource_filename(package, name):
        return os.path.join(os.path.dirname(importlib.util.find_spec(package).origin), name)

    shim.resource_filename = _resource_filename
    sys.modules["pkg_resources"] = shim

RESULTS = []


def record(ok, family, step, detail=""):
    RESULTS.append((ok, family, step))
    print(f"{'PASS' if ok else 'FAIL'} {family} {step}: {detail}", flush=True)


def run_df11(df11, *args):
    proc = subprocess.run([df11, *args], capture_output=True, text=True)
    text = (proc.stdout + proc.stderr).strip()
    print(f"$ df11 {' '.join(args)}  -> exit {proc.returncode}\n{text}", flush=True)
    return proc.returncode, text


LLM_MEMBERS = ["self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
               "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"]

# The official encoder's pattern_dict for each family, as the DFloat11 hub's models use them.
OFFICIAL_PATTERNS = {
    "llm": {"lm_head": [], "model.embed_tokens": [], r"model\.layers\.\d+": LLM_MEMBERS},
    "phi3": {"lm_head": [], "model.embed_tokens": [],
             r"model\.layers\.\d+": ["self_attn.qkv_proj", "self_attn.o_proj",
                                     "mlp.gate_up_proj", "mlp.down_proj"]},
    # MoE: see moe_official_patterns() (the experts' form depends on the transformers version).
    "moe": None,
    "flux": {
        r"transformer_blocks\.\d+": [
            "norm1.linear", "norm1_context.linear", "attn.to_q", "attn.to_k", "attn.to_v",
            "attn.add_k_proj", "attn.add_v_proj", "attn.add_q_proj", "attn.to_out.0",
            "attn.to_add_out", "ff.net.0.proj", "ff.net.2", "ff_context.net.0.proj",
            "ff_context.net.2"],
        r"single_transformer_blocks\.\d+": [
            "norm.linear", "proj_mlp", "attn.to_q", "attn.to_k", "attn.to_v", "proj_out"],
    },
}

MOE_EXPERTS = 4


def transformers_major():
    import transformers
    return int(transformers.__version__.split(".")[0])


def moe_official_patterns():
    """transformers 4 (the version dfloat11 0.5.0 was written for) holds each expert as a module
    with gate/up/down nn.Linear, as the DFloat11 hub's MoE models expect; the encoder codes them
    in the layer's group. transformers 5 fuses the experts into 3-D parameters of one module
    (no nn.Linear per expert), which the official encoder cannot take: it codes the attention
    projections of each layer only."""
    members = LLM_MEMBERS[:4]
    if transformers_major() < 5:
        members = members + [f"mlp.experts.{e}.{p}" for e in range(MOE_EXPERTS)
                             for p in ("gate_proj", "up_proj", "down_proj")]
    return {"lm_head": [], "model.embed_tokens": [], r"model\.layers\.\d+": members}


def official_patterns(pattern):
    return moe_official_patterns() if pattern == "moe" else OFFICIAL_PATTERNS[pattern]


SMALL = dict(hidden_size=64, intermediate_size=160, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, head_dim=16, vocab_size=512, max_position_embeddings=256)


def llm_config(family):
    from transformers import AutoConfig
    kind, extra, pattern = {
        "llama": ("llama", dict(tie_word_embeddings=False), "llm"),
        "qwen2": ("qwen2", dict(tie_word_embeddings=False), "llm"),  # q/k/v biases
        "qwen3": ("qwen3", dict(tie_word_embeddings=True), "llm"),
        "mistral": ("mistral", dict(tie_word_embeddings=False), "llm"),
        "gemma3": ("gemma3_text", dict(tie_word_embeddings=True, sliding_window=32,
                                       query_pre_attn_scalar=16), "llm"),
        "phi3": ("phi3", dict(tie_word_embeddings=False, pad_token_id=0), "phi3"),
        "qwen3moe": ("qwen3_moe", dict(tie_word_embeddings=False, num_experts=MOE_EXPERTS,
                                       num_experts_per_tok=2, moe_intermediate_size=48,
                                       decoder_sparse_step=1), "moe"),
    }[family]
    config = AutoConfig.for_model(kind, **SMALL, **extra)
    return config, pattern


def randomize_small_params(model, seed):
    # Biases and norms start as zeros and ones: give them random values so that a tensor the
    # loader leaves unset (or sets from the wrong place) changes the logits.
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 1:
                p.add_((torch.randn(p.shape, generator=g) * 0.05).to(p.dtype))


def build_llm(family, seed):
    from transformers import AutoModelForCausalLM
    config, pattern = llm_config(family)
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    randomize_small_params(model, seed)
    return model.eval(), config, pattern


def fresh_llm(config):
    from transformers import AutoModelForCausalLM
    torch.manual_seed(12345)  # weights the loader must overwrite
    return AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16).eval()


def llm_inputs(vocab, batch, length=16, seed=7):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(1, vocab, (batch, length), generator=g).cuda()


@torch.no_grad()
def llm_logits(model, ids):
    return model(input_ids=ids).logits


@torch.no_grad()
def greedy(model, ids, steps=32):
    out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), do_sample=False,
                         max_new_tokens=steps, min_new_tokens=steps, eos_token_id=None,
                         pad_token_id=0)
    return out[:, ids.shape[1]:]


def flux_config():
    return dict(patch_size=1, in_channels=16, num_layers=1, num_single_layers=2,
                attention_head_dim=16, num_attention_heads=2, joint_attention_dim=32,
                pooled_projection_dim=32, guidance_embeds=True, axes_dims_rope=(4, 6, 6))


def build_flux(seed):
    from diffusers import FluxTransformer2DModel
    torch.manual_seed(seed)
    model = FluxTransformer2DModel(**flux_config()).to(torch.bfloat16)
    randomize_small_params(model, seed)
    return model.eval()


def flux_inputs(batch=2):
    g = torch.Generator().manual_seed(3)
    c = flux_config()
    img, txt = 16, 8
    return dict(
        hidden_states=torch.randn(batch, img, c["in_channels"], generator=g),
        encoder_hidden_states=torch.randn(batch, txt, c["joint_attention_dim"], generator=g),
        pooled_projections=torch.randn(batch, c["pooled_projection_dim"], generator=g),
        timestep=torch.full((batch,), 0.5), guidance=torch.full((batch,), 3.5),
        img_ids=torch.randint(0, 4, (img, 3), generator=g).float(),
        txt_ids=torch.zeros(txt, 3))


@torch.no_grad()
def flux_out(model):
    inputs = {k: (v.cuda().to(torch.bfloat16) if v.is_floating_point() and "ids" not in k
                  else v.cuda()) for k, v in flux_inputs().items()}
    return model(**inputs, return_dict=False)[0]


def official_load(path, skeleton):
    from dfloat11 import DFloat11Model
    return DFloat11Model.from_pretrained(path, device="cuda", bfloat16_model=skeleton)


def equal_report(a, b):
    if a.shape != b.shape:
        return False, f"shapes {tuple(a.shape)} and {tuple(b.shape)}"
    same = torch.equal(a, b)
    diff = (a.float() - b.float()).abs().max().item()
    return same, f"torch.equal={same}, max |diff| {diff:.4g}"


def write_full_config(official_dir, source_config, dfloat11_config):
    # The official encoder (save_single_file=True) writes a config.json holding only
    # dfloat11_config; the hub's DF11 models ship the original config with it added.
    config = dict(source_config)
    config["dfloat11_config"] = dfloat11_config
    with open(os.path.join(official_dir, "config.json"), "w") as f:
        json.dump(config, f, indent=2)


def official_compress(model, patterns, out_dir):
    from dfloat11 import compress_model
    import contextlib
    import io
    with contextlib.redirect_stdout(io.StringIO()):  # code tables and per-element progress
        compress_model(model, pattern_dict=patterns, save_path=out_dir, save_single_file=True,
                       check_correctness=True)


def official_folders(family, model, patterns, official_dir, saved_config,
                     shard_name="model.safetensors"):
    """The official encoder's output as it writes it (OFFICIAL_bare: config.json holds
    dfloat11_config alone) and as the hub publishes it (OFFICIAL: the original config.json plus
    dfloat11_config). False (recorded) if the encoder failed."""
    try:
        official_compress(model, patterns, official_dir)
        if shard_name != "model.safetensors":
            os.rename(os.path.join(official_dir, "model.safetensors"),
                      os.path.join(official_dir, shard_name))
        bare = json.load(open(os.path.join(official_dir, "config.json")))
        shutil.copytree(official_dir, official_dir + "_bare")
        write_full_config(official_dir, saved_config, bare["dfloat11_config"])
        record(True, family, "b-official-compress", repr(sorted(os.listdir(official_dir))))
        return True
    except Exception as e:  # noqa: BLE001
        traceback.print_exc()
        record(False, family, "b-official-compress", f"{type(e).__name__}: {e}")
        return False


def loader_checks(family, step, path, config, ids2, ref_logits, generations):
    """The official loader on `path`: logits equal to BF16's, and for each (ids, tokens, name)
    greedy tokens equal to BF16's."""
    try:
        loaded = official_load(path, fresh_llm(config))
        ok, detail = equal_report(llm_logits(loaded, ids2), ref_logits)
        record(ok, family, f"{step}-logits", detail)
        for ids, ref_tokens, name in generations:
            tokens = greedy(loaded, ids)
            rows = [r for r in range(len(ids)) if not torch.equal(tokens[r], ref_tokens[r])]
            record(torch.equal(tokens, ref_tokens), family, f"{step}-greedy-{name}",
                   f"{int((tokens != ref_tokens).sum())} of {tokens.numel()} tokens differ "
                   f"(rows {rows})")
    except Exception as e:  # noqa: BLE001
        traceback.print_exc()
        record(False, family, f"{step}-official-load", f"{type(e).__name__}: {e}")


def check_llm(args, family):
    from transformers import AutoModelForCausalLM
    work = os.path.join(args.work, family)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    bf16_dir = os.path.join(work, "bf16")
    model, config, pattern = build_llm(family, seed=sum(map(ord, family)))
    model.save_pretrained(bf16_dir)
    saved = json.load(open(os.path.join(bf16_dir, "config.json")))
    ref = AutoModelForCausalLM.from_pretrained(bf16_dir, dtype=torch.bfloat16).cuda().eval()
    ids2 = llm_inputs(config.vocab_size, 2)
    ref_logits = llm_logits(ref, ids2)
    ids1, ids8 = llm_inputs(config.vocab_size, 1, seed=11), llm_inputs(config.vocab_size, 8, seed=11)
    ref_tok1, ref_tok8 = greedy(ref, ids1), greedy(ref, ids8)
    same8 = torch.equal(ref_tok8, greedy(ref, ids8))
    record(same8, family, "bf16-self-batch8", "BF16 greedy batch 8 run twice gives the same tokens")

    # (a) df11 compress -> official loader
    df11_dir = os.path.join(work, "df11")
    rc, _ = run_df11(args.df11, "compress", bf16_dir, "-o", df11_dir)
    record(rc == 0, family, "a-compress", f"exit {rc}")
    if rc == 0:
        loader_checks(family, "a", df11_dir, config, ids2, ref_logits,
                      [(ids1, ref_tok1, "batch1"), (ids8, ref_tok8, "batch8")])

    # (b) official compress_model -> df11 verify, inspect, decompress -> transformers
    official_dir = os.path.join(work, "official")
    against_dir = bf16_dir
    if family == "qwen3moe" and transformers_major() >= 5:
        # The official encoder saves model.state_dict(): under transformers 5 its MoE experts
        # are fused 3-D tensors ("mlp.experts.gate_up_proj"), while save_pretrained writes
        # them per expert. Compare with a folder of the state dict as it is.
        from safetensors.torch import save_file
        against_dir = os.path.join(work, "bf16_state_dict")
        os.makedirs(against_dir)
        save_file({k: v.contiguous() for k, v in model.state_dict().items()},
                  os.path.join(against_dir, "model.safetensors"), metadata={"format": "pt"})
        shutil.copy(os.path.join(bf16_dir, "config.json"), against_dir)
    if not official_folders(family, model, official_patterns(pattern), official_dir, saved):
        return
    loader_checks(family, "official-encoder-official-loader", official_dir, config, ids2,
                  ref_logits, [(ids8, ref_tok8, "batch8")])
    check_restore(args, family, official_dir, against_dir,
                  lambda d: llm_logits(AutoModelForCausalLM.from_pretrained(
                      d, dtype=torch.bfloat16).cuda().eval(), ids2), ref_logits)


def check_restore(args, family, official_dir, bf16_dir, logits_of, ref_out):
    rc, _ = run_df11(args.df11, "verify", official_dir, "--against", bf16_dir)
    record(rc == 0, family, "b-verify-against", f"exit {rc}")
    rc, text = run_df11(args.df11, "inspect", official_dir)
    record(rc == 0, family, "b-inspect", f"exit {rc}")
    restored = official_dir + "_restored"
    rc, _ = run_df11(args.df11, "decompress", official_dir, "-o", restored)
    record(rc == 0, family, "b-decompress", f"exit {rc}")
    rc_like, _ = run_df11(args.df11, "decompress", official_dir + "_bare", "--like", bf16_dir,
                          "-o", official_dir + "_bare_restored")
    record(rc_like == 0, family, "b-decompress-like", f"exit {rc_like}")
    if rc != 0:
        return
    try:
        ok, detail = equal_report(logits_of(restored), ref_out)
        record(ok, family, "b-restored-logits", detail)
    except Exception as e:  # noqa: BLE001
        traceback.print_exc()
        record(False, family, "b-restored-load", f"{type(e).__name__}: {e}")


def check_flux(args):
    from diffusers import FluxTransformer2DModel
    family = "flux"
    work = os.path.join(args.work, family)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    bf16_dir = os.path.join(work, "bf16")
    model = build_flux(5)
    model.save_pretrained(bf16_dir)
    saved = json.load(open(os.path.join(bf16_dir, "config.json")))
    ref = FluxTransformer2DModel.from_pretrained(bf16_dir, torch_dtype=torch.bfloat16).cuda()
    ref_out = flux_out(ref.eval())

    def skeleton():
        torch.manual_seed(999)
        return FluxTransformer2DModel(**flux_config()).to(torch.bfloat16).eval()

    df11_dir = os.path.join(work, "df11")
    rc, _ = run_df11(args.df11, "compress", bf16_dir, "-o", df11_dir)
    record(rc == 0, family, "a-compress", f"exit {rc}")
    if rc == 0:
        try:
            ok, detail = equal_report(flux_out(official_load(df11_dir, skeleton())), ref_out)
            record(ok, family, "a-output", detail)
        except Exception as e:  # noqa: BLE001
            traceback.print_exc()
            record(False, family, "a-official-load", f"{type(e).__name__}: {e}")
    official_dir = os.path.join(work, "official")
    # diffusers reads diffusion_pytorch_model.safetensors (the hub's DF11 FLUX uses it).
    if not official_folders(family, model, OFFICIAL_PATTERNS["flux"], official_dir, saved,
                            shard_name="diffusion_pytorch_model.safetensors"):
        return
    try:
        ok, detail = equal_report(flux_out(official_load(official_dir, skeleton())), ref_out)
        record(ok, family, "official-encoder-official-loader-output", detail)
    except Exception as e:  # noqa: BLE001
        traceback.print_exc()
        record(False, family, "official-encoder-official-loader", f"{type(e).__name__}: {e}")
    check_restore(args, family, official_dir, bf16_dir,
                  lambda d: flux_out(FluxTransformer2DModel.from_pretrained(
                      d, torch_dtype=torch.bfloat16).cuda().eval()), ref_out)


@torch.no_grad()
def batch8_study(args):
    """The greedy batch-8 note (issue 9): does cuBLAS's choice depend on where a weight lies?

    The official loader decodes a block into one shared buffer and hands each member a view
    into it at the member's element offset. PyTorch passes each operand's address alignment
    (up to 256 bytes) to cuBLASLt's heuristics, so the same weights at another offset may run
    another kernel with another summation order. This puts a BF16 Llama's own weights at given
    offsets (no DF11 involved) and compares greedy batch-8 tokens and step logits with the
    plain model's.
    """
    from transformers import AutoModelForCausalLM, AutoConfig
    config = AutoConfig.for_model("llama", hidden_size=2048, intermediate_size=5632,
                                  num_hidden_layers=8, num_attention_heads=32,
                                  num_key_value_heads=4, vocab_size=32000,
                                  tie_word_embeddings=False)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16).cuda().eval()
    ids8 = llm_inputs(config.vocab_size, 8, length=32, seed=1)
    ids1 = ids8[:1]
    base8, base1 = greedy(model, ids8, 32), greedy(model, ids1, 32)
    print(f"study: BF16 batch 8 twice equal: {torch.equal(base8, greedy(model, ids8, 32))}")
    print(f"study: BF16 row 0 at batch 1 vs batch 8 equal: {torch.equal(base1[0], base8[0])}")
    originals = {}
    for name, mod in model.named_modules():
        if isinstance(mod, torch.nn.Linear):
            originals[name] = mod.weight
    for shift_elems in (0, 8, 64, 128):
        # Every Linear's weight copied into one buffer at an address of the given alignment.
        for name, w in originals.items():
            buf = torch.empty(w.numel() + 256, dtype=torch.bfloat16, device="cuda")
            view = buf[shift_elems:shift_elems + w.numel()].view_as(w)
            view.copy_(w)
            mod = model.get_submodule(name)
            del mod.weight
            mod.weight = view
        t8 = greedy(model, ids8, 32)
        logits = llm_logits(model, ids8)
        for name, w in originals.items():
            mod = model.get_submodule(name)
            del mod.weight
            mod.weight = w
        ref_logits = llm_logits(model, ids8)
        print(f"study: weights at byte offset {2 * shift_elems} mod 512: batch-8 greedy "
              f"{int((t8 != base8).sum())} of {t8.numel()} tokens differ; batch-8 logits "
              f"torch.equal={torch.equal(logits, ref_logits)} max |diff| "
              f"{(logits.float() - ref_logits.float()).abs().max().item():.4g}", flush=True)


@torch.no_grad()
def note_repro(args):
    """The setup of issue 9's note: a 0.85B Llama, df11 compress, the official loader, greedy
    32 tokens at batch 1 and 8; then the generation settings the official loader leaves out:
    with bfloat16_model= it does not read generation_config.json, so a checkpoint whose
    generation_config.json lists more end-of-sequence ids than config.json (Llama 3 does)
    stops a row in BF16 and not in the DF11 model."""
    from transformers import AutoModelForCausalLM, AutoConfig, GenerationConfig
    config = AutoConfig.for_model("llama", hidden_size=2048, intermediate_size=5632,
                                  num_hidden_layers=16, num_attention_heads=32,
                                  num_key_value_heads=4, vocab_size=32000,
                                  tie_word_embeddings=False, bos_token_id=1, eos_token_id=2)
    work = os.path.join(args.work, "note")
    shutil.rmtree(work, ignore_errors=True)
    bf16_dir, df11_dir = os.path.join(work, "bf16"), os.path.join(work, "df11")
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    print(f"note: {sum(p.numel() for p in model.parameters()) / 1e9:.3f}B parameters")
    model.save_pretrained(bf16_dir)
    del model
    rc, _ = run_df11(args.df11, "compress", bf16_dir, "-o", df11_dir)
    ref = AutoModelForCausalLM.from_pretrained(bf16_dir, dtype=torch.bfloat16).cuda().eval()
    dfm = official_load(df11_dir, fresh_llm(config))
    ids2 = llm_inputs(config.vocab_size, 2, length=32, seed=2)
    ok, detail = equal_report(llm_logits(dfm, ids2), llm_logits(ref, ids2))
    record(ok, "note", "logits-batch2", detail)
    ids8 = llm_inputs(config.vocab_size, 8, length=32, seed=1)
    for batch in (1, 8):
        a, b = greedy(ref, ids8[:batch]), greedy(dfm, ids8[:batch])
        record(torch.equal(a, b), "note", f"greedy-batch{batch}",
               f"{int((a != b).sum())} of {a.numel()} tokens differ (eos_token_id=None given)")
    # generation_config.json with one more end-of-sequence id: a token row 3 emits at step 10
    # (and row 0 never emits), as Llama 3's lists 128001, 128008, 128009.
    tokens = greedy(ref, ids8)
    extra = next(int(t) for t in tokens[3, 5:] if int(t) not in tokens[0].tolist())
    gen = GenerationConfig.from_pretrained(bf16_dir)
    gen.eos_token_id = [config.eos_token_id, extra]
    gen.pad_token_id = 0
    gen.save_pretrained(bf16_dir)
    shutil.copy(os.path.join(bf16_dir, "generation_config.json"), df11_dir)
    ref = AutoModelForCausalLM.from_pretrained(bf16_dir, dtype=torch.bfloat16).cuda().eval()

    def plain(model, ids):  # generation settings left to each model's generation_config
        out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids),
                             do_sample=False, max_new_tokens=32)
        return out[:, ids.shape[1]:]

    for batch in (1, 8):
        a, b = plain(ref, ids8[:batch]), plain(dfm, ids8[:batch])
        n = min(a.shape[1], b.shape[1])
        print(f"note: generation_config.json eos {gen.eos_token_id}, batch {batch}: BF16 "
              f"{tuple(a.shape)}, DF11 (official loader, bfloat16_model=) {tuple(b.shape)}, "
              f"{int((a[:, :n] != b[:, :n]).sum())} differing tokens", flush=True)
    dfm.generation_config = GenerationConfig.from_pretrained(df11_dir)
    a, b = plain(ref, ids8), plain(dfm, ids8)
    record(torch.equal(a, b), "note", "greedy-batch8-with-generation-config",
           "DF11 model given GenerationConfig.from_pretrained(df11 folder): "
           f"{'same tokens' if torch.equal(a, b) else 'tokens differ'}")


class _NoKernel:
    """Stands for CuPy's RawModule: the decode kernel exists only on a CUDA machine."""

    def __init__(self, *args, **kwargs):
        pass

    def get_function(self, name):
        def missing(*args, **kwargs):
            raise RuntimeError(f"the dfloat11 kernel '{name}' needs CuPy and a CUDA GPU")
        return missing


def install_cpu_shims():
    """dfloat11 0.5.0 imports CuPy and loads its PTX at import; compress_model(...,
    check_correctness=False) never runs the kernel. Without CUDA, a stand-in module lets the
    encoder import (any use of the kernel raises)."""
    try:
        import cupy  # noqa: F401
    except ImportError:
        shim = types.ModuleType("cupy")
        shim.RawModule = _NoKernel
        shim.cuda = types.SimpleNamespace(Device=_NoKernel)
        sys.modules["cupy"] = shim


SINGLE_FILE_FAMILIES = ("llama", "qwen3")
MODULE_FILES_FAMILIES = ("llama",)


def single_file_fixtures(fixtures, families, single_file=True):
    """The official encoder's output as it writes it by default (save_single_file=True): one
    model.safetensors holding model.state_dict() and a config.json holding dfloat11_config
    alone, made on the CPU (check_correctness=False) from the committed BF16 model
    FIXTURES/<family>/bf16 into FIXTURES/<family>/official-single. With single_file=False, its
    other output, into FIXTURES/<family>/official-modules: each coded module's state_dict() (its
    group and the module's other tensors, a block's norms) in a file of its own named after the
    module, the rest in model.safetensors, no index, and config.json the model's config with
    dfloat11_config. Checked before it is kept: every coded tensor byte-identical to
    FIXTURES/<family>/official's (the same model, encoded with check_correctness=True: the
    encoder's GPU decode gave the original weights there) and every other tensor equal to the
    BF16 model's."""
    install_cpu_shims()
    import contextlib
    import io
    from dfloat11 import compress_model
    from safetensors.torch import load_file
    from transformers import AutoModelForCausalLM
    kind = "official-single" if single_file else "official-modules"
    for family in families:
        bf16_dir = os.path.join(fixtures, family, "bf16")
        out = os.path.join(fixtures, family, kind)
        shutil.rmtree(out, ignore_errors=True)
        model = AutoModelForCausalLM.from_pretrained(bf16_dir, dtype=torch.bfloat16).eval()
        _, pattern = llm_config(family)
        quiet = io.StringIO()  # code tables and progress bars
        with contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
            compress_model(model, pattern_dict=official_patterns(pattern), save_path=out,
                           save_single_file=single_file, check_correctness=False)
        made = {}
        for f in sorted(os.listdir(out)):
            if f.endswith(".safetensors"):
                made.update(load_file(os.path.join(out, f)))
        published = load_file(os.path.join(fixtures, family, "official", "model.safetensors"))
        original = load_file(os.path.join(bf16_dir, "model.safetensors"))
        record(sorted(made) == sorted(published), family, f"{kind}-tensor-names",
               f"{len(made)} tensors, official/ has {len(published)}")
        for name, t in sorted(made.items()):
            want = published.get(name)
            same = want is not None and t.dtype == want.dtype and torch.equal(t, want)
            if same and t.dtype == torch.bfloat16:
                same = torch.equal(t, original[name])
            if not same:
                record(False, family, f"{kind}-tensor", f"{name} differs")
        config = json.load(open(os.path.join(out, "config.json")))
        if single_file:
            record(sorted(config) == ["dfloat11_config"], family, f"{kind}-config",
                   f"config.json keys {sorted(config)}")
        else:
            record("dfloat11_config" in config and "model_type" in config, family,
                   f"{kind}-config", f"config.json keys {sorted(config)}")
        record(True, family, f"{kind}-made", f"{out}: {sorted(os.listdir(out))}")


def encode_checking_raw(model, patterns, out, single_file, state, family, kind):
    """The encoder's output of `model` in `out` (on the CPU: check_correctness=False), and
    the check that every tensor it stored raw equals `state`'s (the model's state dict before
    the encoder replaced its weights)."""
    import contextlib
    import io
    from dfloat11 import compress_model
    from safetensors.torch import load_file
    quiet = io.StringIO()  # code tables and progress bars
    with contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
        compress_model(model, pattern_dict=patterns, save_path=out,
                       save_single_file=single_file, check_correctness=False)
    made = {}
    for f in sorted(os.listdir(out)):
        if f.endswith(".safetensors"):
            made.update(load_file(os.path.join(out, f)))
    raw = {k: v for k, v in made.items() if v.dtype != torch.uint8 and k in state}
    record(all(torch.equal(v, state[k]) for k, v in raw.items()), family, f"{kind}-raw-tensors",
           f"{len(raw)} raw tensors equal the model's")


MULTIMODAL = "gemma3-vision"
# The encoder's pattern_dict for Gemma 3 with its vision tower under transformers 5, whose
# module names the encoder matches (model.named_modules()).
MULTIMODAL_PATTERNS = {
    "lm_head": [], r"model\.language_model\.embed_tokens": [],
    r"model\.language_model\.layers\.\d+": LLM_MEMBERS,
    r"model\.vision_tower\.encoder\.layers\.\d+": [
        "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.out_proj",
        "mlp.fc1", "mlp.fc2"],
}


def multimodal_fixtures(fixtures):
    """FIXTURES/gemma3-vision: bf16/, the tiny Gemma 3 with its SigLIP tower of
    python/tests/models.py named as Google's checkpoints name it, and the encoder's two
    outputs of it under transformers 5 (MULTIMODAL_PATTERNS), made on the CPU
    (check_correctness=False): official-single/ (save_single_file=True, config.json holding
    dfloat11_config alone) and official-modules/ (save_single_file=False). Checked before they
    are kept: every tensor the encoder stored raw equals the BF16 model's, and
    df11.from_pretrained of each gives the BF16 model's logits with an image bit for bit."""
    install_cpu_shims()
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                    "python", "tests"))
    import models
    import df11
    from transformers import Gemma3ForConditionalGeneration
    root = os.path.join(fixtures, MULTIMODAL)
    bf16_dir = os.path.join(root, "bf16")
    shutil.rmtree(root, ignore_errors=True)
    models.save_gemma3_vision(bf16_dir, "google")
    inputs = models.gemma3_vision_inputs()

    def load_bf16():
        return Gemma3ForConditionalGeneration.from_pretrained(bf16_dir,
                                                              dtype=torch.bfloat16).eval()
    with torch.no_grad():
        want = load_bf16()(**inputs).logits
    for single_file in (True, False):
        kind = "official-single" if single_file else "official-modules"
        out = os.path.join(root, kind)
        model = load_bf16()
        state = {k: v.clone() for k, v in model.state_dict().items()}
        encode_checking_raw(model, MULTIMODAL_PATTERNS, out, single_file, state, MULTIMODAL,
                            kind)
        loaded = df11.from_pretrained(out, device="cpu", bfloat16_model=load_bf16())
        with torch.no_grad():
            got = loaded(**inputs).logits
        record(torch.equal(got.view(torch.int16), want.view(torch.int16)), MULTIMODAL,
               f"{kind}-logits", "df11.from_pretrained with an image, against BF16's")
        record(True, MULTIMODAL, f"{kind}-made", f"{out}: {sorted(os.listdir(out))}")


# The encoder's diffusers outputs: {fixture: (class, pattern_dict)}. FLUX's pattern_dict codes
# what the dfloat11 project's FLUX example codes; Wan's each block's attention and feed-forward
# Linears.
DIFFUSERS_PATTERNS = {
    "flux": ("FluxTransformer2DModel", OFFICIAL_PATTERNS["flux"]),
    "wan": ("WanTransformer3DModel", {
        r"blocks\.\d+": ["attn1.to_q", "attn1.to_k", "attn1.to_v", "attn1.to_out.0",
                          "attn2.to_q", "attn2.to_k", "attn2.to_v", "attn2.to_out.0",
                          "ffn.net.0.proj", "ffn.net.2"]}),
}


def diffusers_fixtures(fixtures):
    """FIXTURES/<flux|wan>/official-modules: the encoder's output with save_single_file=False
    (the default of the dfloat11 project's FLUX example: a file per coded block, the other
    tensors in diffusion_pytorch_model.safetensors, config.json holding dfloat11_config alone),
    made on the CPU (check_correctness=False) from FIXTURES/<name>/bf16 (for Wan, made first:
    python/tests/models.py's WAN_CONFIG with random weights). Checked before it is kept: every
    tensor stored raw equals the BF16 model's, and df11.from_pretrained with the model built
    from its config (in bfloat16, as the dfloat11 examples build it) holds the BF16 weights bit
    for bit (model.dequantize() then its state dict)."""
    install_cpu_shims()
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                    "python", "tests"))
    import diffusers
    import models
    import df11
    for name, (cls_name, patterns) in DIFFUSERS_PATTERNS.items():
        cls = getattr(diffusers, cls_name)
        bf16_dir = os.path.join(fixtures, name, "bf16")
        if name == "wan":
            shutil.rmtree(os.path.join(fixtures, name), ignore_errors=True)
            torch.manual_seed(0)
            models.save_random_bf16(cls(**models.WAN_CONFIG), bf16_dir, 29)
        out = os.path.join(fixtures, name, "official-modules")
        shutil.rmtree(out, ignore_errors=True)
        model = cls.from_pretrained(bf16_dir, torch_dtype=torch.bfloat16)
        state = {k: v.clone() for k, v in model.state_dict().items()}
        encode_checking_raw(model, patterns, out, False, state, name, "official-modules")
        skeleton = cls.from_config(cls.load_config(bf16_dir), torch_dtype=torch.bfloat16)
        loaded = df11.from_pretrained(out, device="cpu", bfloat16_model=skeleton)
        loaded.dequantize()
        got = loaded.state_dict()
        record(all(torch.equal(got[k], v) for k, v in state.items()), name,
               "official-modules-weights", "df11.from_pretrained, dequantized, against BF16")
        record(True, name, "official-modules-made", f"{out}: {sorted(os.listdir(out))}")


def probe_load(folder):
    """The official loader on a folder written elsewhere (e.g. under another transformers
    version): prints whether it loads and runs, without judging (an INFO line)."""
    from transformers import AutoConfig
    try:
        config = AutoConfig.from_pretrained(folder)
        loaded = official_load(folder, fresh_llm(config))
        logits = llm_logits(loaded, llm_inputs(config.vocab_size, 2))
        print(f"INFO probe {folder}: loads, logits {tuple(logits.shape)}", flush=True)
    except Exception as e:  # noqa: BLE001
        print(f"INFO probe {folder}: {type(e).__name__}: {e}", flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--df11")
    parser.add_argument("--work")
    parser.add_argument("--families",
                        default="llama,qwen2,qwen3,mistral,gemma3,phi3,qwen3moe,flux")
    parser.add_argument("--batch8-study", action="store_true")
    parser.add_argument("--note-repro", action="store_true")
    parser.add_argument("--probe-load", action="append", default=[], metavar="DIR",
                        help="only try the official loader on DIR (repeatable)")
    parser.add_argument("--single-file-fixtures", metavar="FIXTURES",
                        help="only (re)make FIXTURES/<family>/official-single on the CPU "
                             f"(families: --families, default {','.join(SINGLE_FILE_FAMILIES)})")
    parser.add_argument("--multimodal-fixtures", metavar="FIXTURES",
                        help="only (re)make FIXTURES/gemma3-vision on the CPU")
    parser.add_argument("--diffusers-fixtures", metavar="FIXTURES",
                        help="only (re)make FIXTURES/{flux,wan}/official-modules on the CPU")
    parser.add_argument("--module-files-fixtures", metavar="FIXTURES",
                        help="only (re)make FIXTURES/<family>/official-modules on the CPU "
                             f"(families: --families, default {','.join(MODULE_FILES_FAMILIES)})")
    args = parser.parse_args()
    import transformers
    if args.single_file_fixtures:
        print(f"CPU; torch {torch.__version__}; transformers {transformers.__version__}",
              flush=True)
        families = (args.families.split(",") if "--families" in sys.argv
                    else SINGLE_FILE_FAMILIES)
        single_file_fixtures(args.single_file_fixtures, families)
        return report()
    if args.multimodal_fixtures:
        print(f"CPU; torch {torch.__version__}; transformers {transformers.__version__}",
              flush=True)
        multimodal_fixtures(args.multimodal_fixtures)
        return report()
    if args.diffusers_fixtures:
        import diffusers
        print(f"CPU; torch {torch.__version__}; diffusers {diffusers.__version__}", flush=True)
        diffusers_fixtures(args.diffusers_fixtures)
        return report()
    if args.module_files_fixtures:
        print(f"CPU; torch {torch.__version__}; transformers {transformers.__version__}",
              flush=True)
        families = (args.families.split(",") if "--families" in sys.argv
                    else MODULE_FILES_FAMILIES)
        single_file_fixtures(args.module_files_fixtures, families, single_file=False)
        return report()
    if not args.df11 or not args.work:
        parser.error("--df11 and --work are required (but with --single-file-fixtures)")
    print(f"GPU: {torch.cuda.get_device_name(0)}; torch {torch.__version__}", flush=True)
    print(f"transformers {transformers.__version__}", flush=True)
    if args.probe_load:
        for folder in args.probe_load:
            probe_load(folder)
        return 0
    for family in args.families.split(","):
        print(f"===== {family}", flush=True)
        try:
            if family == "flux":
                check_flux(args)
            else:
                check_llm(args, family)
        except Exception as e:  # noqa: BLE001
            traceback.print_exc()
            record(False, family, "setup", f"{type(e).__name__}: {e}")
    if args.batch8_study:
        batch8_study(args)
    if args.note_repro:
        try:
            note_repro(args)
        except Exception as e:  # noqa: BLE001
            traceback.print_exc()
            record(False, "note", "setup", f"{type(e).__name__}: {e}")
    return report()


def report():
    passed = sum(1 for ok, _, _ in RESULTS if ok)
    print(f"{passed} passed, {len(RESULTS) - passed} failed")
    return 0 if passed == len(RESULTS) else 1


if __name__ == "__main__":
    sys.exit(main())
