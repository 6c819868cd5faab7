#!/bin/bash
# Device: df11's libraries (run.tar.xz), diffusers and the official package from wheels; then
# the package's tests named in $TESTS (from python/tests). Usage: bash .carry/gpu_tests.sh OUT
out=$1; mkdir -p "$out"
t0=$SECONDS
python3 -c "import PIL" 2>/dev/null || W="$W .carry/wheels/pillow*.whl"
python3 -m pip install -q --no-index --no-deps --target /tmp/dsite $W .carry/wheels/diffusers*.whl \
  .carry/wheels/dfloat11*.whl .carry/wheels/dahuffman*.whl 2>&1 | tail -2
mkdir -p /tmp/r && tar xJf .carry/run.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib DF11_LIBRARY_DIR=/tmp/r/lib DF11_TOOLS_LIBRARY_DIR=/tmp/r/lib \
  PYTHONPATH=$PWD/python:/tmp/dsite DF11_CLI=/tmp/r/bin/df11 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$out/gpu.txt"
python3 -c "import torch, transformers, diffusers, df11; print('torch', torch.__version__, '| transformers', transformers.__version__, '| diffusers', diffusers.__version__, '| df11', df11.version(), 'cuda' if df11.has_cuda() else 'no cuda')" >> "$out/gpu.txt" 2>&1
cat "$out/gpu.txt"
echo "install $((SECONDS - t0)) s"
(cd python/tests && timeout "${PYTEST_TIMEOUT:-500}" python3 -m pytest -q -p no:cacheprovider -rs \
   ${TESTS:-.} > "$out/pytest.log" 2>&1; echo "pytest rc $?" >> "$out/pytest.log")
tail -15 "$out/pytest.log"
echo "done $((SECONDS - t0)) s"
