/* c_decode: opens a DF11 model folder with the df11 C API, decodes every tensor on the CPU
 * and prints one line per tensor: name, dtype, shape, bytes and the FNV-1a 64 checksum of
 * its decoded bytes (the original checkpoint's bytes, bit for bit).
 *
 *   c_decode MODEL_DIR
 *
 * Exit status: 0 when every tensor decoded, 1 otherwise (the error names file and tensor). */
#include <df11/df11.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

static uint64_t fnv1a64(const unsigned char* p, size_t n) {
  uint64_t h = 14695981039346656037ull;
  size_t i;
  for (i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 1099511628211ull;
  }
  return h;
}

int main(int argc, char** argv) {
  df11_model* model = NULL;
  df11_status status;
  size_t i, d, n;
  int failed = 0;

  if (argc != 2) {
    fprintf(stderr, "usage: %s MODEL_DIR\n", argv[0]);
    return 2;
  }
  if (df11_version_number() / 100 != DF11_VERSION_NUMBER / 100) {
    fprintf(stderr, "error: built against df11 %d, running with %s\n", DF11_VERSION_NUMBER,
            df11_version_string());
    return 1;
  }
  status = df11_model_open(argv[1], &model);
  if (status != DF11_OK) {
    fprintf(stderr, "error: %s: %s\n", df11_status_name(status), df11_model_errmsg(model));
    df11_model_close(model);
    return 1;
  }
  n = df11_model_tensor_count(model);
  printf("%s: %zu tensors in %zu groups (df11 %s)\n", argv[1], n, df11_model_group_count(model),
         df11_version_string());
  for (i = 0; i < n; ++i) {
    const uint64_t bytes = df11_tensor_byte_size(model, i);
    const uint64_t* shape = df11_tensor_shape(model, i);
    const size_t rank = df11_tensor_rank(model, i);
    /* malloc's alignment suits every dtype; +1 so that an empty tensor gets a pointer. */
    unsigned char* buf = (unsigned char*)malloc((size_t)bytes + 1);
    if (buf == NULL) {
      fprintf(stderr, "error: out of memory for %s\n", df11_tensor_name(model, i));
      failed = 1;
      break;
    }
    status = df11_decode_tensor(model, i, buf, (size_t)bytes);
    if (status != DF11_OK) {
      fprintf(stderr, "error: %s: %s\n", df11_status_name(status), df11_model_errmsg(model));
      failed = 1;
    } else {
      printf("%016" PRIx64 "  %-5s [", fnv1a64(buf, (size_t)bytes), df11_tensor_dtype(model, i));
      for (d = 0; d < rank; ++d) printf(d ? ", %" PRIu64 : "%" PRIu64, shape[d]);
      printf("] %" PRIu64 " bytes  %s\n", bytes, df11_tensor_name(model, i));
    }
    free(buf);
  }
  df11_model_close(model);
  return failed;
}
