"""The architectures grid's stored configs are what their recipes write (conformance/vllm/arch_grid.py): a hand edit, or
a registry re-read the files were not regenerated for, would hold the goldens and the rules to other configs."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))  # conformance/ is a repo folder, not part of the wheel

from conformance.vllm import arch_grid  # noqa: E402

WRITTEN_BY = re.compile(r"transformers (\S+) ")


def _stored_vllm_configs() -> dict[str, str]:
    paths = sorted(arch_grid.CONFIGS.glob(f"{arch_grid.VLLM_PREFIX}*/config.json"))
    return {p.parent.name: p.read_text() for p in paths}


def test_stored_synthetic_configs_are_the_recipe():
    for name, config in arch_grid.synthetic_configs().items():
        path = arch_grid.CONFIGS / name / "config.json"
        assert path.is_file(), f"{name}: run write_synthetic()"
        assert json.loads(path.read_text()) == config, f"{name}: run write_synthetic()"


def test_stored_vllm_configs_are_the_recipe():
    """The vllm-* directories are exactly the recipe's (vllm_configs of VLLM_CONFIGS_RELEASE's registry), each file as
    the writer stores it. The recipe is transformers' default configs, so it is checked with the transformers that wrote
    the files (their _written_by)."""
    transformers = pytest.importorskip("transformers")
    stored = _stored_vllm_configs()
    assert stored, "no vllm-* configs: run write_vllm_configs()"
    versions = {m.group(1) for text in stored.values() if (m := WRITTEN_BY.search(json.loads(text)["_written_by"]))}
    assert len(versions) == 1, f"vllm-* configs written by several transformers: {sorted(versions)}"
    if transformers.__version__ not in versions:
        pytest.skip(f"the vllm-* configs were written by transformers {versions.pop()}, not {transformers.__version__}")
    wanted = arch_grid.vllm_configs(arch_grid.VLLM_CONFIGS_RELEASE)
    assert sorted(stored) == sorted(wanted), "run write_vllm_configs() (it adds and removes vllm-* directories)"
    for name, config in wanted.items():
        assert stored[name] == arch_grid.vllm_config_text(config), f"{name}: run write_vllm_configs()"


def test_the_two_entry_configs_put_a_name_the_registry_lacks_or_a_breakable_name_beside_a_served_one():
    """The grid's configs with several architectures entries: vLLM resolves them entry by entry (the goldens record
    which); each holds a served entry, and one has an unserved first entry."""
    from advisor.rules.vllm import architectures as registry

    served = registry.served(arch_grid.VLLM_CONFIGS_RELEASE)
    several = {name: config["architectures"] for name, config in arch_grid.synthetic_configs().items()
               if len(config["architectures"]) > 1}  # fmt: skip
    assert len(several) >= 3
    assert all(any(a in served for a in archs) for archs in several.values())
    assert any(archs[0] not in served for archs in several.values())


def test_a_golden_rewritten_from_its_stored_lines_is_the_same_file(tmp_path):
    """--missing keeps a stored golden's lines as they are: rewriting a golden from them alone reproduces it, in grid
    order, and leaves out the scenarios the grid no longer has."""
    import conformance.vllm as harness

    source = harness.golden_path("0.33.0", grid="architectures")
    kept = harness.stored_results(source)
    empty = tmp_path / "results.jsonl"
    empty.write_text("")
    items = arch_grid.scenarios()
    written = harness.write_golden("0.33.0", items, empty, tmp_path, "architectures", kept)
    line_of = dict(zip(kept, source.read_text().splitlines(), strict=True))
    assert written.read_text().splitlines() == [line_of[s["id"]] for s in items if s["id"] in line_of]
    assert len(line_of) > len(items) // 2  # most of the grid is kept


def test_resolver_input_passes_a_scenario_s_overrides_last():
    grid = arch_grid.scenarios()[0]
    flagged = {**grid, "overrides": ["--enable-prefix-caching", "--mamba-block-size", "48"]}
    plain, passed = arch_grid.resolver_input(Path("."), [grid, flagged])
    assert passed["argv"][: len(plain["argv"])] == plain["argv"]
    assert passed["argv"][len(plain["argv"]) :] == ["--enable-prefix-caching", "--mamba-block-size", "48"]
