"""diffusers model classes beside FLUX (test_diffusers_cpu.py), each a tiny model with random
weights saved in BF16 and compressed by `df11 compress`: df11.from_pretrained builds the class
from config.json and loads the folder with every tensor as diffusers' own from_pretrained(
torch_dtype=torch.bfloat16) holds it, in its dtype (BF16, float32 for the class's
_keep_in_fp32_modules; SD3's positional table, which the class builds in float32, BF16 as
diffusers loads it). Checked through model.dequantize(): the state dict then equals diffusers'
BF16 load tensor for tensor, bit for bit; and what save_pretrained wrote loads again the same
way. The outputs of models whose weights a forward computes in float32 are checked in
test_float32_modules.py."""
import pytest
import torch

import df11
import models

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")
diffusers = pytest.importorskip("diffusers")

COMMON = dict(num_layers=1, attention_head_dim=16, num_attention_heads=2, in_channels=4,
              out_channels=4, patch_size=2)
CLASSES = {
    "SD3Transformer2DModel": dict(joint_attention_dim=32, pooled_projection_dim=32,
                                  sample_size=8, caption_projection_dim=32, qk_norm="rms_norm"),
    "SanaTransformer2DModel": dict(caption_channels=32, cross_attention_dim=32, sample_size=8,
                                   mlp_ratio=2.0, qk_norm="rms_norm", attention_bias=True),
    "PixArtTransformer2DModel": dict(caption_channels=32, cross_attention_dim=32,
                                     sample_size=8, norm_num_groups=4, attention_bias=True),
    "HunyuanVideoTransformer3DModel": dict(num_single_layers=1, pooled_projection_dim=32,
                                           text_embed_dim=32, num_refiner_layers=1,
                                           rope_axes_dim=(4, 6, 6), mlp_ratio=2.0,
                                           qk_norm="rms_norm"),
    "CogVideoXTransformer3DModel": dict(text_embed_dim=32, time_embed_dim=16,
                                        attention_bias=True),
    "Lumina2Transformer2DModel": dict(sample_size=8, num_refiner_layers=1, hidden_size=32,
                                      axes_dim_rope=(4, 6, 6), cap_feat_dim=32,
                                      attention_head_dim=None),
    "Flux2Transformer2DModel": dict(num_single_layers=1, joint_attention_dim=32,
                                    axes_dims_rope=(4, 6, 6), mlp_ratio=2.0),
    "QwenImageTransformer2DModel": dict(joint_attention_dim=32, axes_dims_rope=(4, 6, 6)),
    "ChromaTransformer2DModel": dict(num_single_layers=1, joint_attention_dim=32,
                                     axes_dims_rope=(4, 6, 6), approximator_num_channels=8,
                                     approximator_hidden_dim=32, approximator_layers=1),
    "LTXVideoTransformer3DModel": dict(patch_size=1, patch_size_t=1, cross_attention_dim=32,
                                       caption_channels=32, qk_norm="rms_norm_across_heads"),
    "UNet2DConditionModel": dict(  # SDXL's shape: cross-attention blocks, text_time embedding
        num_layers=None, attention_head_dim=2, num_attention_heads=None, patch_size=None,
        block_out_channels=(8, 16), layers_per_block=1, norm_num_groups=4,
        cross_attention_dim=32, sample_size=8, transformer_layers_per_block=1,
        down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
        up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"), addition_embed_type="text_time",
        addition_time_embed_dim=8, projection_class_embeddings_input_dim=80),
    # num_layers etc. of COMMON that a class names otherwise are set to None (left out)
    "HiDreamImageTransformer2DModel": dict(num_single_layers=1, caption_channels=[32, 16],
                                           text_emb_dim=32, num_routed_experts=4,
                                           num_activated_experts=2, axes_dims_rope=(4, 6, 6),
                                           max_resolution=(16, 16), llama_layers=[0]),
    "ZImageTransformer2DModel": dict(num_layers=None, attention_head_dim=None,
                                     num_attention_heads=None, out_channels=None,
                                     patch_size=None, dim=64, n_layers=1, n_refiner_layers=1,
                                     n_heads=2, n_kv_heads=2, cap_feat_dim=32,
                                     axes_dims=[8, 12, 12], axes_lens=[64, 32, 32]),
    "WanVACETransformer3DModel": dict(patch_size=None, text_dim=32, freq_dim=16, ffn_dim=64,
                                      num_layers=2, vace_layers=[0], vace_in_channels=8),
    "SkyReelsV2Transformer3DModel": dict(patch_size=None, text_dim=32, freq_dim=16, ffn_dim=64),
    "ChronoEditTransformer3DModel": dict(patch_size=None, text_dim=32, freq_dim=16, ffn_dim=64),
    "CogView4Transformer2DModel": dict(text_embed_dim=32, time_embed_dim=16, condition_dim=8,
                                       pos_embed_max_size=16, sample_size=16,
                                       rope_axes_dim=(8, 8)),
    "CosmosTransformer3DModel": dict(patch_size=None, text_embed_dim=32, adaln_lora_dim=8,
                                     max_size=(4, 16, 16), crossattn_proj_in_channels=32,
                                     encoder_hidden_states_channels=32),
    "HunyuanImageTransformer2DModel": dict(patch_size=None, num_single_layers=1,
                                           num_refiner_layers=1, mlp_ratio=2.0,
                                           text_embed_dim=32, rope_axes_dim=(8, 8)),
    "HunyuanVideo15Transformer3DModel": dict(patch_size=None, num_refiner_layers=1,
                                             mlp_ratio=2.0, text_embed_dim=32,
                                             text_embed_2_dim=16, image_embed_dim=16,
                                             rope_axes_dim=(4, 6, 6)),
    "BriaTransformer2DModel": dict(patch_size=None, out_channels=None, num_single_layers=1,
                                   joint_attention_dim=32, axes_dims_rope=[4, 6, 6]),
    "LongCatImageTransformer2DModel": dict(patch_size=None, out_channels=None,
                                           num_single_layers=1, joint_attention_dim=32,
                                           pooled_projection_dim=32, axes_dims_rope=[4, 6, 6]),
    "AuraFlowTransformer2DModel": dict(num_layers=None, sample_size=8, num_mmdit_layers=1,
                                       num_single_dit_layers=1, joint_attention_dim=32,
                                       caption_projection_dim=32, pos_embed_max_size=64),
    "MochiTransformer3DModel": dict(out_channels=None, patch_size=None,
                                    pooled_projection_dim=16, text_embed_dim=32,
                                    time_embed_dim=16),
    "AllegroTransformer3DModel": dict(patch_size=None, cross_attention_dim=32,
                                      caption_channels=32, sample_height=8, sample_width=8,
                                      sample_frames=4),
    "SanaVideoTransformer3DModel": dict(patch_size=None, num_cross_attention_heads=2,
                                        cross_attention_head_dim=16, cross_attention_dim=32,
                                        caption_channels=32, sample_size=8),
    "StableAudioDiTModel": dict(patch_size=None, sample_size=16,
                                num_key_value_attention_heads=1, cross_attention_dim=32,
                                time_proj_dim=16, global_states_input_dim=32,
                                cross_attention_input_dim=32),
    "AutoencoderKL": dict(num_layers=None, attention_head_dim=None, num_attention_heads=None,
                          patch_size=None, in_channels=3, out_channels=3, latent_channels=4,
                          block_out_channels=(8, 16), layers_per_block=1, norm_num_groups=4,
                          sample_size=16,
                          down_block_types=("DownEncoderBlock2D", "DownEncoderBlock2D"),
                          up_block_types=("UpDecoderBlock2D", "UpDecoderBlock2D")),
}


def bits(t):
    return t.view(torch.int16) if t.dtype == torch.bfloat16 else t


def state(model):
    return {k: v.cpu() for k, v in model.state_dict().items()}


DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(
    not torch.cuda.is_available(), reason="needs a CUDA GPU"))]


def folders(tmp_path, name):
    """CLASSES' model `name` with random weights: its class, BF16 folder and df11 folder."""
    cls = getattr(diffusers, name, None)
    if cls is None:
        pytest.skip(f"diffusers {diffusers.__version__} has no {name}")
    config = {k: v for k, v in {**COMMON, **CLASSES[name]}.items() if v is not None}
    bf16_dir, df11_dir = str(tmp_path / "bf16"), str(tmp_path / "df11")
    torch.manual_seed(0)
    models.save_random_bf16(cls(**config), bf16_dir)
    models.df11_compress(bf16_dir, df11_dir)
    return cls, bf16_dir, df11_dir


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", sorted(CLASSES))
def test_folder_loads_as_diffusers_loads_the_bf16_checkpoint(tmp_path, name, device):
    cls, bf16_dir, df11_dir = folders(tmp_path, name)
    want = state(cls.from_pretrained(bf16_dir, torch_dtype=torch.bfloat16))
    loaded = df11.from_pretrained(df11_dir, device=device)
    assert type(loaded) is cls and loaded.df11.runtimes
    loaded.save_pretrained(str(tmp_path / "saved"))
    again = df11.from_pretrained(str(tmp_path / "saved"), device=device)
    for model in (loaded, again):
        model.dequantize()
        got = state(model)
        assert list(got) == list(want)
        for key in want:
            assert got[key].dtype == want[key].dtype, key
            assert torch.equal(bits(got[key]), bits(want[key])), key


@pytest.mark.parametrize("device", DEVICES)
def test_hidream_routed_experts_give_bf16_output(tmp_path, device):
    """HiDream's blocks route through a gate whose weight the gate reads itself (F.linear on a
    parameter, not an nn.Linear), coded in the block's group with the experts: the output is
    the BF16 model's bit for bit."""
    cls, bf16_dir, df11_dir = folders(tmp_path, "HiDreamImageTransformer2DModel")
    g = torch.Generator().manual_seed(0)

    def randn(*shape):
        return torch.randn(*shape, generator=g).to(device, torch.bfloat16)

    x = dict(hidden_states=randn(1, 4, 8, 8), timesteps=torch.tensor([500], device=device),
             encoder_hidden_states_t5=randn(1, 6, 32),
             encoder_hidden_states_llama3=randn(1, 1, 6, 16), pooled_embeds=randn(1, 32))
    ref = cls.from_pretrained(bf16_dir, torch_dtype=torch.bfloat16).to(device).eval()
    model = df11.from_pretrained(df11_dir, device=device)
    assert any(m.name.endswith("ff_i.gate.weight") for rt in model.df11.runtimes
               for m in rt.group.members)
    with torch.no_grad():
        want = ref(**x, return_dict=False)[0]
        got = model(**x, return_dict=False)[0]
    assert torch.equal(got.view(torch.int16), want.view(torch.int16))
