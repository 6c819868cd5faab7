# shellcheck shell=bash
# Sourced by vllm_check.sh and vllm_bench.sh: the environment vLLM runs in on the GPU machines,
# and df11's vllm.general_plugins entry point where df11 is not pip-installed.
#
#   source python/tests/gpu/vllm_env.sh WORK
#
# A source tree on PYTHONPATH has no package metadata, so vLLM would not find the plugin: the
# entry point is then declared as pip would, in a dist-info folder under WORK put on the path.
export PYTHONUNBUFFERED=1 VLLM_USE_FLASHINFER_SAMPLER=0 NCCL_NVLS_ENABLE=0 \
  TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 VLLM_NO_USAGE_STATS=1
if ! python3 -c "import importlib.metadata as m, sys; sys.exit(not any(e.name == 'df11' for e in m.entry_points(group='vllm.general_plugins')))"; then
  _ep=$1/entry-points
  mkdir -p "$_ep/df11_source_tree-0.0.dist-info"
  printf 'Metadata-Version: 2.1\nName: df11-source-tree\nVersion: 0.0\n' \
    > "$_ep/df11_source_tree-0.0.dist-info/METADATA"
  printf '[vllm.general_plugins]\ndf11 = df11.vllm:register\n' \
    > "$_ep/df11_source_tree-0.0.dist-info/entry_points.txt"
  export PYTHONPATH=$_ep${PYTHONPATH:+:$PYTHONPATH}
fi
