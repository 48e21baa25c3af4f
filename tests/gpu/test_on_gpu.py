"""Checks that need a CUDA GPU (marker `gpu`: skipped without one). tests/gpu/run.sh runs them on the GPU machine,
beside its larger steps; each is small enough for seconds there."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from runtime_models import PROMPTS, save_tiny_model
from smi_compare import compare

from launcher.runtime.engine import SamplingParams

pytestmark = pytest.mark.gpu
REPO = Path(__file__).resolve().parents[2]


def open_cuda_engine(model_dir: Path, dtype: torch.dtype, allreduce: str = "torch", cuda_graphs: bool = True):
    from launcher.runtime.communicator import Communicator
    from launcher.runtime.config import load_config
    from launcher.runtime.dist import init_parallel
    from launcher.runtime.engine import InferenceEngine
    from launcher.runtime.loader import load_model

    config = load_config(model_dir)
    comm = Communicator(init_parallel(torch.device("cuda")), allreduce)
    comm.setup(4 * 64, config.hidden_size, dtype)
    model = load_model(model_dir, config, comm, dtype, 64)
    return InferenceEngine(model, 4, 64, config.eos_token_ids, cuda_graphs=cuda_graphs)


def test_probe_fields_equal_nvidia_smi(tmp_path):
    smi = shutil.which("nvidia-smi")
    assert smi, "nvidia-smi is not on PATH"
    probe = subprocess.run([sys.executable, "-m", "advisor", "probe", "--json"], capture_output=True, text=True,
                           cwd=REPO, timeout=60, check=True)

    def run(*args: str) -> str:
        return subprocess.run([smi, *args], capture_output=True, text=True, timeout=60).stdout

    checks, _ = compare(json.loads(probe.stdout), run("-q", "-x"), run("topo", "-m"), run("nvlink", "-s"),
                        run("--query-gpu=index,compute_cap", "--format=csv,noheader"))
    assert [c for c in checks if not c.ok] == []


@pytest.mark.parametrize("kind", ["qwen3", "qwen3_moe"])
def test_cuda_graph_decode_equals_eager_decode(kind, tmp_path):
    """float32: tokens through captured graphs equal the eager decode's; graphs were captured and replayed."""
    model_dir = save_tiny_model(kind, tmp_path / kind)
    params = SamplingParams(max_tokens=16, ignore_eos=True)
    engine = open_cuda_engine(model_dir, torch.float32)
    assert engine.graphs is not None and engine.graphs.capture and engine.graphs.graphs
    with_graphs = engine.generate(PROMPTS, params)
    assert engine.graphs.replays >= 15
    graphs, engine.graphs = engine.graphs, None
    assert engine.generate(PROMPTS, params) == with_graphs
    engine.graphs = graphs


def test_flashinfer_fused_add_rmsnorm_matches_torch_at_tp1():
    pytest.importorskip("flashinfer.norm")
    from launcher.runtime.communicator import Communicator
    from launcher.runtime.dist import init_parallel

    comm = Communicator(init_parallel(torch.device("cuda")), "flashinfer-fusion")
    comm.setup(64, 1024, torch.bfloat16)
    assert comm.strategy == "flashinfer-fusion", comm.reason
    generator = torch.Generator(device="cuda").manual_seed(0)
    # [batch, tokens, hidden] as the model passes them (the kernel itself takes 2-D only)
    partial = torch.randn(2, 4, 1024, device="cuda", dtype=torch.bfloat16, generator=generator)
    residual = torch.randn(2, 4, 1024, device="cuda", dtype=torch.bfloat16, generator=generator)
    weight = torch.rand(1024, device="cuda", dtype=torch.bfloat16, generator=generator) + 0.5
    fused = comm.add_rmsnorm(partial.clone(), residual.clone(), weight, 1e-6)
    comm.fused_norm_tp1 = None
    plain = comm.add_rmsnorm(partial.clone(), residual.clone(), weight, 1e-6)
    torch.testing.assert_close(fused[1], plain[1])  # the residual sum: exact in bf16 either way
    torch.testing.assert_close(fused[0], plain[0], atol=3e-2, rtol=2e-2)
