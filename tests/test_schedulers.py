"""`advisor launch --on slurm|kubernetes|skypilot` (advisor/schedulers/): the job files for a 2-node DeepSeek-V3 tp 16
plan on h100-sxm-8, for SGLang and vLLM, checked by the tools that read them:

- SLURM: `bash -n`, shellcheck, and a run under stub `scontrol`/`srun` (the step once per fake node, SLURM_NODEID set)
  with stub engine commands that record each node's argv;
- Kubernetes: the Service and both pod templates against the Kubernetes schemas (kubernetes-validate), the
  LeaderWorkerSet against the required fields and enums of its CRD (kubernetes-sigs/lws,
  config/crd/bases/leaderworkerset.x-k8s.io_leaderworkersets.yaml, v1);
- SkyPilot: the documented keys, the run script under stubs per node, and SkyPilot's own task schema and parser when
  a SkyPilot install is found (TP_ADVISOR_SKYPILOT_PYTHON, default ~/.cache/tp-advisor/sky-venv/bin/python).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import kubernetes_validate
import pytest
import yaml
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from advisor.cli import main
from advisor.context import Options, make_plan
from advisor.rules.sglang.multinode import MULTINODE_FLAGS
from advisor.rules.sglang.releases import RELEASES as SGLANG_RELEASES
from advisor.schedulers import JobSettings, job_text
from advisor.schedulers.job import _name, make_job
from advisor.schedulers.yaml_text import dump

MODEL = "deepseek-ai/DeepSeek-V3"
PLAN_ARGS = ("--profile", "h100-sxm-8", "--model", MODEL, "--nnodes", "2", "--tp", "16")
ENGINES = ("sglang", "vllm")
K8S = kubernetes_validate.latest_version()
SHELLCHECK = shutil.which("shellcheck") or str(Path(sys.executable).parent / "shellcheck")
# The LeaderWorkerSet CRD (v1): spec requires leaderWorkerTemplate, which requires workerTemplate; size is an int32;
# restartPolicy is one of these (kubernetes-sigs/lws config/crd/bases/leaderworkerset.x-k8s.io_leaderworkersets.yaml).
LWS_RESTART_POLICIES = ("Default", "RecreateGroupOnPodRestart", "RecreateGroupAfterStart", "None")
FLAGS_GOLDEN = Path(__file__).resolve().parents[1] / "advisor" / "rules" / "sglang" / "cli_flags.json"


def plan_for(engine: str, **options):
    return make_plan(Options(profile="h100-sxm-8", model=MODEL, engine=engine, tp=16, nnodes=2, **options))


def job(engine: str, target: str, **settings) -> str:
    return job_text(plan_for(engine), target, JobSettings(**settings))


def release(engine: str) -> str:
    return plan_for(engine).engine["version"]


# -- stubs: a fake cluster of nodes node01..nodeNN --------------------------------------------------------------------

STUB_ENGINE = """#!/bin/bash
# An engine command: prints the stub's installed version when asked, else records this node's argv.
if [ "${1:-}" = "-c" ]; then echo "$STUB_VERSION"; exit 0; fi
node="${SLURM_NODEID:-${SKYPILOT_NODE_RANK:-x}}"
{ printf '%s\\n' "$(basename "$0")"; printf '%s\\n' "$@"; } > "$RECORD/node-$node.argv"
"""
STUB_ADVISOR = """#!/bin/bash
node="${SLURM_NODEID:-${SKYPILOT_NODE_RANK:-x}}"
printf '%s\\n' "$@" > "$RECORD/preflight-$node.argv"
if [ "$node" = "${FAIL_NODE:-}" ]; then echo "stub advisor: problem on node $node"; exit 1; fi
"""
STUB_SCONTROL = """#!/bin/bash
[ "$1 $2" = "show hostnames" ] || exit 2
for i in $(seq 1 "$STUB_NODES"); do printf 'node%02d\\n' "$i"; done
"""
# srun: the step once per node (SLURM_NODEID 0..N-1, in order); with --kill-on-bad-exit the first failure ends it.
STUB_SRUN = """#!/bin/bash
nodes=1
for arg in "$@"; do case "$arg" in --nodes=*) nodes="${arg#--nodes=}";; esac; done
while [ "$#" -gt 0 ] && [ "$1" != bash ]; do shift; done
status=0
for ((i = 0; i < nodes; i++)); do
  SLURM_NODEID=$i SLURM_PROCID=$i SLURMD_NODENAME=$(printf 'node%02d' $((i + 1))) "$@" || { status=$?; break; }
done
exit "$status"
"""


@pytest.fixture
def cluster(tmp_path):
    """A directory of stubs on PATH (before the system's) and a record directory; returns (env, record)."""
    stubs, record = tmp_path / "stubs", tmp_path / "record"
    stubs.mkdir()
    record.mkdir()
    for name, text in {"python3": STUB_ENGINE, "vllm": STUB_ENGINE, "advisor": STUB_ADVISOR,
                       "scontrol": STUB_SCONTROL, "srun": STUB_SRUN}.items():  # fmt: skip
        path = stubs / name
        path.write_text(text)
        path.chmod(0o755)
    env = {"PATH": f"{stubs}:/usr/bin:/bin", "RECORD": str(record), "STUB_NODES": "2", "HOME": str(tmp_path),
           "SLURM_JOB_NODELIST": "node[01-02]"}  # fmt: skip
    return env, record


def argv_of(record: Path, node: int) -> list[str]:
    return (record / f"node-{node}.argv").read_text().splitlines()


def value(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


# -- SLURM -----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("engine", ENGINES)
def test_the_sbatch_script_parses_and_passes_shellcheck(engine, tmp_path):
    script = tmp_path / "job.sbatch"
    script.write_text(job(engine, "slurm"))
    text = script.read_text()
    for line in (
        "#SBATCH --nodes=2",
        "#SBATCH --ntasks-per-node=1",
        "#SBATCH --gpus-per-node=8",
        "#SBATCH --exclusive",
    ):
        assert line in text.splitlines()
    assert subprocess.run(["bash", "-n", str(script)], capture_output=True).returncode == 0
    checked = subprocess.run([SHELLCHECK, str(script)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout


@pytest.mark.parametrize("engine", ENGINES)
def test_the_stub_slurm_run_starts_ranks_0_and_1_with_the_first_node_as_head(engine, cluster, tmp_path):
    env, record = cluster
    env["STUB_VERSION"] = release(engine)
    script = tmp_path / "job.sbatch"
    script.write_text(job(engine, "slurm"))
    run = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    nodes = [argv_of(record, n) for n in (0, 1)]
    assert [value(argv, "--node-rank") for argv in nodes] == ["0", "1"]
    if engine == "sglang":
        assert {value(argv, "--dist-init-addr") for argv in nodes} == {"node01:29500"}
        assert nodes[0][:3] == ["python3", "-m", "sglang.launch_server"]
        assert value(nodes[0], "--host") == "0.0.0.0" and "--host" not in nodes[1]
    else:
        assert {value(argv, "--master-addr") for argv in nodes} == {"node01"}
        assert nodes[0][:3] == ["vllm", "serve", MODEL]
        assert "--headless" not in nodes[0] and "--headless" in nodes[1]
    assert {value(argv, "--nnodes") for argv in nodes} == {"2"}
    # Every node checked itself with the same release before starting it.
    for node in (0, 1):
        preflight = (record / f"preflight-{node}.argv").read_text().splitlines()
        assert preflight[:2] == ["check", "--strict"] and value(preflight, "--engine-version") == release(engine)


def test_sglang_multinode_arguments_are_in_every_modelled_releases_parser():
    golden = json.loads(FLAGS_GOLDEN.read_text())["releases"]
    assert set(golden) == set(SGLANG_RELEASES)
    for version, flags in golden.items():
        assert {*MULTINODE_FLAGS, "--host", "--port"} <= set(flags), version
    # Every option of the generated commands is one the plan's release accepts.
    made = make_job(plan_for("sglang"), JobSettings())
    used = {t.split("=", 1)[0] for t in (*made.head, *made.worker) if t.startswith("--")}
    assert used and used <= set(golden[release("sglang")])


def test_a_node_on_another_release_ends_the_job_before_any_engine_starts(cluster, tmp_path):
    env, record = cluster
    env["STUB_VERSION"] = "0.0.1"
    script = tmp_path / "job.sbatch"
    script.write_text(job("sglang", "slurm"))
    run = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode != 0
    assert f"sglang 0.0.1 is installed, the plan is for sglang {release('sglang')}" in run.stderr
    assert not list(record.glob("node-*.argv"))


def test_a_failed_preflight_on_node_1_ends_the_job_with_a_readable_message(cluster, tmp_path):
    env, record = cluster
    env |= {"STUB_VERSION": release("vllm"), "FAIL_NODE": "1"}
    script = tmp_path / "job.sbatch"
    script.write_text(job("vllm", "slurm"))
    run = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode != 0
    assert "node 1 (" in run.stderr and "the pre-flight check failed" in run.stderr
    assert not (record / "node-1.argv").exists()


def test_the_interface_and_an_image_reach_the_sbatch_script():
    text = job("sglang", "slurm", interface="ib0", image="registry.local/sglang:mine")
    assert "export NCCL_SOCKET_IFNAME=ib0" in text and "export GLOO_SOCKET_IFNAME=ib0" in text
    assert "--container-image=registry.local/sglang:mine" in text
    assert "--container-image" not in job("sglang", "slurm")  # no container unless asked


# -- Kubernetes ------------------------------------------------------------------------------------------------------


def validate_pod_template(template: dict) -> None:
    kubernetes_validate.validate(
        {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "t"}, "template": template}, K8S, strict=True
    )


@pytest.mark.parametrize("engine", ENGINES)
def test_the_kubernetes_objects_validate(engine):
    lws, svc = yaml.safe_load_all(job(engine, "kubernetes"))
    kubernetes_validate.validate(svc, K8S, strict=True)
    assert lws["apiVersion"] == "leaderworkerset.x-k8s.io/v1" and lws["kind"] == "LeaderWorkerSet"
    group = lws["spec"]["leaderWorkerTemplate"]
    assert group["size"] == 2 and isinstance(group["size"], int)
    assert group["restartPolicy"] in LWS_RESTART_POLICIES and group["restartPolicy"] == "RecreateGroupOnPodRestart"
    assert "workerTemplate" in group
    for key in ("leaderTemplate", "workerTemplate"):
        validate_pod_template(group[key])
        pod = group[key]["spec"]
        (container,) = pod["containers"]
        assert container["resources"]["limits"]["nvidia.com/gpu"] == 8
        assert container["image"].endswith(f":v{release(engine)}")
        shm = next(v for v in pod["volumes"] if v["name"] == "dshm")["emptyDir"]
        assert shm["medium"] == "Memory" and shm["sizeLimit"]
        assert {"name": "dshm", "mountPath": "/dev/shm"} in container["volumeMounts"]
    leader = group["leaderTemplate"]["spec"]["containers"][0]
    worker = group["workerTemplate"]["spec"]["containers"][0]
    assert "$(LWS_WORKER_INDEX)" in worker["command"] and "$(LWS_WORKER_INDEX)" not in leader["command"]
    assert any("$(LWS_LEADER_ADDRESS)" in t for t in leader["command"])
    assert any("$(LWS_LEADER_ADDRESS)" in t for t in worker["command"])
    port = svc["spec"]["ports"][0]["targetPort"]
    assert leader["readinessProbe"]["httpGet"] == {"path": "/health", "port": port}
    assert svc["spec"]["selector"] == {"leaderworkerset.sigs.k8s.io/name": lws["metadata"]["name"], "role": "leader"}
    assert group["leaderTemplate"]["metadata"]["labels"]["role"] == "leader"


def test_a_broken_pod_template_is_caught_by_the_schemas():
    (_, svc) = yaml.safe_load_all(job("sglang", "kubernetes"))
    svc["spec"]["ports"][0]["port"] = "http"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(svc, K8S, strict=True)


def test_rdma_adds_ipc_lock_and_the_interface_sets_the_socket_variables():
    lws, _ = yaml.safe_load_all(job("vllm", "kubernetes", rdma=True, interface="eth1"))
    container = lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]
    assert container["securityContext"]["capabilities"]["add"] == ["IPC_LOCK"]
    assert {"name": "NCCL_SOCKET_IFNAME", "value": "eth1"} in container["env"]
    validate_pod_template(lws["spec"]["leaderWorkerTemplate"]["workerTemplate"])


# -- SkyPilot --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("engine", ENGINES)
def test_the_skypilot_task_has_its_keys_and_its_run_script_starts_each_rank(engine, cluster, tmp_path):
    task = yaml.safe_load(job(engine, "skypilot"))
    assert task["num_nodes"] == 2 and task["resources"]["accelerators"] == "H100:8"
    assert set(task) <= {"name", "num_nodes", "resources", "envs", "setup", "run", "workdir", "file_mounts"}
    assert f"=={release(engine)}" in task["setup"]
    env, record = cluster
    env["STUB_VERSION"] = release(engine)
    for rank in (0, 1):
        node_env = env | {"SKYPILOT_NODE_RANK": str(rank), "SKYPILOT_NODE_IPS": "10.0.0.7\n10.0.0.8\n"}
        run = subprocess.run(["bash", "-c", task["run"]], env=node_env, capture_output=True, text=True, timeout=60)
        assert run.returncode == 0, run.stderr
    nodes = [argv_of(record, n) for n in (0, 1)]
    assert [value(argv, "--node-rank") for argv in nodes] == ["0", "1"]
    head = "--dist-init-addr" if engine == "sglang" else "--master-addr"
    assert {value(argv, head).split(":")[0] for argv in nodes} == {"10.0.0.7"}


SKY_PYTHON = os.environ.get("TP_ADVISOR_SKYPILOT_PYTHON", str(Path.home() / ".cache/tp-advisor/sky-venv/bin/python"))


@pytest.mark.skipif(not Path(SKY_PYTHON).exists(), reason="no SkyPilot install (TP_ADVISOR_SKYPILOT_PYTHON)")
def test_skypilot_accepts_the_task_with_its_own_schema_and_parser(tmp_path):
    checker = (
        "import sys, yaml, sky\n"
        "from sky.utils import common_utils, schemas\n"
        "for path in sys.argv[1:]:\n"
        "    common_utils.validate_schema(yaml.safe_load(open(path)), schemas.get_task_schema(), 'Invalid task: ')\n"
        "    task = sky.Task.from_yaml(path)\n"
        "    print(task.num_nodes, sorted(next(iter(task.resources)).accelerators.items()))\n"
    )
    paths = []
    for engine in ENGINES:
        path = tmp_path / f"{engine}.yaml"
        path.write_text(job(engine, "skypilot"))
        paths.append(str(path))
    run = subprocess.run([SKY_PYTHON, "-c", checker, *paths], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "HOME": str(tmp_path)})  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.splitlines() == ["2 [('H100', 8)]"] * 2


# -- the command line ------------------------------------------------------------------------------------------------


def invoke(*args: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(main, [*PLAN_ARGS, "launch", *args], catch_exceptions=False, env=env)


def test_an_unknown_target_is_a_usage_error_that_writes_nothing(tmp_path):
    out = tmp_path / "job.txt"
    result = invoke("--on", "nomad", "-o", str(out))
    assert result.exit_code == 2 and not out.exists()


def test_the_job_goes_to_the_file_and_nothing_else_is_written(tmp_path):
    out = tmp_path / "job.yaml"
    result = invoke("--on", "kubernetes", "-o", str(out))
    assert result.exit_code == 0, result.output
    assert [p.name for p in tmp_path.iterdir()] == ["job.yaml"]
    assert yaml.safe_load_all(out.read_text())


def test_submit_without_the_tool_is_one_line_naming_it(tmp_path):
    out = tmp_path / "job.sbatch"
    result = invoke("--on", "slurm", "-o", str(out), "--submit", env={"PATH": str(tmp_path)})
    assert result.exit_code == 1
    error = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(error) == 1 and "sbatch is not on PATH" in error[0]
    assert not out.exists()


def test_submit_hands_the_file_to_the_tool(tmp_path):
    tool = tmp_path / "sbatch"
    tool.write_text(f'#!/bin/bash\nprintf "%s\\n" "$@" > {tmp_path}/submitted\n')
    tool.chmod(0o755)
    out = tmp_path / "job.sbatch"
    result = invoke("--on", "slurm", "-o", str(out), "--submit", env={"PATH": f"{tmp_path}:/usr/bin:/bin"})
    assert result.exit_code == 0, result.output
    assert (tmp_path / "submitted").read_text().splitlines() == [str(out)]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("-o", "x.sh"), "only go with --on"),
        (("--on", "slurm", "--node-rank", "1"), "drop --node-rank"),
        (("--on", "slurm", "--submit"), "--submit needs -o FILE"),
        (("--on", "kubernetes", "--engine", "bundled", "--model", "demo"), "pass --image IMAGE"),
        (("--on", "slurm", "--engine", "vllm", "--engine-version", "0.11.0"), "--engine-version 0.11.1"),
    ],
)
def test_a_job_it_cannot_write_is_a_usage_error(args, message, tmp_path):
    result = invoke(*args)
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert not list(tmp_path.iterdir())


def test_a_single_node_plan_is_refused():
    result = CliRunner().invoke(
        main, ["--profile", "h100-sxm-8", "--model", MODEL, "--tp", "8", "launch", "--on", "slurm"]
    )
    assert result.exit_code == 2 and "--nnodes 2 or more" in result.output


def test_the_bundled_runtime_gets_a_slurm_job_through_torchrun():
    plan = make_plan(Options(profile="h100-sxm-8", engine="bundled", tp=16, nnodes=2))
    text = job_text(plan, "slurm", JobSettings())
    assert '--node-rank "$rank" --rdzv-backend c10d --rdzv-endpoint "$TP_ADVISOR_HEAD:29500"' in text


# -- the pieces ------------------------------------------------------------------------------------------------------

scalars = st.one_of(st.text(), st.integers(), st.booleans(), st.none())
documents = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
    st.text(min_size=1), inner, max_size=3), max_leaves=12)  # fmt: skip


@given(st.dictionaries(st.text(min_size=1), documents, max_size=4))
def test_the_yaml_writer_round_trips(document):
    assert yaml.safe_load(dump([document])) == (document or {})


@given(st.text())
def test_job_names_are_dns_labels(model):
    assert re.fullmatch(r"[a-z0-9]([a-z0-9-]*[a-z0-9])?", _name("vllm", model))


# -- vLLM's multi-node arguments, read from the releases' own wheels when they are cached -----------------------------

WHEELS = Path.home() / ".cache" / "tp-advisor" / "wheels"  # `pip download vllm==X --no-deps -d` this directory


def cached_vllm_wheels() -> dict[str, Path]:
    found = {}
    for path in sorted(WHEELS.glob("vllm-*.whl")) if WHEELS.is_dir() else ():
        found[path.name.split("-")[1]] = path
    return found


@pytest.mark.skipif(not cached_vllm_wheels(), reason=f"no vLLM wheel cached in {WHEELS}")
def test_vllm_releases_have_the_native_multinode_arguments_from_the_first_release_the_job_says():
    import zipfile

    from advisor.rules import engine as rules
    from advisor.rules.vllm.multinode import NATIVE_MULTINODE_FROM

    made = make_job(plan_for("vllm"), JobSettings())
    used = {t for t in (*made.head, *made.worker) if t.startswith("--")}
    for version, wheel in cached_vllm_wheels().items():
        with zipfile.ZipFile(wheel) as archive:
            declared = archive.read("vllm/engine/arg_utils.py").decode()
            serve = archive.read("vllm/entrypoints/cli/serve.py").decode()
        native = all(f'add_argument("{flag}"' in declared for flag in ("--nnodes", "--node-rank", "--master-addr",
                                                                       "--master-port"))  # fmt: skip
        expected = rules.parse_release(version) >= rules.parse_release(NATIVE_MULTINODE_FROM)
        assert native == expected, version
        if expected:
            assert "headless" in serve and {"--nnodes", "--node-rank", "--master-addr", "--headless"} <= used


# -- SGLang's own parser on the job's commands (the release's cached wheel, as conformance/sglang/flags.py builds it) --

CONFORMANCE = Path(__file__).resolve().parents[1] / "conformance" / "sglang"
PARSE = """
import argparse, json, sys
sys.path.insert(0, sys.argv[2])
import runner  # conformance/sglang/runner.py: stand-ins for the CUDA-only packages, as the flags golden is built
runner.stand_in_for_cuda_packages(["torchvision", "sgl_kernel", "flashinfer", "deep_gemm", "deep_ep", "flash_mla"])
from sglang.srt.server_args import ServerArgs
parser = argparse.ArgumentParser()
ServerArgs.add_cli_args(parser)
keys = ("nnodes", "node_rank", "dist_init_addr", "host", "port")
print(json.dumps([[getattr(parser.parse_args(argv), k) for k in keys] for argv in json.loads(sys.argv[1])]))
"""


def sglang_wheel(version: str) -> Path | None:
    from conformance.sglang.flags import WHEELS as SGLANG_WHEELS

    return next(iter(sorted(SGLANG_WHEELS.glob(f"sglang-{version}-*.whl"))), None)


@pytest.mark.slow
def test_sglangs_own_parser_takes_every_nodes_command(tmp_path):
    import zipfile

    from conformance.sglang.flags import DEPS

    version = release("sglang")
    wheel = sglang_wheel(version)
    if wheel is None or not DEPS.is_dir():
        pytest.skip(f"sglang {version}'s wheel or the flags deps are not cached (python -m conformance sglang-flags)")
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(tmp_path, [m for m in archive.namelist() if not re.search(r"\.so(\.\d+)*$", m)])
    made = make_job(plan_for("sglang"), JobSettings())
    nodes = [[t.replace("tp-advisor-head-node", "node01").replace("<node-rank>", "1") for t in argv[3:]]
             for argv in (made.head, made.worker)]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(DEPS)]), "SGLANG_LOGGING_CONFIG_PATH": ""}
    run = subprocess.run([sys.executable, "-c", PARSE, json.dumps(nodes), str(CONFORMANCE)], env=env, cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    parsed = json.loads(run.stdout.splitlines()[-1])
    assert parsed == [[2, 0, "node01:29500", "0.0.0.0", 30000], [2, 1, "node01:29500", "127.0.0.1", 30000]]


@pytest.mark.parametrize("engine", ENGINES)
def test_the_preflight_is_a_check_this_advisor_accepts(engine):
    """The nodes run `advisor check --strict ...` on their own facts; here the same arguments on the plan's profile."""
    preflight = make_job(plan_for(engine, overrides=("--max-model-len", "8192")), JobSettings()).preflight
    assert preflight[:3] == ("advisor", "check", "--strict") and preflight[-2:] == ("--max-model-len", "8192")
    split = preflight.index("--")
    args = [*preflight[1:split], "--profile", "h100-sxm-8", *preflight[split:]]
    result = CliRunner().invoke(main, args)
    assert result.exit_code in (0, 1), result.output  # findings, never a usage error


def test_a_vllm_before_native_multinode_is_refused_by_the_dry_run_too():
    result = invoke("--engine", "vllm", "--engine-version", "0.11.0", "--dry-run")
    assert result.exit_code == 2 and "needs a Ray cluster" in result.output
