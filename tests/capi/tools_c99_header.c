/* Compiled as C99 with -pedantic -Werror (tests/CMakeLists.txt): df11_tools.h is plain C.
 * Run by ctest: checks the library's version against the header and that a handle's error
 * message is there from C. */
#include <df11/df11_tools.h>
#include <stdio.h>

int main(void) {
  df11_checkpoint* ck = NULL;
  df11_compress_option option = DF11_COMPRESS_SHARD_BYTES;
  df11_compress_result result = DF11_RESULT_GROUPS_RAW;
  df11_status rc;
  (void)option;
  (void)result;
  if (df11_checkpoint_create(&ck) != DF11_OK) return 1;
  rc = df11_checkpoint_add_tensor(ck, NULL, "w.weight", "BF17", 0, NULL, NULL, 0);
  printf("df11 tools %u: %s\n", df11_tools_version_number(), df11_checkpoint_errmsg(ck));
  df11_checkpoint_free(ck);
  return rc == DF11_ERROR_BAD_DTYPE && df11_tools_version_number() == DF11_TOOLS_VERSION_NUMBER ? 0
                                                                                                : 1;
}
