/* c_compress: makes a small Llama-shaped BF16 model in memory (random weights) and writes it
 * as a DF11 folder with the df11 tools C API, without writing the BF16 files: the program a
 * training framework's export step would be.
 *
 *   c_compress OUT_DIR
 *
 * Prints the sizes and any warning; exit status 0 on success, 1 with the library's message
 * (naming the tensor or file) otherwise. */
#include <df11/df11_tools.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kLayers = 2, kHidden = 64, kFfn = 128, kVocab = 256, kTensors = 2 + 9 * kLayers + 1 };

static uint64_t rng = 0x9e3779b97f4a7c15ull;

/* Roughly normal values (a sum of uniforms) of standard deviation `sd`, as BF16 bits. */
static uint16_t random_bf16(float sd) {
  float sum = 0.0f, f;
  uint32_t bits;
  int i;
  for (i = 0; i < 4; ++i) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    sum += (float)(rng >> 40) / (float)(1 << 24) - 0.5f;
  }
  f = sum * sd * 1.7320508f;
  memcpy(&bits, &f, sizeof bits);
  return (uint16_t)(bits >> 16);
}

static uint16_t* weights(size_t n, float sd, float constant) {
  uint16_t* w = malloc(n * sizeof *w);
  size_t i;
  for (i = 0; w != NULL && i < n; ++i) w[i] = constant != 0.0f ? 0x3f80 : random_bf16(sd);
  return w;
}

int main(int argc, char** argv) {
  static const char* projections[7] = {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
                                       "self_attn.o_proj", "mlp.gate_proj",    "mlp.up_proj",
                                       "mlp.down_proj"};
  static const char config[] =
      "{\n  \"architectures\": [\"LlamaForCausalLM\"],\n  \"hidden_size\": 64,\n"
      "  \"intermediate_size\": 128,\n  \"model_type\": \"llama\",\n"
      "  \"num_attention_heads\": 4,\n  \"num_hidden_layers\": 2,\n"
      "  \"tie_word_embeddings\": false,\n  \"torch_dtype\": \"bfloat16\",\n"
      "  \"vocab_size\": 256\n}\n";
  uint16_t* owned[kTensors];
  size_t n_owned = 0, i;
  df11_checkpoint* ck = NULL;
  int layer, k, failed = 0;
  char name[128];
  uint64_t shape[2];

  if (argc != 2) {
    fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  if (df11_checkpoint_create(&ck) != DF11_OK) return 1;
#define ADD(NAME, ROWS, COLS, SD, CONSTANT)                                            \
  do {                                                                                 \
    size_t n_ = (size_t)(ROWS) * (COLS);                                               \
    shape[0] = (ROWS);                                                                 \
    shape[1] = (COLS);                                                                 \
    owned[n_owned] = weights(n_, SD, CONSTANT);                                        \
    if (owned[n_owned] == NULL ||                                                      \
        df11_checkpoint_add_tensor(ck, NULL, NAME, "BF16", (COLS) == 1 ? 1 : 2, shape, \
                                   owned[n_owned], 2 * n_) != DF11_OK) {               \
      failed = 1;                                                                      \
    }                                                                                  \
    ++n_owned;                                                                         \
  } while (0)

  ADD("model.embed_tokens.weight", kVocab, kHidden, 0.02f, 0.0f);
  for (layer = 0; layer < kLayers && !failed; ++layer) {
    for (k = 0; k < 7; ++k) {
      const int rows = k >= 4 && k < 6 ? kFfn : kHidden, cols = k == 6 ? kFfn : kHidden;
      snprintf(name, sizeof name, "model.layers.%d.%s.weight", layer, projections[k]);
      ADD(name, rows, cols, cols == kHidden ? 0.0625f : 0.0442f, 0.0f); /* 0.5 / sqrt(cols) */
    }
    snprintf(name, sizeof name, "model.layers.%d.input_layernorm.weight", layer);
    ADD(name, kHidden, 1, 0.0f, 1.0f);
    snprintf(name, sizeof name, "model.layers.%d.post_attention_layernorm.weight", layer);
    ADD(name, kHidden, 1, 0.0f, 1.0f);
  }
  ADD("model.norm.weight", kHidden, 1, 0.0f, 1.0f);
  ADD("lm_head.weight", kVocab, kHidden, 0.02f, 0.0f);
  if (!failed) failed = df11_checkpoint_add_file(ck, "config.json", config, strlen(config)) != 0;
  if (!failed) failed = df11_checkpoint_compress(ck, argv[1]) != DF11_OK;
  if (failed) {
    fprintf(stderr, "c_compress: %s\n", df11_checkpoint_errmsg(ck));
  } else {
    printf("%s: %llu bytes of BF16 -> %llu bytes of DF11, %llu groups coded\n", argv[1],
           (unsigned long long)df11_checkpoint_result(ck, DF11_RESULT_INPUT_BYTES),
           (unsigned long long)df11_checkpoint_result(ck, DF11_RESULT_OUTPUT_BYTES),
           (unsigned long long)df11_checkpoint_result(ck, DF11_RESULT_GROUPS_CODED));
    for (i = 0; i < df11_checkpoint_warning_count(ck); ++i) {
      printf("warning: %s\n", df11_checkpoint_warning(ck, i));
    }
  }
  df11_checkpoint_free(ck); /* the tensors' bytes are ours: free them after the call */
  for (i = 0; i < n_owned; ++i) free(owned[i]);
  return failed;
}
