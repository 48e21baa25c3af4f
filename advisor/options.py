"""The common options (bare `advisor`, `check`, `explain`, `launch`, `layouts`, `diff`), each declared once.

From this table: the click options (advisor.cli.COMMON_OPTIONS) and the fields of :class:`advisor.context.Options` they
fill (``field``; the defaults are Options', and the Intent a plan is made of takes the fields of the same names,
advisor.context.resolve). tests/test_options.py checks that they agree.
"""

from __future__ import annotations

from dataclasses import dataclass

# How an option takes its value.
TEXT = "text"  # --name VALUE
NUMBER = "number"  # a whole number >= 1 (advisor.cli.PositiveInt)
PATH = "path"  # a file that is not a directory (click.Path(dir_okay=False))
REPEATED = "repeated"  # --name VALUE, repeatable: a tuple
ENGINE = "engine"  # one of the registered engines (advisor.rules.registry)
SWITCH = "switch"  # --name / --no-name
FLAG = "flag"  # --name: True


@dataclass(frozen=True, slots=True)
class OptionSpec:
    flag: str  # "--tp"
    field: str  # "tp": the Options field it sets
    kind: str  # TEXT, NUMBER, PATH, REPEATED, ENGINE, SWITCH or FLAG
    help: str
    metavar: str | None = None
    show_default: bool = False
    complete: str | None = None  # which values shell completion offers: "models", "profiles" or "engine_versions"
    off: str | None = None  # a SWITCH's flag that turns it off

    @property
    def flags(self) -> tuple[str, ...]:
        return (self.flag, self.off) if self.off else (self.flag,)


COMMON = (
    OptionSpec(
        "--model", "model", TEXT, metavar="ID|DIR", complete="models",
        help="Model id (Hugging Face cache, offline, or the bundled catalog) or a local directory with config.json."
        " Default: the bundled runtime's demo model; sglang and vllm need one.",
    ),
    OptionSpec(
        "--tp", "tp", NUMBER,
        help="Tensor-parallel size. Default: the number of GPUs the engine sees (2 for the bundled demo on a machine"
        " without GPUs, else 1).",
    ),
    OptionSpec("--nnodes", "nnodes", NUMBER, "Number of nodes.", show_default=True),
    OptionSpec("--dp-attention", "dp_attention", SWITCH, "SGLang DP attention.", off="--no-dp-attention"),
    OptionSpec("--dp-size", "dp_size", NUMBER, "Data-parallel size. Default: the engine's own after --, else 1."),
    OptionSpec("--moe-a2a-backend", "moe_a2a_backend", TEXT, "MoE all-to-all backend.", metavar="NAME", show_default=True),
    OptionSpec(
        "--engine", "engine", ENGINE,
        "Serving engine. Default: sglang when the probed packages include sglang, else the bundled runtime.",
    ),
    OptionSpec(
        "--engine-version", "engine_version", TEXT, metavar="X.Y.Z", complete="engine_versions",
        help="Engine release whose rules apply. Default: the installed one, else the newest modelled release.",
    ),
    OptionSpec("--dtype", "dtype", TEXT, "Model dtype (bfloat16, float16, float32). Default: the model's."),
    OptionSpec(
        "--profile", "profile", TEXT, metavar="NAME", complete="profiles",
        help="Use a simulated machine instead of probing this one (list them with `advisor profiles`).",
    ),
    OptionSpec(
        "--facts", "facts_file", PATH, metavar="FILE",
        help="Use facts saved with `advisor probe -o FILE` instead of probing this machine.",
    ),
    OptionSpec(
        "--python", "python", PATH, metavar="PATH",
        help="Take the packages from another Python interpreter (a virtualenv's python, for example).",
    ),
    OptionSpec(
        "--with-package", "with_package", REPEATED, metavar="NAME==VERSION",
        help="Pretend a package is installed at VERSION (repeatable), e.g. flashinfer-python==0.6.12.",
    ),
    OptionSpec("--strict", "strict", FLAG, "Treat warnings as errors (exit 1)."),
)  # fmt: skip

BY_FLAG = {spec.flag: spec for spec in COMMON}
