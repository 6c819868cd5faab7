/* df11.h: the C API of df11, for inference engines that read DF11 model folders and decode
 * their weights (C, C++, and any language with a C FFI: Rust, Go, Python through ctypes).
 *
 * One header for C99 and C++; no C++ types. Link libdf11.so.0 (shared, the stable ABI) or
 * libdf11.a (static; link the C++ runtime and oneTBB too, as df11Config.cmake and df11.pc do).
 *
 * Model. A DF11 folder (written by `df11 compress`) holds safetensors shards. Each original
 * BF16 tensor is either a *member* of a coded *group* (spec/DF11.md section 3: the tensors of
 * one module, concatenated and Huffman-coded together) or stored raw (unchanged). A tensor is
 * named and shaped as in the original checkpoint; decoding gives its original bytes exactly.
 *
 * Errors. Every fallible call returns a df11_status (DF11_OK is 0). The handle it was called
 * on keeps the message of its latest failure, naming the file and the tensor or group
 * ("model-00001-of-00002.safetensors: group 'model.layers.3': ..."): df11_model_errmsg(),
 * like sqlite3_errmsg(). Nothing is global; nothing needs clearing. A successful call does not
 * clear the message.
 *
 * Threads. A df11_model is immutable after df11_model_open(): every query and every CPU decode
 * may run concurrently on one handle from any number of threads. The handle's message is then
 * that of one of the concurrent failures, and reading it must not race another failing call
 * on the handle (which replaces it): a thread that needs its own messages uses a handle of
 * its own (handles are cheap). df11_model_close() must not race any other call on it. (The
 * compact layout's transcode keeps its measured plans in the handle, under a lock, between
 * two calls: see df11_cuda_compact_measure.) A df11_cuda_plan is used by one host thread at a
 * time.
 *
 * Lifetime. Strings and arrays returned by a query (names, shapes, stored bytes) point into
 * the handle and stay valid until df11_model_close(). A df11_cuda_plan refers to nothing of
 * the model after df11_cuda_plan_create() and may outlive it.
 *
 * Cost. df11_model_open() maps every shard (mmap: no read of the weights) and parses and
 * checks every header and the df11 metadata: milliseconds (the metadata of a large model
 * takes longer: it is JSON). Queries are O(1), never touch the weights and allocate nothing
 * (but the message of a failure). Decodes read the mapped bytes (page faults on first
 * touch) and never allocate more than a few kilobytes.
 *
 * ABI policy: docs/sdk.md, "ABI policy". In short: within a major version (the SONAME
 * libdf11.so.0), functions, enum values and struct layouts of the stable section never change
 * or go away; minor versions only add. The experimental section (DF11_EXPERIMENTAL) may
 * change in any release and is not part of the stable ABI. */
#ifndef DF11_DF11_H
#define DF11_DF11_H

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#define DF11_API
#elif defined(__GNUC__)
#define DF11_API __attribute__((visibility("default")))
#else
#define DF11_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ======================================================================================
 * Stable API
 * ====================================================================================== */

#define DF11_VERSION_MAJOR 0
#define DF11_VERSION_MINOR 1
#define DF11_VERSION_PATCH 0
/* MAJOR * 10000 + MINOR * 100 + PATCH, e.g. 100 for 0.1.0. */
#define DF11_VERSION_NUMBER \
  (DF11_VERSION_MAJOR * 10000 + DF11_VERSION_MINOR * 100 + DF11_VERSION_PATCH)

/* The library's DF11_VERSION_NUMBER (the one linked, which may be newer than the header). */
DF11_API unsigned df11_version_number(void);
/* "0.1.0". Static storage; never NULL. */
DF11_API const char* df11_version_string(void);

/* Result codes. Frozen numbers (the C++ library's df11::ErrorCode): new codes are only ever
 * appended. A caller must treat an unknown non-zero code as an error. */
typedef enum df11_status {
  DF11_OK = 0,
  DF11_ERROR_IO = 1,                    /* open/read failed (errno text in the message) */
  DF11_ERROR_INVALID_ARGUMENT = 2,      /* a caller's argument is unusable (API misuse) */
  DF11_ERROR_HEADER_TOO_LARGE = 3,      /* a safetensors header beyond its limit or the file */
  DF11_ERROR_TRUNCATED = 4,             /* a file shorter than its structure says */
  DF11_ERROR_BAD_JSON = 5,              /* a header or the df11 metadata is not valid JSON */
  DF11_ERROR_BAD_DTYPE = 6,             /* unknown dtype, or the wrong one for a DF11 tensor */
  DF11_ERROR_BAD_SHAPE = 7,             /* a shape inconsistent with its byte size */
  DF11_ERROR_BAD_OFFSETS = 8,           /* tensor data overlaps, leaves holes or overruns */
  DF11_ERROR_DUPLICATE_NAME = 9,        /* a tensor name appears twice */
  DF11_ERROR_OVERFLOW = 10,             /* a size in the file overflows 64 bits */
  DF11_ERROR_BAD_METADATA = 11,         /* the df11 metadata is missing or inconsistent */
  DF11_ERROR_BAD_GROUP = 12,            /* a group's stored tensors are missing or mis-sized */
  DF11_ERROR_BAD_LUT = 13,              /* a group's lookup tables are unusable */
  DF11_ERROR_BAD_GAP = 14,              /* a gap field does not point at a code boundary */
  DF11_ERROR_BAD_OUTPUT_POSITIONS = 15, /* output positions inconsistent */
  DF11_ERROR_CORRUPT_DATA = 16,         /* checksum mismatch, or a stream that does not decode */
  DF11_ERROR_UNCODABLE = 17,            /* (encoder only) */
  DF11_ERROR_RESOURCE_LIMIT = 18,       /* more memory/groups than allowed, or out of memory */
  DF11_ERROR_NOT_FOUND = 19,            /* folder, tensor or group does not exist */
  DF11_ERROR_EXISTS = 20,               /* (writers only) */
  DF11_ERROR_CUDA = 21,                 /* a CUDA runtime call failed (its text in the message) */
  DF11_ERROR_INTERRUPTED = 22,          /* (tools only) */
  DF11_ERROR_UNSUPPORTED = 23,          /* valid, but not supported by this build (no CUDA) */
  DF11_ERROR_MISMATCH = 24,             /* (verify only) */
  DF11_ERROR_INTERNAL = 25,             /* a df11 bug: please report */
  DF11_ERROR_BAD_CONFIG = 26            /* config.json or the index is unusable */
} df11_status;

/* Stable lower_snake name of a code ("corrupt_data"); "unknown" for a number this library
 * does not know. Static storage; never NULL. */
DF11_API const char* df11_status_name(int status);

/* ---- Opening a model folder ---------------------------------------------------------- */

typedef struct df11_model df11_model; /* opaque */

/* Opens the DF11 model folder `dir` (UTF-8 path): maps every shard, checks every header, its
 * checksum and the df11 metadata against it. *out receives a handle in every case but out of
 * memory (then NULL and DF11_ERROR_RESOURCE_LIMIT); on failure the handle only reports the
 * error (df11_model_errmsg) and must still be closed. Any thread; allocates; blocking I/O.
 *
 * A folder published by the dfloat11 tools (no df11 metadata; config.json holds
 * dfloat11_config) opens too (spec 7.8): its pattern_dict names each group's members, whose
 * shapes come from config.json (the families `df11 decompress` knows: Llama, Mistral,
 * Qwen2/2.5, Qwen3, Qwen3-MoE, Qwen2-MoE, Mixtral, Gemma 1-3, Phi-3/4, the FLUX transformer),
 * and every group is validated at open (tables, gaps, output positions, split positions:
 * DF11_ERROR_BAD_* naming the file and group). Such a folder recorded no checksums: decodes
 * check the streams' structure only. A tied head the dfloat11 encoder stored as a group of its
 * own is listed as an ordinary member ("lm_head.weight"). A group's stored tensors may lie in
 * different shards of such a folder (as save_pretrained writes them); each is read from its
 * own shard, and one missing from every shard is DF11_ERROR_BAD_GROUP naming the folder and
 * the group. Shapes config.json does not give are
 * DF11_ERROR_UNSUPPORTED naming the weights (df11_model_open_with_shapes takes them from the
 * caller); a plain BF16 checkpoint (no dfloat11_config) is DF11_ERROR_BAD_CONFIG or
 * DF11_ERROR_BAD_METADATA; no folder or no shard DF11_ERROR_NOT_FOUND. */
DF11_API df11_status df11_model_open(const char* dir, df11_model** out);

/* The shape of one weight, as the caller knows it (df11_model_open_with_shapes). */
typedef struct df11_shape {
  const char* name;     /* the weight's name in the original model ("lm_head.weight"), UTF-8 */
  size_t rank;          /* entries in dims */
  const uint64_t* dims; /* its dimensions, outermost first; may be NULL for rank 0 */
} df11_shape;

/* df11_model_open, with the shapes of a published folder's coded weights given by the caller:
 * the dfloat11 encoder's own config.json (save_single_file=True, its default) holds
 * dfloat11_config alone, so no file of the folder gives them. A member whose name is in
 * `shapes` takes that shape (it wins over config.json's); others take config.json's as in
 * df11_model_open. Names that are no coded member (raw tensors, weights of other models) are
 * ignored, so a loader may pass every parameter of the model it fills. A folder written by df11
 * records every shape: `shapes` is not read beyond the argument checks.
 *
 * Ownership: `shapes`, its names and dims are only read during the call (copied as needed);
 * the caller keeps them. `shapes` may be NULL when n_shapes is 0 (then this is df11_model_open).
 * Cost: df11_model_open's, plus one copy of the names and dims given (allocates). Any thread.
 * Errors: as df11_model_open; DF11_ERROR_INVALID_ARGUMENT for a NULL `shapes` with n_shapes
 * > 0, a NULL name, NULL dims with rank > 0, or a name given twice (the message names the
 * entry); DF11_ERROR_BAD_SHAPE where a shape given has another element count than the member
 * holds (naming the file, group and member); DF11_ERROR_UNSUPPORTED naming the weights whose
 * shapes neither config.json nor `shapes` give. *out as in df11_model_open. */
DF11_API df11_status df11_model_open_with_shapes(const char* dir, const df11_shape* shapes,
                                                 size_t n_shapes, df11_model** out);

/* Unmaps and frees everything. NULL is allowed. Pointers the handle gave out die with it. */
DF11_API void df11_model_close(df11_model* model);

/* Message of the latest failed call on `model` ("" if none failed), naming the file and the
 * tensor or group. Valid until the next failing call on the handle or its close. */
DF11_API const char* df11_model_errmsg(const df11_model* model);
/* Code of the latest failed call on `model` (DF11_OK if none failed). */
DF11_API df11_status df11_model_errcode(const df11_model* model);

/* ---- Listing groups and tensors (all O(1), no allocation, any thread) ------------------
 * Tensors are numbered 0 .. df11_model_tensor_count() - 1 in the DF11 folder's storage
 * order: shard by shard (by file name), each where it lies, the members of a group together
 * in concatenation order (a member that only codes a copy of another tensor, as a tied
 * lm_head, is not listed: the tensor it copies is); groups 0 .. df11_model_group_count() - 1
 * shard by shard, in the
 * order of the df11 metadata. An index out of range gives NULL / 0 / (size_t)-1 as the
 * function says. */

DF11_API size_t df11_model_tensor_count(const df11_model* model);
DF11_API size_t df11_model_group_count(const df11_model* model);

/* Index of the tensor named `name`, or (size_t)-1 (then the handle's message says so). */
DF11_API size_t df11_model_find_tensor(df11_model* model, const char* name);

/* The tensor's original name ("model.layers.0.mlp.up_proj.weight"); NULL if out of range. */
DF11_API const char* df11_tensor_name(const df11_model* model, size_t tensor);
/* Its safetensors dtype name: "BF16" for group members, any dtype for raw tensors. */
DF11_API const char* df11_tensor_dtype(const df11_model* model, size_t tensor);
/* Its rank and shape (rank entries; NULL for rank 0 or out of range). */
DF11_API size_t df11_tensor_rank(const df11_model* model, size_t tensor);
DF11_API const uint64_t* df11_tensor_shape(const df11_model* model, size_t tensor);
/* Bytes of the decoded tensor (what df11_decode_tensor writes); 0 if out of range. */
DF11_API uint64_t df11_tensor_byte_size(const df11_model* model, size_t tensor);
/* The group the tensor is a member of, or (size_t)-1 for a tensor stored raw. */
DF11_API size_t df11_tensor_group(const df11_model* model, size_t tensor);
/* For a member: its first weight within the group's decoded output (members are
 * concatenated in order); 0 for a raw tensor. */
DF11_API uint64_t df11_tensor_group_offset(const df11_model* model, size_t tensor);

/* The group's module path ("model.layers.3"); NULL if out of range. */
DF11_API const char* df11_group_name(const df11_model* model, size_t group);
/* The shard file holding it ("model-00001-of-00002.safetensors"); in a published folder whose
 * group spans shards, the one holding its encoded_exponent. */
DF11_API const char* df11_group_file(const df11_model* model, size_t group);
/* BF16 weights it decodes to (its decoded size is twice this, in bytes). */
DF11_API uint64_t df11_group_element_count(const df11_model* model, size_t group);
/* Its member tensors: count, and the tensor index of member k (in concatenation order). A
 * group that codes a copy of another tensor has none (see df11_group_alias_of). */
DF11_API size_t df11_group_member_count(const df11_model* model, size_t group);
DF11_API size_t df11_group_member(const df11_model* model, size_t group, size_t k);
/* A group that codes a copy of another tensor of the model (spec/DF11.md 5.3, alias: a tied
 * lm_head coded again as the group "lm_head" for the dfloat11 loader): the index of the
 * tensor it copies, whose bytes its decoded output equals; (size_t)-1 for any other group
 * or out of range. df11_group_alias_name() gives the name the copy has for the loader
 * ("lm_head.weight"; NULL for any other group). */
DF11_API size_t df11_group_alias_of(const df11_model* model, size_t group);
DF11_API const char* df11_group_alias_name(const df11_model* model, size_t group);

/* The stored (coded) arrays of a group, spec/DF11.md section 3.2. */
typedef enum df11_group_part {
  DF11_PART_LUTS = 0,             /* U8 [n_luts, 256] */
  DF11_PART_ENCODED_EXPONENT = 1, /* U8 [n_bytes], the bitstream */
  DF11_PART_SIGN_MANTISSA = 2,    /* U8 [n_elements] */
  DF11_PART_OUTPUT_POSITIONS = 3, /* U8 [4 * (n_blocks + 1)] */
  DF11_PART_GAPS = 4,             /* U8 [5 * 512 * n_blocks / 8, rounded up] */
  DF11_PART_SPLIT_POSITIONS = 5   /* I64 [n_members - 1] (the CUDA decode does not need it) */
} df11_group_part;

/* Where part `part` of group `group` lies in its mapped shard: *data (read-only, valid until
 * close) and *bytes. An engine uploads these to the GPU once (see df11_cuda_plan_create).
 * Sum over the parts = the group's stored bytes. DF11_ERROR_INVALID_ARGUMENT out of range. */
DF11_API df11_status df11_group_part_bytes(df11_model* model, size_t group, df11_group_part part,
                                           const void** data, size_t* bytes);

/* ---- Decoding on the CPU -------------------------------------------------------------
 * Both check everything spec/DF11.md section 4 asks a decoder to check and report a corrupt
 * stream as DF11_ERROR_CORRUPT_DATA (or BAD_GAP / BAD_OUTPUT_POSITIONS) naming the group and
 * block; nothing is read or written out of bounds whatever the file holds. On failure the
 * contents of `out` are unspecified. The output is little-endian raw bits (BF16 patterns for
 * members), exactly the original tensor's bytes. They run in parallel on oneTBB's arena of
 * the calling thread (all cores by default), allocate a few kilobytes, and may be called
 * concurrently on one handle with distinct outputs. */

/* Decodes tensor `tensor` into out[0 .. out_bytes): out_bytes must equal
 * df11_tensor_byte_size(). A member decodes only the blocks holding it; a raw tensor is a
 * copy. `out` needs no alignment. */
DF11_API df11_status df11_decode_tensor(df11_model* model, size_t tensor, void* out,
                                        size_t out_bytes);

/* Decodes the whole group `group`: out_bytes must equal 2 * df11_group_element_count(). */
DF11_API df11_status df11_decode_group(df11_model* model, size_t group, void* out,
                                       size_t out_bytes);

/* Decodes weights [first, first + out_bytes / 2) of group `group` (in the group's order, as
 * df11_decode_group writes them) into out: only the blocks holding them are decoded, so that a
 * large group (an embedding, an output head) can be used in bounded-memory parts, or a few of
 * its rows read. Each decoded block's stream is checked as df11_decode_group checks it; the
 * members' checksums are not (a range rarely holds a member whole): an engine checks the
 * stored bytes once with df11_group_check_stored. DF11_ERROR_INVALID_ARGUMENT for a range
 * outside the group, an odd out_bytes or an output that is not 2-byte aligned. */
DF11_API df11_status df11_decode_group_range(df11_model* model, size_t group, uint64_t first,
                                             void* out, size_t out_bytes);

/* A team of the caller's threads for the CPU decodes, such as the one its framework runs its
 * own CPU kernels on: run(fn, arg, threads, 0) must call fn(arg) once on each of `threads`
 * threads, the calling thread among them, and return when all have returned. That is the
 * contract of GNU OpenMP's GOMP_parallel (LLVM's and Intel's OpenMP runtimes export it too),
 * so an engine whose framework computes on OpenMP threads (PyTorch's CPU kernels) can pass
 * that runtime's GOMP_parallel and its thread count. fn never lets an exception out. */
typedef void (*df11_team_run)(void (*fn)(void*), void* arg, unsigned threads, unsigned flags);

/* df11_decode_group and df11_decode_group_range with the blocks shared out among a caller's
 * team (df11_team_run) instead of oneTBB's threads: `threads` threads through run(), or the
 * calling thread alone if run is NULL or threads < 2. Same checks, output and errors. Where the
 * framework's threads keep the cores busy between its kernels (OpenMP threads spin for a
 * while after each parallel region), a decode on oneTBB's threads competes with them for the
 * cores; on their team it uses them. */
DF11_API df11_status df11_decode_group_on(df11_model* model, size_t group, void* out,
                                          size_t out_bytes, df11_team_run run, unsigned threads);
DF11_API df11_status df11_decode_group_range_on(df11_model* model, size_t group, uint64_t first,
                                                void* out, size_t out_bytes, df11_team_run run,
                                                unsigned threads);

/* Checks the bytes group `group` stores against the checksums df11's metadata records for them
 * (spec 5.2: the xxh3 of each of the group's six stored tensors), without decoding: DF11_OK, or
 * DF11_ERROR_CORRUPT_DATA naming the file, the stored tensor and the group. An engine that
 * decodes on a GPU calls it at load for every group, since the GPU decoder checks the streams'
 * structure but not the members' checksums: with the stored bytes intact, the decode gives
 * exactly the original bits. A folder published by the dfloat11 tools records no checksums:
 * DF11_OK without reading. Reads the group's stored bytes once (one thread; no allocation);
 * may be called concurrently on one handle for different groups. */
DF11_API df11_status df11_group_check_stored(df11_model* model, size_t group);

/* ---- Decoding on a CUDA GPU ----------------------------------------------------------
 * For engines that keep the coded groups in device memory and decode them just before use,
 * on their own stream, into device memory they own (two-phase, like CUB):
 *
 *   df11_cuda_plan_create(model, groups, n, dev, &plan);   host only: validates, sizes
 *   size_t ws = df11_cuda_plan_workspace_bytes(plan);      phase 1: ask
 *   cudaMalloc(&d_ws, ws);                                  the caller's memory
 *   df11_cuda_workspace_init(plan, d_ws, ws, stream);       once per workspace
 *   df11_cuda_decode(plan, d_ws, ws, stream);               phase 2: enqueue, per forward pass
 *   df11_cuda_status_sync(plan, d_ws, stream);              or the deferred pair below
 *
 * On a build without CUDA (df11_has_cuda() == 0) every function here returns
 * DF11_ERROR_UNSUPPORTED (plans cannot be created). `stream` is a cudaStream_t passed as
 * void* (NULL is the legacy default stream). */

typedef struct df11_cuda_plan df11_cuda_plan; /* opaque */

/* 1 if this library was built with the CUDA decoder, else 0. Does not touch a GPU. */
DF11_API int df11_has_cuda(void);

/* The device copies of one group's parts (the bytes of df11_group_part_bytes(), uploaded by
 * the caller) and where its 2 * n_elements bytes of BF16 output go. Pointers may have any
 * alignment; 16-byte aligned sign_mantissa and out, 8-byte aligned encoded_exponent and
 * 4-byte aligned output_positions are faster. All are the caller's and must stay valid
 * while a decode using them runs. d_out may be NULL: the plan then serves
 * df11_cuda_decode_rows only (df11_cuda_decode refuses it). */
typedef struct df11_cuda_group {
  const void* d_luts;
  const void* d_encoded_exponent;
  const void* d_sign_mantissa;
  const void* d_output_positions;
  const void* d_gaps;
  void* d_out;
} df11_cuda_group;

/* Plans the decode of groups[0 .. n_groups) of `model` (group indices, any order, each at
 * most once) with their device buffers dev[0 .. n_groups). Validates every group on the host
 * and sizes the launch for the current device; no device memory is touched, nothing
 * synchronises. Outputs of one plan must not overlap. *out receives a plan handle in every
 * case but out of memory; on failure it only reports the error and must still be destroyed.
 * Errors name the file and group. The calling thread's current device is the plan's. */
DF11_API df11_status df11_cuda_plan_create(df11_model* model, const size_t* groups, size_t n_groups,
                                           const df11_cuda_group* dev, df11_cuda_plan** out);
/* Frees the plan (host memory only; the caller's device buffers are untouched). NULL ok. */
DF11_API void df11_cuda_plan_destroy(df11_cuda_plan* plan);
/* The plan's latest failure, as df11_model_errmsg / df11_model_errcode. */
DF11_API const char* df11_cuda_plan_errmsg(const df11_cuda_plan* plan);
DF11_API df11_status df11_cuda_plan_errcode(const df11_cuda_plan* plan);

/* Bytes of device workspace a decode needs: 16 per group (its status record) + 8 per kernel
 * launch, one launch per 256 groups (a counter through which the launch's thread blocks share
 * its last blocks). Smaller workspaces (such as the 16 per group that earlier versions asked
 * for) are refused with DF11_ERROR_INVALID_ARGUMENT, never overrun. */
DF11_API size_t df11_cuda_plan_workspace_bytes(const df11_cuda_plan* plan);

/* Enqueues the zeroing of a workspace on `stream`. Call once for each workspace (fresh
 * memory: a workspace never initialised may report stale garbage) before its first decode.
 * No synchronisation. A plan may use several workspaces (double buffering), and a workspace
 * may serve several plans in turn; each decode's report stays readable until the next decode
 * into the same workspace. */
DF11_API df11_status df11_cuda_workspace_init(df11_cuda_plan* plan, void* d_workspace,
                                              size_t workspace_bytes, void* stream);

/* Enqueues the decode of every group of the plan on `stream`: one kernel launch per 256
 * groups, no allocation, no copy, no synchronisation. `d_workspace` receives this decode's
 * per-group status; it must not serve two decodes in flight at once. The plan remembers its
 * latest decode into each of the last 64 workspaces it used; the first decode of a plan into
 * a workspace (and the first after 2^32 - 1 decodes in the process) also enqueues the zeroing
 * of its records. Returns DF11_ERROR_CUDA if the launch fails; a corrupt stream is reported
 * through the workspace.
 *
 * CUDA graphs: the call may be captured (stream capture), with df11_cuda_status_copy after it,
 * and the graph replayed any number of times. Each launch leaves the workspace's pool
 * counters as it found them (at 0), so a replay, which repeats the capture's launch and its
 * launch epoch, decodes every block; its records carry the capture's epoch, which the
 * captured status copy notes, so each replay's copy reports that replay. Between replays the
 * workspace must not serve another decode of this plan made outside the graph (a later
 * epoch would hide the replays' records from df11_cuda_status_sync; the copies still read
 * right). */
DF11_API df11_status df11_cuda_decode(df11_cuda_plan* plan, void* d_workspace,
                                      size_t workspace_bytes, void* stream);

/* Enqueues on `stream` the decode of rows d_ids[0 .. n_ids) of group i (its position in the
 * plan's `groups`), whose weights are seen as a matrix of rows of `row_elements` weights
 * (row_elements must divide the group's element count): an embedding lookup that decodes
 * only the rows it needs. Row r of the output, d_out[r * row_elements ...], receives the BF16
 * patterns of row d_ids[r]. d_ids: n_ids int64 row ids in device memory (repeats allowed);
 * d_out: n_ids * row_elements * 2 bytes of device memory, the caller's (16-byte aligned with
 * row_elements a multiple of 8 is faster). One kernel launch of n_ids thread blocks (each
 * decodes the one or few 4096-byte stream blocks that hold its row): no allocation, no copy,
 * no synchronisation. An id outside [0, rows) gets a row of zeros and is reported through the
 * workspace (DF11_ERROR_INVALID_ARGUMENT from df11_cuda_status_sync / df11_cuda_group_status,
 * naming its position in d_ids); a corrupt stream is reported as by df11_cuda_decode. Nothing
 * outside d_out is written. The workspace rules are df11_cuda_decode's, and this counts as a
 * decode of the plan into it (the status read next reports this call).
 * CUDA graphs: capturable like df11_cuda_decode; a replay decodes the ids that d_ids then
 * holds (the pointer and n_ids are fixed by the capture).
 * DF11_ERROR_INVALID_ARGUMENT for a NULL d_ids or d_out with n_ids > 0, row_elements 0 (these
 * checked first, also without CUDA), a bad group index or row width, or a small workspace. */
DF11_API df11_status df11_cuda_decode_rows(df11_cuda_plan* plan, size_t i, const int64_t* d_ids,
                                           size_t n_ids, size_t row_elements, void* d_out,
                                           void* d_workspace, size_t workspace_bytes, void* stream);

/* Decodes spans of group i of the plan into d_out, one after the other: span s, the group's
 * weights [offsets[s], offsets[s] + counts[s]), lands after the weights of spans 0 .. s-1.
 * For an engine's layer made of members of a group (q, k and v of a block, in the engine's
 * order): each 4096-byte stream block covering a span is decoded once (one at a span's edge by
 * at most two thread blocks), spread over the GPU in one kernel launch. offsets, counts: n_spans
 * (at most DF11_CUDA_MAX_DECODE_SPANS) host values, read before the call returns. d_out:
 * 2 * (sum of counts) bytes of device memory, the caller's (16-byte aligned, with offsets and
 * counts multiples of 8, is faster). No allocation, no copy, no synchronisation; nothing outside
 * d_out is written; a corrupt stream is reported as by df11_cuda_decode. The workspace rules
 * are df11_cuda_decode's, and this counts as a decode of the plan into it.
 * CUDA graphs: capturable like df11_cuda_decode (the spans are fixed by the capture).
 * DF11_ERROR_INVALID_ARGUMENT for NULL offsets or counts with n_spans > 0, too many spans, a
 * NULL d_out with weights to write (these checked first, also without CUDA), a span outside
 * the group, a bad group index or a small workspace. */
#define DF11_CUDA_MAX_DECODE_SPANS 8
DF11_API df11_status df11_cuda_decode_spans(df11_cuda_plan* plan, size_t i, const uint64_t* offsets,
                                            const uint64_t* counts, size_t n_spans, void* d_out,
                                            void* d_workspace, size_t workspace_bytes,
                                            void* stream);

/* Waits for `stream` (cudaStreamSynchronize) and reports the latest decode into
 * `d_workspace`: DF11_OK, or DF11_ERROR_CORRUPT_DATA (BAD_GAP, BAD_OUTPUT_POSITIONS) naming
 * the first corrupt group and block in the plan's message. */
DF11_API df11_status df11_cuda_status_sync(df11_cuda_plan* plan, const void* d_workspace,
                                           void* stream);

/* Deferred status, without waiting for the stream: df11_cuda_status_copy() enqueues on
 * `stream` a copy of the workspace's records into the caller's host buffer `h_status` of
 * df11_cuda_plan_status_bytes() bytes (page-locked memory makes it asynchronous: the device
 * writes it with a small kernel when the plan's device is the current one, which costs the
 * stream less than a copy) and notes in that buffer which decode it belongs to. Once the caller
 * knows the copy is done (its own event or a later sync), df11_cuda_group_status() reads group i's
 * result from the buffer: no CUDA call, any thread, the buffer alone is enough (the plan only names
 * the group). */
DF11_API size_t df11_cuda_plan_status_bytes(const df11_cuda_plan* plan);
DF11_API df11_status df11_cuda_status_copy(df11_cuda_plan* plan, const void* d_workspace,
                                           void* h_status, size_t status_bytes, void* stream);
/* Group i (position in the plan's `groups`) of a copied status buffer: DF11_OK or the error,
 * with the message in the plan's message. DF11_ERROR_INVALID_ARGUMENT if the buffer was not
 * filled by df11_cuda_status_copy for this plan. */
DF11_API df11_status df11_cuda_group_status(df11_cuda_plan* plan, const void* h_status,
                                            size_t status_bytes, size_t i);
/* df11_cuda_status_copy() for n plans of one device in one call: plan k's latest launch into
 * d_workspaces[k] is copied to h_status + k * slot_bytes, slot_bytes being at least every
 * plan's df11_cuda_plan_status_bytes(). With h_status n * slot_bytes bytes of one page-locked
 * allocation, one kernel launch copies every plan's records (a model that decodes its blocks
 * one after another copies their statuses once per forward pass); other host memory takes a
 * copy per plan. Each slot is then read as df11_cuda_status_copy()'s buffer. An error's message
 * is in plans[0]'s. */
DF11_API df11_status df11_cuda_status_copy_many(df11_cuda_plan* const* plans,
                                                const void* const* d_workspaces, size_t n,
                                                void* h_status, size_t slot_bytes, void* stream);
/* Every group of every plan in such a copy (once the caller knows it is done): DF11_OK, or the
 * first error, *failed set to its plan's index and the message in that plan's message, as
 * df11_cuda_group_status() gives it. No CUDA call. */
DF11_API df11_status df11_cuda_group_status_many(df11_cuda_plan* const* plans, size_t n,
                                                 const void* h_status, size_t slot_bytes,
                                                 size_t* failed);

/* ======================================================================================
 * Experimental API: define DF11_EXPERIMENTAL before including this header. May change or
 * go away in any release, minor or patch; not covered by the ABI policy.
 * ====================================================================================== */
#ifdef DF11_EXPERIMENTAL

/* df11_cuda_decode, then df11_cuda_status_copy of that decode into h_status, in one call:
 * what an engine enqueues just before a block runs (one foreign call per block from Python's
 * ctypes). Same arguments, rules and costs as the two calls; the copy is not enqueued if the
 * decode fails to launch. Capturable as they are. */
DF11_API df11_status df11_cuda_decode_and_copy_status(df11_cuda_plan* plan, void* d_workspace,
                                                      size_t workspace_bytes, void* h_status,
                                                      size_t status_bytes, void* stream);

/* df11_cuda_decode_rows, then df11_cuda_status_copy of that decode into h_status, in one
 * call (what an engine's embedding lookup enqueues). Same rules and costs as the two calls;
 * capturable as they are. */
DF11_API df11_status df11_cuda_decode_rows_and_copy_status(df11_cuda_plan* plan, size_t i,
                                                           const int64_t* d_ids, size_t n_ids,
                                                           size_t row_elements, void* d_out,
                                                           void* d_workspace,
                                                           size_t workspace_bytes, void* h_status,
                                                           size_t status_bytes, void* stream);

/* Enqueues on `stream` the decode of the rows of group i (its position in the plan's
 * `groups`) that d_mask selects, the group's weights seen as a matrix of rows of
 * `row_elements` weights (row_elements must divide the group's element count; at most
 * DF11_CUDA_MAX_SELECTED_ROWS rows): row r is decoded into d_out[r * row_elements ...] where
 * d_mask[r] != 0, and the other rows of d_out are not written. For a mixture of experts'
 * weights (one row per expert): a step decodes only the experts its tokens were routed to,
 * the routing never read on the host. d_mask: one int32 per row, in device memory, read when
 * the kernel runs; d_out: the whole matrix, 2 * (element count) bytes of device memory, the
 * caller's (16-byte aligned with row_elements a multiple of 8 is faster). expected_rows: how
 * many rows a call typically selects (clamped to 1 .. rows): the GPU's resident thread blocks
 * are shared among that many rows, and the thread blocks of an unselected row return at once.
 * One kernel launch; no allocation, no copy, no synchronisation. Status, workspace rules and
 * CUDA graphs as df11_cuda_decode_rows (a replay reads the mask d_mask then holds).
 * DF11_ERROR_INVALID_ARGUMENT for a NULL d_mask or d_out, row_elements 0 (these checked first,
 * also without CUDA), a width that does not divide the group, too many rows, a bad group index
 * or a small workspace. */
#define DF11_CUDA_MAX_SELECTED_ROWS 65535
DF11_API df11_status df11_cuda_decode_selected_rows(df11_cuda_plan* plan, size_t i,
                                                    const int32_t* d_mask, size_t row_elements,
                                                    size_t expected_rows, void* d_out,
                                                    void* d_workspace, size_t workspace_bytes,
                                                    void* stream);

/* A coded group that lives on the GPU only (df11_tools_cuda_encode of libdf11-tools writes
 * one there), described by the host copies of its small parts and the sizes of its bulk:
 * luts, output_positions and split_positions as df11_group_part_bytes gives them (host
 * memory, read during df11_cuda_plan_create_parts only; split_positions may be NULL with 0
 * bytes), and the byte sizes of the encoded_exponent, sign_mantissa and gaps parts that only
 * the device holds. `name` names the group in messages (NULL: "group #i"). */
typedef struct df11_group_host_parts {
  const char* name;
  const void* luts;
  size_t luts_bytes;
  const void* output_positions;
  size_t output_positions_bytes;
  const void* split_positions;
  size_t split_positions_bytes;
  uint64_t encoded_exponent_bytes;
  uint64_t sign_mantissa_bytes;
  uint64_t gaps_bytes;
} df11_group_host_parts;

/* df11_cuda_plan_create for groups that belong to no folder: host[i] describes group i and
 * dev[i] holds its device parts. Validates each group on the host as df11_cuda_plan_create
 * does a folder's (spec 3.8: tables, output positions, split positions, sizes), with `what`
 * (NULL: "coded groups") leading every message; the decode then checks the streams as it
 * always does. The plan serves df11_cuda_decode, the spans and rows decodes and the status
 * calls; it has no members for the fused GEMV (df11_cuda_gemv_matrix_count 0). *out as
 * df11_cuda_plan_create: a handle in every case but out of memory. */
DF11_API df11_status df11_cuda_plan_create_parts(const df11_group_host_parts* host, size_t n_groups,
                                                 const df11_cuda_group* dev, const char* what,
                                                 df11_cuda_plan** out);

/* The launch the plan makes, for tuning and profiling: thread blocks per launch, dynamic
 * shared memory per thread block (bytes), and 1 if the compact kernel configuration was
 * chosen (decoder/cuda/NOTES.md). DF11_ERROR_UNSUPPORTED without CUDA. */
DF11_API df11_status df11_cuda_plan_launch_info(const df11_cuda_plan* plan, uint32_t* grid,
                                                uint32_t* shared_bytes, int* compact);

/* df11_group_check_stored for groups[0 .. n_groups) where their stored bytes already lie on
 * the GPU: dev[i] holds group groups[i]'s five device parts as df11_cuda_plan_create takes
 * them (d_out unused), each 16-byte aligned. The parts are hashed on the current device in one
 * launch on `stream` (XXH3, decoder/cuda's cuda_hash.h), the split positions on the host;
 * synchronises the stream. DF11_OK, or DF11_ERROR_CORRUPT_DATA naming the file, the stored
 * tensor and the group, for the first group of the list whose bytes differ. Groups whose
 * folder records no checksums (published by the dfloat11 tools) are not read. d_scratch:
 * df11_cuda_check_stored_scratch_bytes(n_groups) bytes of device memory, 16-byte aligned.
 * DF11_ERROR_UNSUPPORTED without CUDA. */
DF11_API size_t df11_cuda_check_stored_scratch_bytes(size_t n_groups);
DF11_API df11_status df11_cuda_check_stored(df11_model* model, const size_t* groups,
                                            const df11_cuda_group* dev, size_t n_groups,
                                            void* d_scratch, size_t scratch_bytes, void* stream);

/* ---- Fused decode + GEMV on a CUDA GPU -------------------------------------------------
 * y = W x for every member of every group of a plan, straight from the coded buffers the
 * plan was made with: the decoded weights are never written to memory (batch 1 to 16, BF16
 * x and y, FP32 accumulation). For engines at batch 1: on the H100 it is faster than
 * df11_cuda_decode + a BF16 GEMV, but not from batch 2 on, and it stays slower than a GEMV
 * on BF16 weights, because the decode alone costs more than reading BF16 (BENCHMARKS.md,
 * "GPU GEMV").
 *
 *   size_t n = df11_cuda_gemv_matrix_count(plan);          one matrix per coded member
 *   df11_cuda_gemv_matrix_info(plan, i, &m[i], &name);     its rows, cols (and tensor name)
 *   ... the caller sets m[i].d_x and m[i].d_y ...
 *   df11_cuda_gemv_workspace_bytes(plan, m, n, batch, &ws);       phase 1: ask (checks m)
 *   cudaMalloc(&d_ws, ws);  df11_cuda_workspace_init(plan, d_ws, ws, stream);   once
 *   df11_cuda_decode_gemv(plan, m, n, batch, d_ws, ws, stream);   phase 2: per token
 *   df11_cuda_status_sync(plan, d_ws, stream);             or the deferred pair, as for decode
 *
 * Exactness: every output is the FP32 sum of w * x in a fixed order (decoder/cuda/NOTES.md,
 * "Fused decode+GEMV"), rounded once to BF16. df11_cuda_reference_gemv() computes exactly
 * that from BF16 weights, so the fused output equals it bit for bit whenever the groups
 * decode to those weights: the same model run in BF16 through the reference and in DF11
 * through the fused kernel gives identical outputs. It is not bit-equal to cuBLAS (another
 * order). Without CUDA every function here returns DF11_ERROR_UNSUPPORTED (count 0). */

/* One member's matrix W, row-major [rows, cols] (the member's weights in order): rows is the
 * tensor's shape[0] (its output features), cols the product of the rest. x is BF16
 * [cols, batch] and y BF16 [rows, batch], both row-major (x[c * batch + j]); any alignment
 * (16-byte aligned x is faster). y must not overlap any x or another y. */
typedef struct df11_gemv_matrix {
  uint32_t rows;
  uint32_t cols;
  const void* d_x;
  void* d_y;
} df11_gemv_matrix;

/* Matrices a fused launch takes: the coded members of the plan's groups, in the plan's group
 * order and each group's concatenation order. This counts every coded member, a tied copy
 * (spec 5.3 alias) included, so it can exceed the sum of df11_group_member_count(). 0 for a
 * plan that failed or a build without CUDA. */
DF11_API size_t df11_cuda_gemv_matrix_count(const df11_cuda_plan* plan);

/* Matrix i's shape: sets out->rows and out->cols (d_x and d_y to NULL) and, if `name` is not
 * NULL, *name to the member's tensor name (valid until the plan is destroyed). */
DF11_API df11_status df11_cuda_gemv_matrix_info(df11_cuda_plan* plan, size_t i,
                                                df11_gemv_matrix* out, const char** name);

/* Bytes of device workspace a fused launch of these matrices at this batch needs into *out:
 * the plan's status records first (what df11_cuda_status_* read), then partial sums. Checks
 * the arguments as df11_cuda_decode_gemv does: DF11_ERROR_INVALID_ARGUMENT for NULL
 * pointers, a batch outside 1..16, or matrices that are not the plan's (count, order,
 * shape), naming the matrix and its tensor; DF11_ERROR_RESOURCE_LIMIT if the kernel does
 * not fit the device. Host only; nothing synchronises. */
DF11_API df11_status df11_cuda_gemv_workspace_bytes(df11_cuda_plan* plan,
                                                    const df11_gemv_matrix* matrices,
                                                    size_t n_matrices, uint32_t batch, size_t* out);

/* Enqueues y = W x for every matrix on `stream`, decoding W from the plan's groups: two
 * kernel launches per 64 groups (256 members), no allocation, no copy, no synchronisation.
 * The workspace (at least df11_cuda_gemv_workspace_bytes(), initialised once by
 * df11_cuda_workspace_init with its whole size) must not serve two launches in flight at
 * once; it records this launch's status exactly as df11_cuda_decode does (same epochs: a
 * workspace may alternate decodes and fused launches, of this plan or others), read with
 * df11_cuda_status_sync or df11_cuda_status_copy. A stream that does not decode as its
 * gaps and output positions declare is reported there (y is then unspecified; nothing
 * outside the described arrays is touched); a corruption that still decodes consistently,
 * to other weights, is only caught by the checksums of the CPU decode (df11_decode_*), as
 * for df11_cuda_decode. The plan's d_out buffers are not used. DF11_ERROR_CUDA if a launch
 * fails. */
DF11_API df11_status df11_cuda_decode_gemv(df11_cuda_plan* plan, const df11_gemv_matrix* matrices,
                                           size_t n_matrices, uint32_t batch, void* d_workspace,
                                           size_t workspace_bytes, void* stream);

/* The reference: y = W x for BF16 W (d_w, row-major [m->rows, m->cols], device memory, any
 * alignment) in the fused kernel's accumulation order. `plan` is any created plan of the
 * current device; it only receives the error message. Its workspace (*out bytes, no
 * initialisation) holds partial sums. Two kernel launches on `stream`, nothing else. */
DF11_API df11_status df11_cuda_reference_gemv_workspace_bytes(df11_cuda_plan* plan,
                                                              const df11_gemv_matrix* m,
                                                              uint32_t batch, size_t* out);
DF11_API df11_status df11_cuda_reference_gemv(df11_cuda_plan* plan, const void* d_w,
                                              const df11_gemv_matrix* m, uint32_t batch,
                                              void* d_workspace, size_t workspace_bytes,
                                              void* stream);

/* ---- Execution layout on a CUDA GPU (spec/EXEC_LAYOUT.md) ------------------------------
 * Lossless and faster than BF16 at small batch: each coded member of a group is transcoded at
 * load time into a blob of 12.01 bits per weight (BF16 is 16, DF11 about 10.8), kept resident,
 * and multiplied from directly: Y = X W^T for 1 to 32 rows of X (BF16 in and out, FP32
 * accumulation, BF16 tensor cores). Against torch's BF16 GEMM on the original weights it takes
 * 0.89x the time at 1 row and 0.95x at 2-8 on an H200 (BENCHMARKS.md, "Execution layout"). Above
 * 32 rows, decode the blobs to BF16 (df11_cuda_exec_to_bf16) and use a BF16 GEMM. Memory:
 * about 1.11x the DF11 bytes (12.01 against 10.8 bits), 0.75x BF16.
 *
 *   df11_cuda_exec_workspace_bytes(model, g, &n, &ws);          host: members, scratch size
 *   cudaMalloc(&d_ws, ws);                                       scratch: the group's BF16
 *   df11_cuda_exec_measure(model, g, &dev, d_ws, ws, stream, m, names, n);   synchronises
 *   for each k: cudaMalloc(&p, m[k].bytes); m[k].d_blob = p;     the caller's memory
 *   df11_cuda_exec_pack(model, g, d_ws, ws, m, n, stream);      no sync; d_ws may go after it
 *   ... per forward pass ...
 *   df11_cuda_exec_gemm(model, gemms, n, batch, d_st, DF11_EXEC_STATUS_BYTES, stream);
 *   df11_cuda_exec_status_sync(model, d_st, stream);            when the caller wants to know
 *
 * Exactness: every output of df11_cuda_exec_gemm is the BF16 rounding of a fixed sequence of
 * tensor-core products (spec/EXEC_LAYOUT.md section 6); df11_cuda_exec_reference_gemm runs the
 * same sequence on BF16 weights, so a BF16 model and its DF11 model give identical outputs
 * through them on one GPU. Row j of Y depends only on W and row j of X at every batch of 1-64
 * rows; at 65-256 rows an sm_90a build on a Hopper GPU uses another fixed sequence (section
 * 6), which the reference follows. Not bit-equal to cuBLAS (another order). The blobs
 * decode to the original weights bit for bit.
 *
 * Errors: messages go to the model handle (df11_model_errmsg), which may be NULL for the
 * per-pass calls (then only the code). Without CUDA every function returns
 * DF11_ERROR_UNSUPPORTED. `stream` is a cudaStream_t as void*. */

#define DF11_EXEC_STATUS_BYTES 16 /* the status record of a gemm / to_bf16 call */
/* Rows of X of df11_cuda_exec_gemm(_ex): 1-32 run the strip kernels, 33-256 the wide kernel
 * (the same products in the same order, so the same outputs), except 65-256 on an sm_90a build
 * on a Hopper GPU: the warpgroup kernel. Which is faster than decoding the blob to BF16 and a
 * cuBLAS GEMM, per GPU and batch: decoder/cuda/EXEC_KERNEL.md. */
#define DF11_EXEC_MAX_BATCH 256

/* One member's blob in device memory (the caller's; 16-byte aligned, `bytes` long) and its
 * shape: W is [rows, cols] row-major as the member is stored (rows = shape[0]). */
typedef struct df11_exec_matrix {
  const void* d_blob;
  size_t bytes;
  uint32_t rows;
  uint32_t cols;
  uint32_t n_exceptions;
} df11_exec_matrix;

/* Group `group`'s coded members (aliases included, in concatenation order: the blobs a measure
 * and a pack take) into *n_matrices, and the device workspace its transcode needs into
 * *workspace_bytes (2 bytes per weight of the group, its only BF16 copy, plus a little).
 * Host only. */
DF11_API df11_status df11_cuda_exec_workspace_bytes(df11_model* model, size_t group,
                                                    size_t* n_matrices, size_t* workspace_bytes);

/* Decodes the group from its device copy `dev` (dev->d_out is not used) into the workspace
 * (256-byte aligned), checks the decode and measures each member: out[k] gets rows, cols,
 * n_exceptions and bytes (d_blob NULL); names[k] (if names is not NULL) the member's tensor
 * name, valid until df11_model_close. n must be the count df11_cuda_exec_workspace_bytes gave.
 * Synchronises `stream` (the sizes are needed to allocate the blobs). A stream that does not
 * decode is DF11_ERROR_CORRUPT_DATA (or BAD_GAP, BAD_OUTPUT_POSITIONS) naming the group. */
DF11_API df11_status df11_cuda_exec_measure(df11_model* model, size_t group,
                                            const df11_cuda_group* dev, void* d_workspace,
                                            size_t workspace_bytes, void* stream,
                                            df11_exec_matrix* out, const char** names, size_t n);

/* Enqueues the packing of the measured members into m[k].d_blob (each at least m[k].bytes,
 * 16-byte aligned), from the workspace the measure left (unchanged since). No allocation, no
 * sync. The blobs are byte for byte what the CPU reference encoder writes. */
DF11_API df11_status df11_cuda_exec_pack(df11_model* model, size_t group, void* d_workspace,
                                         size_t workspace_bytes, const df11_exec_matrix* m,
                                         size_t n, void* stream);

/* BF16 weights already in device memory, straight into the execution layout, with no DF11
 * group in between: a tensor-parallel rank's slice of a weight, or a weight an engine's loader
 * built. The blobs are byte for byte those the group calls above (and the CPU reference
 * encoder) give for the same weights.
 *
 *   df11_cuda_exec_bf16_workspace_bytes(model, src, n, &ws);    host only
 *   df11_cuda_exec_bf16_measure(model, src, n, d_ws, ws, stream, m);   synchronises
 *   for each k: m[k].d_blob = the caller's m[k].bytes (16-byte aligned)
 *   df11_cuda_exec_bf16_pack(model, src, n, d_ws, ws, m, stream);      no sync
 *
 * `model` may be NULL: it only receives the messages (df11_model_errmsg). The sources must not
 * change between the measure and the pack, nor before the pack has run (stream order). */
typedef struct df11_exec_source {
  const void* d_w; /* rows * cols BF16, row-major, device memory, any alignment */
  uint32_t rows;
  uint32_t cols;
} df11_exec_source;

/* The device workspace (256-byte aligned) the measure and pack of these n sources need: a few
 * bytes per 4096 weights. DF11_ERROR_INVALID_ARGUMENT for an empty or oversized shape. */
DF11_API df11_status df11_cuda_exec_bf16_workspace_bytes(df11_model* model,
                                                         const df11_exec_source* src, size_t n,
                                                         size_t* workspace_bytes);

/* Measures each source: out[k] gets rows, cols, n_exceptions and bytes (d_blob NULL).
 * Synchronises `stream`. DF11_ERROR_UNCODABLE for a matrix with 2^32 or more exceptions. */
DF11_API df11_status df11_cuda_exec_bf16_measure(df11_model* model, const df11_exec_source* src,
                                                 size_t n, void* d_workspace,
                                                 size_t workspace_bytes, void* stream,
                                                 df11_exec_matrix* out);

/* Enqueues the packing of each measured source into m[k].d_blob, from the workspace the
 * measure left. No allocation, no sync. */
DF11_API df11_status df11_cuda_exec_bf16_pack(df11_model* model, const df11_exec_source* src,
                                              size_t n, void* d_workspace, size_t workspace_bytes,
                                              const df11_exec_matrix* m, void* stream);

/* Enqueues the decode of each blob m[k] into d_out[k] (rows * cols BF16, row-major): one
 * kernel launch per 64 blobs after a 16-byte memset of the status record d_status
 * (DF11_EXEC_STATUS_BYTES, 16-byte aligned). No allocation, no sync. */
DF11_API df11_status df11_cuda_exec_to_bf16(df11_model* model, const df11_exec_matrix* m,
                                            void* const* d_out, size_t n, void* d_status,
                                            size_t status_bytes, void* stream);

/* One product Y = X W^T: X BF16 [batch, cols] row-major (torch's activations), Y BF16
 * [batch, rows] row-major; any alignment (16-byte aligned X with cols % 8 == 0 is faster). Y
 * must not overlap any X or another Y. */
typedef struct df11_exec_gemm {
  df11_exec_matrix w;
  const void* d_x;
  void* d_y;
} df11_exec_gemm;

/* Enqueues the n products at `batch` (1..DF11_EXEC_MAX_BATCH) rows: one kernel launch per 64
 * products after a 16-byte memset of d_status. No allocation, no sync. A blob whose exception
 * offsets disagree with its codes is reported by df11_cuda_exec_status_sync
 * (DF11_ERROR_CORRUPT_DATA); Y is then unspecified, and nothing outside the described buffers is
 * read or written. */
DF11_API df11_status df11_cuda_exec_gemm(df11_model* model, const df11_exec_gemm* gemms, size_t n,
                                         uint32_t batch, void* d_status, size_t status_bytes,
                                         void* stream);

/* Flags of the _ex calls below. DF11_EXEC_KEEP_STATUS: no memset of d_status before the
 * launch; its reports are added to what the record holds (the first corrupt (matrix, tile)
 * by matrix index within its call, and the union of the problems found), so one record
 * collects any number of calls until df11_cuda_exec_status_reset. An engine keeps one record
 * per call site that way and its per-token calls free of memsets (each one a node of a
 * captured CUDA graph). */
#define DF11_EXEC_KEEP_STATUS 1u

/* Enqueues the reset of the status record d_status (DF11_EXEC_STATUS_BYTES, 16-byte aligned):
 * two small memsets, no sync. A record that an _ex call with DF11_EXEC_KEEP_STATUS uses must
 * have been reset once (or written by a call without that flag). */
DF11_API df11_status df11_cuda_exec_status_reset(void* d_status, size_t status_bytes, void* stream);

/* df11_cuda_exec_gemm and df11_cuda_exec_to_bf16 with flags (0: exactly those calls). */
DF11_API df11_status df11_cuda_exec_gemm_ex(df11_model* model, const df11_exec_gemm* gemms,
                                            size_t n, uint32_t batch, void* d_status,
                                            size_t status_bytes, uint32_t flags, void* stream);
DF11_API df11_status df11_cuda_exec_to_bf16_ex(df11_model* model, const df11_exec_matrix* m,
                                               void* const* d_out, size_t n, void* d_status,
                                               size_t status_bytes, uint32_t flags, void* stream);

/* df11_cuda_exec_gemm_ex with every Y's row j at d_y + j * ld_y elements (ld_y at least each
 * product's rows; 0: each Y's own rows, as df11_cuda_exec_gemm_ex). The members of a fused
 * layer (q/k/v, gate/up: one input, products side by side) then write one [batch, ld_y]
 * output in one launch, each from its column offset (d_y = y + offset), with no copy after:
 *
 *   gemms[k].d_x = x;  gemms[k].d_y = y + 2 * (rows of the members before k);   (bytes)
 *   df11_cuda_exec_gemm_ld(model, gemms, n, batch, total rows, d_st, ..., flags, stream);
 *
 * The outputs are df11_cuda_exec_gemm_ex's, bit for bit. No element of a Y may be an element
 * of an X or of another Y. DF11_ERROR_INVALID_ARGUMENT for an ld_y below a product's rows. */
DF11_API df11_status df11_cuda_exec_gemm_ld(df11_model* model, const df11_exec_gemm* gemms,
                                            size_t n, uint32_t batch, uint32_t ld_y, void* d_status,
                                            size_t status_bytes, uint32_t flags, void* stream);

/* Waits for `stream` and reports the latest gemm or to_bf16 call into d_status (or, for a
 * record kept with DF11_EXEC_KEEP_STATUS, every call since its reset). */
DF11_API df11_status df11_cuda_exec_status_sync(df11_model* model, const void* d_status,
                                                void* stream);

/* The reference: Y = X W^T for BF16 W (d_w, [rows, cols] row-major, device memory) with the
 * products and order of df11_cuda_exec_gemm. One kernel launch, nothing else. */
DF11_API df11_status df11_cuda_exec_reference_gemm(df11_model* model, const void* d_w,
                                                   uint32_t rows, uint32_t cols, const void* d_x,
                                                   void* d_y, uint32_t batch, void* stream);

/* ---- Compact execution layout on a CUDA GPU (spec/EXEC_COMPACT.md) ----------------------
 * The 12-bit layout's geometry with each exponent a prefix codeword of at most 12 bits: about
 * 10.7 bits per weight (no more than DF11's), multiplied from directly with the products and
 * order of df11_cuda_exec_gemm, so its outputs equal df11_cuda_exec_reference_gemm's on the
 * same weights bit for bit. Each member is transcoded from its DF11 group on the GPU; the code
 * of each member is the caller's choice, from its exponent counts (libdf11-tools'
 * df11_tools_compact_lengths gives the reference encoder's, df11/df11_tools.h):
 *
 *   df11_cuda_compact_workspace_bytes(model, g, &n, &ws);     host: members, scratch size
 *   df11_cuda_compact_count(model, g, &dev, d_ws, ws, stream, counts, n);    syncs
 *   lengths[k] = a code for counts[k] (df11_tools_compact_lengths)
 *   df11_cuda_compact_measure(model, g, d_ws, ws, lengths, stream, m, names, n);   syncs
 *   for each k: m[k].d_blob = (m[k].bytes of the caller's memory, 16-byte aligned);
 *               m[k].d_table = (DF11_COMPACT_TABLE_BYTES, 16-byte aligned)
 *   df11_cuda_compact_pack(model, g, d_ws, ws, m, n, stream);   d_ws may go after it
 *   ... per forward pass: df11_cuda_compact_gemm_ex (1..DF11_COMPACT_MAX_BATCH rows), or
 *   df11_cuda_compact_to_bf16_ex and a BF16 GEMM ...
 *   df11_cuda_compact_status_sync(model, d_st, stream);        when the caller wants to know
 *
 * Status records are the execution layout's (DF11_EXEC_STATUS_BYTES, reset by
 * df11_cuda_exec_status_reset, kept with DF11_EXEC_KEEP_STATUS); a lane whose bits hold no
 * codeword, or whose codewords run past them, is reported as DF11_ERROR_CORRUPT_DATA by
 * df11_cuda_compact_status_sync. */

#define DF11_COMPACT_SYMBOLS 256
#define DF11_COMPACT_TABLE_BYTES 16384 /* a blob's decode table: 4,096 u32 */
#define DF11_COMPACT_MAX_BATCH 32      /* rows of X of df11_cuda_compact_gemm_ex */

/* One member's blob and its decode table in device memory (the caller's), and what the
 * measure found: bytes (the blob's total), rows, cols and the bits of its codeword stream. */
typedef struct df11_compact_matrix {
  const void* d_blob;
  const void* d_table;
  size_t bytes;
  uint64_t stream_bits;
  uint32_t rows;
  uint32_t cols;
} df11_compact_matrix;

/* As df11_cuda_exec_workspace_bytes, for the compact layout's transcode. Host only. */
DF11_API df11_status df11_cuda_compact_workspace_bytes(df11_model* model, size_t group,
                                                       size_t* n_matrices, size_t* workspace_bytes);

/* Decodes the group from its device copy `dev` into the workspace (256-byte aligned), checks
 * the decode, and writes each member's exponent counts (padding positions counted as exponent
 * 0, spec 4.1) to counts[k * DF11_COMPACT_SYMBOLS + e]. Synchronises `stream`. A stream that
 * does not decode is DF11_ERROR_CORRUPT_DATA (or BAD_GAP, BAD_OUTPUT_POSITIONS) naming the
 * group. */
DF11_API df11_status df11_cuda_compact_count(df11_model* model, size_t group,
                                             const df11_cuda_group* dev, void* d_workspace,
                                             size_t workspace_bytes, void* stream, uint64_t* counts,
                                             size_t n);

/* Measures each member with code lengths lengths[k * DF11_COMPACT_SYMBOLS + e] (0: exponent e
 * has no codeword) from the workspace df11_cuda_compact_count left: out[k] gets bytes,
 * stream_bits, rows and cols (d_blob and d_table NULL), names[k] (if not NULL) the member's
 * name. The plans stay with the model handle (under its lock) until df11_cuda_compact_pack for
 * this group takes them (or the group's next count or measure, or df11_model_close, drops them):
 * one group's count, measure and pack belong to one thread at a time; different groups may be
 * transcoded from several threads at once.
 * Synchronises. DF11_ERROR_INVALID_ARGUMENT where a member's lengths are no prefix code of at
 * most 12 bits or leave one of its exponents without a codeword. */
DF11_API df11_status df11_cuda_compact_measure(df11_model* model, size_t group, void* d_workspace,
                                               size_t workspace_bytes, const uint8_t* lengths,
                                               void* stream, df11_compact_matrix* out,
                                               const char** names, size_t n);

/* Writes each measured member's blob into m[k].d_blob (m[k].bytes) and its decode table into
 * m[k].d_table, from the same workspace. Waits for its host copies once per member. The blobs
 * are byte for byte what the CPU reference encoder writes with those lengths. */
DF11_API df11_status df11_cuda_compact_pack(df11_model* model, size_t group, void* d_workspace,
                                            size_t workspace_bytes, const df11_compact_matrix* m,
                                            size_t n, void* stream);

/* A BF16 matrix already in device memory (df11_exec_source) straight into the compact layout,
 * with no DF11 group in between, one matrix per call: the blob and table the group calls give
 * for the same weights and code. No state is kept between the calls (`model` may be NULL: it
 * only takes the messages), so the pack measures again (a second synchronisation).
 *
 *   df11_cuda_compact_bf16_workspace_bytes(model, rows, cols, &ws);      host only
 *   df11_cuda_compact_bf16_count(model, &src, d_ws, ws, stream, counts);  syncs
 *   df11_tools_compact_lengths(counts, lengths);                          libdf11-tools
 *   df11_cuda_compact_bf16_measure(model, &src, lengths, d_ws, ws, stream, &m);   syncs
 *   m.d_blob, m.d_table = the caller's (m.bytes, DF11_COMPACT_TABLE_BYTES; 16-byte aligned)
 *   df11_cuda_compact_bf16_pack(model, &src, lengths, d_ws, ws, &m, stream);      syncs */
DF11_API df11_status df11_cuda_compact_bf16_workspace_bytes(df11_model* model, uint32_t rows,
                                                            uint32_t cols, size_t* workspace_bytes);

/* The matrix's exponent counts (DF11_COMPACT_SYMBOLS u64, padding counted as exponent 0).
 * Synchronises `stream`. */
DF11_API df11_status df11_cuda_compact_bf16_count(df11_model* model, const df11_exec_source* src,
                                                  void* d_workspace, size_t workspace_bytes,
                                                  void* stream, uint64_t* counts);

/* Measures the blob with code `lengths` (DF11_COMPACT_SYMBOLS bytes): *out gets bytes,
 * stream_bits, rows and cols (d_blob and d_table NULL). Synchronises `stream`.
 * DF11_ERROR_INVALID_ARGUMENT where the lengths are no prefix code of at most 12 bits or leave
 * one of the matrix's exponents without a codeword. */
DF11_API df11_status df11_cuda_compact_bf16_measure(df11_model* model, const df11_exec_source* src,
                                                    const uint8_t* lengths, void* d_workspace,
                                                    size_t workspace_bytes, void* stream,
                                                    df11_compact_matrix* out);

/* Writes the blob into m->d_blob and the code's decode table into m->d_table, m being what the
 * measure gave for the same source and lengths (DF11_ERROR_INVALID_ARGUMENT otherwise).
 * Synchronises `stream` (it measures again, and waits for the table's copy). */
DF11_API df11_status df11_cuda_compact_bf16_pack(df11_model* model, const df11_exec_source* src,
                                                 const uint8_t* lengths, void* d_workspace,
                                                 size_t workspace_bytes,
                                                 const df11_compact_matrix* m, void* stream);

/* One product Y = X W^T, as df11_exec_gemm. */
typedef struct df11_compact_gemm {
  df11_compact_matrix w;
  const void* d_x;
  void* d_y;
} df11_compact_gemm;

/* Enqueues the n products at `batch` (1..DF11_COMPACT_MAX_BATCH) rows, up to 16 matrices per
 * kernel launch (after a reset of d_status unless flags has DF11_EXEC_KEEP_STATUS). Each Y
 * equals df11_cuda_exec_reference_gemm on the blob's weights bit for bit. No allocation, no
 * sync.
 * Arguments are checked before anything is enqueued: a refused call (DF11_ERROR_INVALID_ARGUMENT)
 * leaves d_status as it was. */
DF11_API df11_status df11_cuda_compact_gemm_ex(df11_model* model, const df11_compact_gemm* gemms,
                                               size_t n, uint32_t batch, void* d_status,
                                               size_t status_bytes, uint32_t flags, void* stream);

/* Enqueues the decode of each blob m[k] into d_out[k] (rows * cols BF16, row-major), one
 * kernel launch per blob (status as for df11_cuda_compact_gemm_ex). */
DF11_API df11_status df11_cuda_compact_to_bf16_ex(df11_model* model, const df11_compact_matrix* m,
                                                  void* const* d_out, size_t n, void* d_status,
                                                  size_t status_bytes, uint32_t flags,
                                                  void* stream);

/* Waits for `stream` and reports what the record d_status holds: DF11_OK, or
 * DF11_ERROR_CORRUPT_DATA where some blob of the calls it collected does not decode. */
DF11_API df11_status df11_cuda_compact_status_sync(df11_model* model, const void* d_status,
                                                   void* stream);

#endif /* DF11_EXPERIMENTAL */

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* DF11_DF11_H */
