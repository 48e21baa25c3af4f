#!/usr/bin/env bash
# Download the wheels tests/gpu/run.sh installs offline on the GPU machine (Python 3.12, manylinux x86_64) into
# tests/gpu/wheels (git-ignored; never commit wheels). That machine already has torch, transformers, safetensors,
# tokenizers, nvidia-ml-py, click, rich, jinja2 and psutil; everything here must travel in one call (<= 64 MiB).
#   flashinfer-python 0.6.12 (~14 MB; 0.7.x is ~100 MB) with apache-tvm-ffi and nvidia-cudnn-frontend, --no-deps: its
#   other requirements are either on the machine (torch, numpy, requests, tqdm, packaging, click, nvidia-ml-py),
#   small and fetched below (einops, tabulate, ninja), or not needed by the paths used here (nvidia-cutlass-dsl and
#   cuda-tile are for CuTe-DSL kernels, hundreds of MB).
#   textual, fastapi, uvicorn, pydantic and pytest with their dependencies.
set -euo pipefail
cd "$(dirname "$0")"
dest=wheels
mkdir -p "$dest"
target=(--only-binary=:all: --python-version 3.12 --implementation cp --abi cp312 --platform manylinux_2_28_x86_64
        --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform any -d "$dest")
pip download -q --no-deps "${target[@]}" flashinfer-python==0.6.12 "apache-tvm-ffi>=0.1.6,<0.2,!=0.1.8,!=0.1.8.post0" \
    nvidia-cudnn-frontend einops tabulate ninja
pip download -q "${target[@]}" textual fastapi uvicorn pydantic pytest
# what the machine has already: drop it rather than carry it
rm -f "$dest"/click-*.whl "$dest"/rich-*.whl "$dest"/jinja2-*.whl "$dest"/MarkupSafe-*.whl "$dest"/markupsafe-*.whl \
    "$dest"/packaging-*.whl "$dest"/typing_extensions-*.whl
du -ch "$dest"/*.whl | tail -1
ls "$dest"
