# The device calls of this run (vLLM 0.24.0's wheels, ../shared/vllm/prepare.sh's tar split into
# ten 30 MiB parts under .vllm/small/p0..p9, because the tree sent with each call, .git
# included, is ~25 MiB), then, in one call carrying .carry/vllm (python/df11 and the tests at
# commit 277511e, with scripts.diff applied to python/tests/gpu/vllm_check.{sh,py}; the fixture
# tests/interop/fixtures/llama, libdf11.so.0 and
# libdf11-tools.so.0 built in /work/main (0674e32 with the C API changes then uncommitted there)
# plus libtbb, libxxhash, libzstd):
#   cp .vllm/small/pK/piece_* /tmp/vparts/                      (K = 0..8, one call each)
#   source .vllm/small/p9/device-install.sh                      (the tenth call)
C=$PWD/.carry/vllm
export PYTHONPATH=/tmp/vsite:$C/python VLLM_USE_FLASHINFER_SAMPLER=0 HF_HUB_OFFLINE=1 \
  VLLM_NO_USAGE_STATS=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 \
  NVSHMEM_DISABLE_NVLS=1 LD_LIBRARY_PATH=$C/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
  DF11_LIBRARY_DIR=$C/lib DF11_TOOLS_LIBRARY_DIR=$C/lib
CASE_TIMEOUT=200 bash $C/python/tests/gpu/vllm_check.sh $OUT /dev/shm/df11-vllm
