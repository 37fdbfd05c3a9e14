#!/usr/bin/env bash
# The checks a lent GPU machine runs (docs/GPU.md, ../shared/GPU.md), in one call of the
# device tool: bench/bench_gpu.py first, alone on a quiet GPU; then, side by side, the cupy
# column of the test matrix, the compiled tests replaying through CUDA graphs, a compiled step
# as one graph (ci/graph_step_gpu.py: xad's own cuBLAS handle in a capture), graph replays
# against eager across autocast, dropout and momentum (ci/graph_variants_gpu.py), NCCL with world
# size 1 (ci/nccl_gpu.py: cupy.cuda.nccl for real) and the examples on cupy. Outputs go to
# $OUT; every phase has a time limit, so the whole stays under about seven minutes.
# Needs .whl/ with array-api-compat and array-api-strict wheels (py3-none-any).
set -u
OUT="${OUT:-/tmp/gpu-out}"; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv
  python3 -c "import cupy, xad; print('cupy', cupy.__version__, 'runtime', \
cupy.cuda.runtime.runtimeGetVersion()); print(xad.set_backend('cupy'))"
  python3 -c "import scipy, numpy, torch; print(scipy.__version__, numpy.__version__, torch.__version__)"; } > "$OUT/gpu.txt" 2>&1
# timings, then kernels/launches (torch.profiler) and device memory, one process each
if [[ "${BENCH:-1}" == 1 ]]; then
  XAD_BENCH_PROFILE="$OUT/host_profile.txt" timeout "${BENCH_TIMEOUT:-210}" \
    python3 bench/bench_gpu.py --repeat 5 > "$OUT/bench.txt" 2>&1
  echo "bench rc=$?" >> "$OUT/bench.txt"
fi
pt="python3 -m pytest -p no:cacheprovider -q -rfE --timeout 120"
T="${TEST_TIMEOUT:-180}"
for ex in digits cnn_digits transformer_addition fit_nonlinear; do
  (timeout "$T" python3 examples/$ex.py --backend cupy --quiet; echo "$ex rc=$?") \
    > "$OUT/ex_$ex.txt" 2>&1 &
done
# issue 25's target: fit_nonlinear faster on cupy than on numpy (the same run on this CPU),
# eager above and compiled with CUDA graphs here
(timeout "$T" python3 examples/fit_nonlinear.py --backend numpy --quiet
 echo "fit_nonlinear (numpy) rc=$?") > "$OUT/ex_zz_fit_numpy.txt" 2>&1 &
(XAD_CUDA_GRAPHS=1 timeout "$T" python3 examples/fit_nonlinear.py --backend cupy --compile \
   --quiet; echo "fit_nonlinear (cupy, --compile, CUDA graphs) rc=$?") \
  > "$OUT/ex_zz_fit_graphs.txt" 2>&1 &
XAD_CUDA_GRAPHS=1 timeout -s INT -k 15 "$T" $pt -n 2 -k "cupy and not sim" tests/test_compile.py \
  tests/test_compile_cuda_graphs.py > "$OUT/graphs.txt" 2>&1 &
{ timeout 100 python3 ci/graph_step_gpu.py; echo "graph_step rc=$?"
  timeout 100 python3 ci/graph_variants_gpu.py; echo "graph_variants rc=$?"
  timeout 60 python3 ci/nccl_gpu.py; echo "nccl rc=$?"; } > "$OUT/graph_step.txt" 2>&1 &
timeout -s INT -k 15 "$T" $pt -n 8 -k "cupy and not sim" tests > "$OUT/tests.txt" 2>&1
echo "tests rc=$?" >> "$OUT/tests.txt"
wait
cat "$OUT"/ex_*.txt > "$OUT/examples.txt"; rm -f "$OUT"/ex_*.txt
tail -n 3 "$OUT/tests.txt" "$OUT/graphs.txt"; grep -h "rc=" "$OUT"/*.txt
