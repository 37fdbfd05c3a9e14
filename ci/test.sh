#!/usr/bin/env bash
# The test job: set up, lint, the sdist/wheel check, the public API's type check, the docs
# site (built --strict and loaded in headless Chromium: ci/docs.sh), then the test matrix
# (every numerical test runs once per backend; pytest prints the counts per backend at the
# end), the compiled tests replaying through CUDA graphs on the CuPy emulator, then the
# Array API conformance suite on numpy and array_api_strict, each failing
# the job below its floor (measured 98.8-99.1%; skipped with a message where ../shared has
# no copy of the suite).
set -euo pipefail
cd "$(dirname "$0")/.."
export VENV="${VENV:-.venv}"
# JAX's persistent compilation cache for the tests, kept between runs on one machine (its key
# holds JAX's version, the program, the flags and the platform): JAX compiles each primitive
# per shape, most of the JAX tests' time (warm, two files' JAX tests on 2 workers: 32 s of CPU
# against 77 cold). tests/conftest.py gives each pytest worker a folder of its own (JAX writes entries
# without a lock: one worker could read another's half-written one); before a run, every
# worker's folder gets every entry any worker wrote (hard links: entries are never changed).
# Emptied past 2 GiB (JAX's own size limit rescans the folder at each write: quadratic).
export XAD_TEST_JAX_CACHE="${XAD_TEST_JAX_CACHE:-$HOME/.cache/xad/jax-tests}"
bash ci/jax_cache.sh "$XAD_TEST_JAX_CACHE" || echo "jax cache: not readied; the tests compile afresh"
bash ci/setup.sh
bash ci/lint.sh
bash ci/wheel.sh
t0=$SECONDS
bash ci/typecheck.sh
bash ci/docs.sh
echo "test: type check, docs site and browser check took $((SECONDS - t0)) s"
# -rs: every skip with its reason (a skip is only for a backend that cannot run here).
# --dist worksteal: each worker starts on its own contiguous half of the tests (one file's
# backends together: fewer JAX compilations of the same shapes in both workers) and steals
# when idle (measured on 10 files, 2 cores: 3:00 wall, 3:03 CPU against 3:29, 3:24 with
# the default --dist load; CPU 3:09 against 3:26 in a second sitting)
"$VENV/bin/python" -m pytest -p no:cacheprovider -n auto --dist worksteal -rs tests \
    --doctest-modules xad "$@"
# the compiled tests again with every replay through CUDA graphs on the CuPy emulator, whose
# capture models CuPy's block reuse: where a GPU's graphs would give other numbers than eager
XAD_CUDA_GRAPHS=1 "$VENV/bin/python" -m pytest -p no:cacheprovider -q -n auto -k cupy-sim \
    tests/test_compile.py tests/test_compile_fuzz.py tests/test_compile_fusion.py \
    tests/test_compile_examples.py tests/test_compile_sound.py tests/test_compile_twins.py \
    tests/test_compile_fuzz_views.py tests/test_compile_fuzz_training.py \
    tests/test_compile_fuzz_loops.py tests/test_compile_fuzz_callers.py \
    tests/test_compile_callers.py tests/test_compile_guards.py tests/test_graph_step.py
for backend in numpy array_api_strict; do
    AAT_FLOOR="${AAT_FLOOR:-98}" bash ci/conformance.sh "$backend" -n 2
done
