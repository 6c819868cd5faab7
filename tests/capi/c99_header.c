/* Compiled as C99 with -pedantic -Werror (tests/CMakeLists.txt): df11.h, both sections, is
 * plain C. Run by ctest: prints the library's version and checks it against the header. */
#define DF11_EXPERIMENTAL
#include <df11/df11.h>
#include <stdio.h>

int main(void) {
  df11_cuda_group g = {0, 0, 0, 0, 0, 0};
  df11_group_part part = DF11_PART_GAPS;
  df11_gemv_matrix m = {0, 0, 0, 0};
  df11_shape shape = {0, 0, 0};
  (void)shape;
  (void)g;
  (void)part;
  (void)m;
  if (df11_cuda_gemv_matrix_count(NULL) != 0) return 1;
  printf("df11 %s (%u), cuda %d\n", df11_version_string(), df11_version_number(), df11_has_cuda());
  return df11_version_number() == DF11_VERSION_NUMBER ? 0 : 1;
}
