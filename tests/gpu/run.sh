#!/usr/bin/env bash
# Every GPU check in one run of at most 8 minutes; results (at most 8 files) in OUT_DIR. See tests/gpu/run_all.py.
#   tests/gpu/run.sh OUT_DIR              on the GPU machine
#   DRY_RUN=1 tests/gpu/run.sh OUT_DIR    on CPU: every step with tiny shapes (what the test suite runs)
# Packages the GPU machine lacks travel as wheels in tests/gpu/wheels (tests/gpu/fetch_wheels.sh); installed offline.
set -uo pipefail
if [ $# -ne 1 ]; then
    echo "usage: [DRY_RUN=1] $0 OUT_DIR" >&2
    exit 2
fi
out=$1
mkdir -p "$out" || exit 2
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/../.." || exit 2
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
python=${PYTHON:-python3}
wheels=tests/gpu/wheels
if [ "${DRY_RUN:-0}" = "0" ] && compgen -G "$wheels/*.whl" >/dev/null; then
    echo "installing the travelled wheels from $wheels (offline)" | tee -a "$out/log.txt"
    # --no-deps: exactly these wheels (flashinfer's CuTe-DSL requirements stay behind, see fetch_wheels.sh);
    # PIP_BREAK_SYSTEM_PACKAGES: the machine's interpreter may be marked externally managed (older pips ignore it)
    # shellcheck disable=SC2046
    PIP_BREAK_SYSTEM_PACKAGES=1 "$python" -m pip install -q --no-index --no-deps $(ls "$wheels"/*.whl) >>"$out/log.txt" 2>&1 ||
        echo "warning: installing the wheels failed (see log.txt); steps needing them will fail" | tee -a "$out/log.txt"
fi
dry=()
budget=440
if [ "${DRY_RUN:-0}" != "0" ]; then
    dry=(--dry-run)
    budget=${DRY_RUN_BUDGET:-440}
fi
# the outer limit stays under 8 minutes even if the Python side overran its own deadline
timeout 470 "$python" tests/gpu/run_all.py "$out" "${dry[@]}" --budget "$budget"
