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


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", sorted(CLASSES))
def test_folder_loads_as_diffusers_loads_the_bf16_checkpoint(tmp_path, name, device):
    cls = getattr(diffusers, name, None)
    if cls is None:
        pytest.skip(f"diffusers {diffusers.__version__} has no {name}")
    config = {k: v for k, v in {**COMMON, **CLASSES[name]}.items() if v is not None}
    bf16_dir, df11_dir = str(tmp_path / "bf16"), str(tmp_path / "df11")
    torch.manual_seed(0)
    models.save_random_bf16(cls(**config), bf16_dir)
    models.df11_compress(bf16_dir, df11_dir)
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
