/* df11_tools.h: the C API of df11's tools beyond decoding, for programs that make DF11 models
 * rather than run them (Python's df11.compress, a training framework's export step):
 *
 *   - compress a BF16 checkpoint held in memory (tensors described by name, dtype, shape and
 *     host bytes or a reader, plus config.json and any other file) into a DF11 folder: exactly
 *     what `df11 compress` writes for the same checkpoint saved as files, without writing the
 *     BF16 files first;
 *   - pull a model from the Hugging Face Hub into the shared cache (`df11 pull`).
 *
 * libdf11-tools.so.0 is apart from libdf11.so.0 (df11.h) on purpose: the decode-only library
 * an inference engine links carries no encoder, no HTTP client and no libcurl. This one
 * links df11's pipelines (the encoder, the compress policy, the Hub client over libcurl). It
 * shares df11.h's result codes (df11_status; df11_status_name() is in libdf11) and its ABI
 * policy (docs/sdk.md, "ABI policy"): within a major version (the SONAME
 * libdf11-tools.so.0), functions and enum values never change or go away; minor versions add.
 *
 * Errors. Every fallible call returns a df11_status. The handle it was called on keeps the
 * message of its latest failure, naming the tensor or file and what is wrong
 * ("checkpoint in memory: model.safetensors: tensor 'lm_head.weight': BF16 [512, 64] is 65536
 * bytes, but 100 were given"): df11_checkpoint_errmsg(), df11_hub_errmsg(), like
 * sqlite3_errmsg(). Nothing is global; a successful call does not clear the message.
 *
 * Threads. A handle is used by one thread at a time (the library's own threads call the
 * callbacks, as each says). Different handles are independent.
 *
 * Strings passed in are UTF-8 and copied (the caller may free them after the call); tensor
 * bytes are not copied: see df11_checkpoint_add_tensor. Strings returned point into the
 * handle and stay valid until the call the function names, or the handle's free. */
#ifndef DF11_DF11_TOOLS_H
#define DF11_DF11_TOOLS_H

#include <stddef.h>
#include <stdint.h>

#include "df11/df11.h" /* df11_status, DF11_API */

#ifdef __cplusplus
extern "C" {
#endif

/* The tools library's version, MAJOR * 10000 + MINOR * 100 + PATCH (the same numbering and,
 * in one release, the same number as df11_version_number()). */
#define DF11_TOOLS_VERSION_NUMBER DF11_VERSION_NUMBER
DF11_API unsigned df11_tools_version_number(void);

/* Progress of a long call: `phase` ("planning", "compressing", "pull org/name"; UTF-8, valid
 * during the call only), `done` of `total` units (bytes) of that phase. Called from the
 * library's threads (the calling thread or a worker), never two at once, at most about 200
 * times per phase plus once as each phase starts and ends. Return 0 to go on; anything else
 * stops the call, which then fails with DF11_ERROR_INTERRUPTED and leaves no output. Must not
 * call into the handle it reports on. */
typedef int (*df11_progress_fn)(void* user, const char* phase, uint64_t done, uint64_t total);

/* ======================================================================================
 * Compressing a checkpoint held in memory
 * ======================================================================================
 *
 *   df11_checkpoint* ck;
 *   df11_checkpoint_create(&ck);
 *   df11_checkpoint_add_tensor(ck, NULL, "model.embed_tokens.weight", "BF16", 2, shape, p, n);
 *   ...                                                      every tensor of the state dict
 *   df11_checkpoint_add_file(ck, "config.json", json, strlen(json));
 *   if (df11_checkpoint_compress(ck, "out-df11") != DF11_OK)
 *     fprintf(stderr, "%s\n", df11_checkpoint_errmsg(ck));
 *   df11_checkpoint_free(ck);
 *
 * The checkpoint is what a Hugging Face folder holds: shards of tensors and other files
 * (config.json, which is required; generation_config.json, tokenizer files, ...). Each
 * tensor names its shard file, or none: then the library makes the shards, as
 * huggingface_hub's split_torch_state_dict_into_shards does (DF11_COMPRESS_SHARD_BYTES;
 * "model.safetensors", or "model-00001-of-0000N.safetensors" with their index), each with
 * __metadata__ {"format": "pt"} as transformers writes. Either every tensor names a file or
 * none does. A shard's header is laid out as the safetensors library writes it: compact JSON,
 * tensors in the order added, padded with spaces to 8 bytes; so for a checkpoint that
 * save_pretrained would write (its shard files, each shard's tensors in the file's order,
 * __metadata__ {"format": "pt"}, its config.json, generation_config.json and index as
 * files), the DF11 folder is the same, byte for byte, as `df11 compress` of the saved folder:
 * same groups, pattern_dict, metadata and record (with DF11_COMPRESS_SOURCE_SHA256, as
 * with --source-sha256, the SHA-256 recorded for each original shard is that of the file it
 * would have been). */

typedef struct df11_checkpoint df11_checkpoint; /* opaque */

/* A new, empty checkpoint. *out receives a handle in every case but out of memory (then NULL
 * and DF11_ERROR_RESOURCE_LIMIT). Allocates a little. Free it with df11_checkpoint_free. */
DF11_API df11_status df11_checkpoint_create(df11_checkpoint** out);
/* Frees the handle and what it copied (never the caller's tensor bytes). NULL is allowed. */
DF11_API void df11_checkpoint_free(df11_checkpoint* ck);
/* Message / code of the latest failed call on `ck` ("" / DF11_OK if none failed). The
 * message is valid until the next failing call on the handle or its free. */
DF11_API const char* df11_checkpoint_errmsg(const df11_checkpoint* ck);
DF11_API df11_status df11_checkpoint_errcode(const df11_checkpoint* ck);

/* Adds tensor `name` to shard file `file` ("model-00001-of-00002.safetensors"; NULL: the
 * library makes the shards), in file order: tensors of one file lie in the order added.
 * `dtype` is a safetensors dtype name ("BF16", "F32", "I64", ...: DF11 codes the 2-D BF16
 * weights, the others are stored unchanged); shape[0 .. rank) its dimensions (rank 0: a
 * scalar; shape may then be NULL). `data` holds its `bytes` bytes, little-endian and
 * contiguous (row-major, as safetensors stores them), any alignment; they are NOT copied: they
 * must stay valid and unchanged until df11_checkpoint_compress returns (or the handle is
 * freed unused). Checks at once, naming the tensor: DF11_ERROR_BAD_DTYPE for an unknown dtype,
 * DF11_ERROR_BAD_SHAPE when `bytes` is not what dtype and shape need, DF11_ERROR_OVERFLOW,
 * DF11_ERROR_RESOURCE_LIMIT (rank above 64), DF11_ERROR_INVALID_ARGUMENT (no name or an unsafe
 * file name, NULL data with bytes > 0). Duplicate names across the checkpoint are found by
 * df11_checkpoint_compress (DF11_ERROR_DUPLICATE_NAME). Cost: copies the name and shape. */
DF11_API df11_status df11_checkpoint_add_tensor(df11_checkpoint* ck, const char* file,
                                                const char* name, const char* dtype, size_t rank,
                                                const uint64_t* shape, const void* data,
                                                uint64_t bytes);

/* Fills dst[0 .. bytes) with bytes [offset, offset + bytes) of one tensor; returns 0, or
 * anything else for a failure (the compress call then fails with DF11_ERROR_IO naming the
 * tensor and the value returned). Called with at most 64 MiB at a time, during
 * df11_checkpoint_compress only, from its threads (the calling thread or a hashing thread),
 * never two calls at once for one checkpoint. */
typedef int (*df11_read_fn)(void* user, uint64_t offset, void* dst, size_t bytes);

/* As df11_checkpoint_add_tensor, for bytes the caller cannot map into host memory at once (a
 * tensor on a GPU): `read` gives them on demand, with `user` passed back. The library stages
 * the tensors of the groups being planned or coded (a group is a transformer block; about two
 * per shard being written, and shards are written side by side as memory allows) in host
 * memory it allocates, frees each once its groups are done, and reads each tensor twice
 * (planning, coding; a third time for the shard's SHA-256 with DF11_COMPRESS_SOURCE_SHA256). */
DF11_API df11_status df11_checkpoint_add_tensor_reader(df11_checkpoint* ck, const char* file,
                                                       const char* name, const char* dtype,
                                                       size_t rank, const uint64_t* shape,
                                                       uint64_t bytes, df11_read_fn read,
                                                       void* user);

/* Sets key `key` of shard `file`'s safetensors __metadata__ to `value` (transformers writes
 * {"format": "pt"}); keys keep the order they were first set in. A shard without any has no
 * __metadata__. DF11_ERROR_INVALID_ARGUMENT if no tensor was added to `file` yet. Copies. */
DF11_API df11_status df11_checkpoint_set_shard_metadata(df11_checkpoint* ck, const char* file,
                                                        const char* key, const char* value);

/* Adds a file of the checkpoint other than a shard: `path` relative, '/'-separated
 * ("config.json", "generation_config.json", "model.safetensors.index.json", "tokenizer.json",
 * "sub/dir/file"), its `bytes` bytes at `data` (copied). config.json is required; the index,
 * when given, must name exactly the shard files of the tensors (and is rewritten for the DF11
 * shards, as `df11 compress` does). DF11_ERROR_INVALID_ARGUMENT for a path that is absolute,
 * has "." or ".." components or names a .safetensors file at the top; duplicates are found
 * by df11_checkpoint_compress. Cost: copies `bytes` bytes. */
DF11_API df11_status df11_checkpoint_add_file(df11_checkpoint* ck, const char* path,
                                              const void* data, size_t bytes);

/* Options of df11_checkpoint_compress; the values start at their defaults. */
typedef enum df11_compress_option {
  DF11_COMPRESS_THREADS = 1,      /* worker threads, >= 0 (0, default: all cores) */
  DF11_COMPRESS_GROUP_BY = 2,     /* 0 (default): one group per block; 1: per 2-D weight */
  DF11_COMPRESS_FORCE = 3,        /* 1: replace an existing out_dir once the new one is whole */
  DF11_COMPRESS_SHARD_BYTES = 4,  /* library-made shards: at most this many bytes each (but a
                                     larger tensor alone), 0 (default): one shard */
  DF11_COMPRESS_SOURCE_SHA256 = 5 /* 1: also record each shard's SHA-256, as `df11 compress
                                     --source-sha256` (a third read of every byte, ~0.5 CPU-s
                                     per GB); 0 (default): none (spec 5.3), restoring is
                                     checked without it (spec 7.6) */
} df11_compress_option;
/* DF11_ERROR_INVALID_ARGUMENT naming the option for an unknown option or a value out of
 * range. */
DF11_API df11_status df11_checkpoint_set_option(df11_checkpoint* ck, df11_compress_option option,
                                                int64_t value);
/* Progress and cancellation of df11_checkpoint_compress (see df11_progress_fn); NULL: none. */
DF11_API df11_status df11_checkpoint_set_progress(df11_checkpoint* ck, df11_progress_fn progress,
                                                  void* user);

/* Writes the DF11 folder `out_dir` (UTF-8 path; its parent must exist). Checks the whole
 * checkpoint first (unique tensor names, shard and file names, config.json present, the index
 * against the shards, at least one 2-D BF16 weight: DF11_ERROR_BAD_DTYPE otherwise, since
 * converting F16 or F32 would not be lossless) and writes nothing unless it is usable. Then,
 * as `df11 compress`: everything is written under "<out_dir>.df11-tmp-<pid>" and renamed onto
 * out_dir when complete; any failure, a stopped progress callback included, leaves nothing
 * behind. An existing out_dir is DF11_ERROR_EXISTS unless DF11_COMPRESS_FORCE. Blocking; runs
 * on oneTBB's threads (DF11_COMPRESS_THREADS) plus hashing threads; memory: about 160 MB of
 * coding buffers plus the largest group's coded size, plus, for tensors given by readers, up
 * to two groups' BF16 bytes per shard being written. May be called again (e.g. to another folder);
 * warnings and results then describe the latest call. */
DF11_API df11_status df11_checkpoint_compress(df11_checkpoint* ck, const char* out_dir);

/* What the latest df11_checkpoint_compress said without failing: groups stored unchanged, a
 * tensor with Inf or NaN left uncoded, low coverage, notes on MoE layouts. Each line valid
 * until the next compress call or the handle's free; NULL if i is out of range. */
DF11_API size_t df11_checkpoint_warning_count(const df11_checkpoint* ck);
DF11_API const char* df11_checkpoint_warning(const df11_checkpoint* ck, size_t i);

/* Figures of the latest successful df11_checkpoint_compress (0 before one). */
typedef enum df11_compress_result {
  DF11_RESULT_INPUT_BYTES = 1,  /* the original .safetensors files, as they would be on disk */
  DF11_RESULT_OUTPUT_BYTES = 2, /* the DF11 .safetensors files */
  DF11_RESULT_SHARDS = 3,
  DF11_RESULT_TENSORS = 4,
  DF11_RESULT_TENSORS_CODED = 5, /* members of coded groups */
  DF11_RESULT_GROUPS_CODED = 6,
  DF11_RESULT_GROUPS_RAW = 7 /* groups stored unchanged */
} df11_compress_result;
DF11_API uint64_t df11_checkpoint_result(const df11_checkpoint* ck, df11_compress_result which);

/* ======================================================================================
 * The Hugging Face Hub
 * ======================================================================================
 * The same client as `df11 pull` (docs/hub.md): the endpoint from
 * HF_ENDPOINT, the token from HF_TOKEN or the file HF_HOME/token (never from an argument),
 * the cache HF_HUB_CACHE or HF_HOME/hub, shared with huggingface_hub and transformers. The
 * environment is read by each call. */

typedef struct df11_hub df11_hub; /* opaque */

/* A new Hub handle (settings, the latest error and result). As df11_checkpoint_create. */
DF11_API df11_status df11_hub_create(df11_hub** out);
DF11_API void df11_hub_free(df11_hub* hub);
DF11_API const char* df11_hub_errmsg(const df11_hub* hub);
DF11_API df11_status df11_hub_errcode(const df11_hub* hub);
/* Parallel transfers, 1 to 64 (default 8). DF11_ERROR_INVALID_ARGUMENT outside. */
DF11_API df11_status df11_hub_set_transfers(df11_hub* hub, int transfers);
/* Progress and cancellation of the transfers (phase "pull org/name"); NULL: none. */
DF11_API df11_status df11_hub_set_progress(df11_hub* hub, df11_progress_fn progress, void* user);

/* Downloads repository `repo` ("org/name" or "org/name@revision": a branch, tag or commit)
 * into the cache, skipping files already there, and sets *snapshot_dir to its snapshot
 * folder (.../models--org--name/snapshots/<commit>; valid until the next pull on the handle or
 * its free). Blocking, network I/O on up to `transfers` threads; each file streams to a
 * temporary name and is renamed into place once its size and SHA-256 check. Errors: as
 * `df11 pull` (DF11_ERROR_INVALID_ARGUMENT for a malformed id, DF11_ERROR_NOT_FOUND for an
 * unknown repository or revision, DF11_ERROR_IO for the network, DF11_ERROR_INTERRUPTED when
 * the progress callback stopped it). */
DF11_API df11_status df11_hub_pull(df11_hub* hub, const char* repo, const char** snapshot_dir);

/* ======================================================================================
 * The compact execution layout's codes (spec/EXEC_COMPACT.md; df11.h, experimental section)
 * ====================================================================================== */

/* The code lengths df11's reference encoder writes (spec 4.1) for a matrix's exponent counts:
 * counts[e] for the 256 BF16 exponents, padding counted as exponent 0 (what
 * df11_cuda_compact_count gives), into lengths[e] (256 bytes): optimal lengths of at most 12
 * bits by package-merge, 0 where counts[e] is 0. Deterministic. DF11_ERROR_INVALID_ARGUMENT
 * where a pointer is NULL or every count is 0. Thread-safe. */
DF11_API df11_status df11_tools_compact_lengths(const uint64_t* counts, uint8_t* lengths);

/* ======================================================================================
 * Coding on a CUDA GPU
 * ======================================================================================
 *
 * Codes n BF16 weights that are already in device memory as one DF11 group, on the GPU: the
 * same bytes df11's CPU encoder writes for them (its code and tables, built here on the host
 * from the GPU's exponent histogram). For engines that hold a weight only on the GPU (a
 * tensor-parallel rank's slice) and keep it coded there; libdf11's
 * df11_cuda_plan_create_parts then decodes it.
 *
 *   df11_cuda_encoding* enc;
 *   df11_tools_cuda_encode_plan(d_w, n, d_hist, DF11_CUDA_HISTOGRAM_SCRATCH_BYTES, stream, &enc);
 *   df11_tools_cuda_encoding_sizes(enc, &sizes);        the parts' sizes and the scratch's
 *   ... the caller allocates the four device parts and the scratch ...
 *   df11_tools_cuda_encode(enc, d_w, parts..., d_scratch, sizes.scratch_bytes, stream);
 *   df11_tools_cuda_encoding_free(enc);                 the luts (host) are the handle's
 *
 * The plan call enqueues the histogram on `stream` and waits for it; the encode call only
 * enqueues (no allocation, no wait). The weights must not change between the two. Both run on
 * the calling thread's current device. Without CUDA in the library both return
 * DF11_ERROR_UNSUPPORTED. */

/* Device scratch of df11_tools_cuda_encode_plan, 8-byte aligned. */
#define DF11_CUDA_HISTOGRAM_SCRATCH_BYTES 2048

typedef struct df11_cuda_encoding df11_cuda_encoding; /* opaque: a planned GPU encode */

/* What a planned encode writes: the group's part sizes in bytes (luts in host memory, the
 * rest in the caller's device buffers), the encoded_exponent buffer's capacity (its size
 * rounded up to 8: the coder writes whole words; only the first encoded_exponent_bytes are
 * the group's), and the device scratch the encode needs. */
typedef struct df11_cuda_encoding_sizes {
  uint64_t n_elements;
  uint64_t luts_bytes;
  uint64_t encoded_exponent_bytes;
  uint64_t encoded_exponent_capacity;
  uint64_t sign_mantissa_bytes;
  uint64_t output_positions_bytes;
  uint64_t gaps_bytes;
  uint64_t scratch_bytes;
} df11_cuda_encoding_sizes;

/* Plans the coding of the n >= 1 BF16 weights at d_weights (device memory, 2-byte aligned):
 * counts their exponents on the GPU (d_scratch: DF11_CUDA_HISTOGRAM_SCRATCH_BYTES) and builds
 * the code. *out receives a handle in every case but out of memory (free it, also after a
 * failure; its errmsg says what failed). DF11_ERROR_UNCODABLE where a weight has an exponent
 * the DF11 code cannot hold (Inf, NaN, |x| >= 2^113), DF11_ERROR_INVALID_ARGUMENT for n = 0,
 * n > 2^32 - 1 or a bad pointer, DF11_ERROR_CUDA for a failed CUDA call. */
DF11_API df11_status df11_tools_cuda_encode_plan(const void* d_weights, uint64_t n, void* d_scratch,
                                                 size_t scratch_bytes, void* stream,
                                                 df11_cuda_encoding** out);
DF11_API void df11_tools_cuda_encoding_free(df11_cuda_encoding* enc);
DF11_API const char* df11_tools_cuda_encoding_errmsg(const df11_cuda_encoding* enc);
/* DF11_ERROR_INVALID_ARGUMENT if the plan failed. */
DF11_API df11_status df11_tools_cuda_encoding_sizes(const df11_cuda_encoding* enc,
                                                    df11_cuda_encoding_sizes* out);
/* The group's luts part (sizes.luts_bytes bytes, host memory owned by the handle); NULL if the
 * plan failed. */
DF11_API const uint8_t* df11_tools_cuda_encoding_luts(const df11_cuda_encoding* enc);
/* Enqueues the coding on `stream` into the caller's device parts: encoded_exponent
 * (encoded_exponent_capacity bytes, 8-byte aligned), sign_mantissa, output_positions (4-byte
 * aligned) and gaps, each written whole; d_scratch: scratch_bytes, 8-byte aligned. The
 * weights are the plan's. */
DF11_API df11_status df11_tools_cuda_encode(df11_cuda_encoding* enc, const void* d_weights,
                                            void* d_encoded_exponent, void* d_sign_mantissa,
                                            void* d_output_positions, void* d_gaps, void* d_scratch,
                                            size_t scratch_bytes, void* stream);

#ifdef __cplusplus
}
#endif

#endif /* DF11_DF11_TOOLS_H */
