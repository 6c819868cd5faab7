// DF11_CLONE_X86_64_V3: compiles a hot loop twice, for the baseline x86-64 and for
// x86-64-v3 (AVX2, BMI2: shifts by any register, no detour through CL), and lets the loader
// pick once per process (GCC/Clang function multiversioning, an ifunc). The output does not
// depend on the clone: both run the same integer arithmetic.
#pragma once

#if defined(__x86_64__) && defined(__linux__) && (defined(__GNUC__) || defined(__clang__))
#define DF11_CLONE_X86_64_V3 __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define DF11_CLONE_X86_64_V3
#endif
