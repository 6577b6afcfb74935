"""scripts/problem_catalogue.py lists every problem with its communication, and counts the inter-node ones."""

import importlib.util
from pathlib import Path

from problems.registry import SUITE_VERSION, discover

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "problem_catalogue.py"


def _script():
    spec = importlib.util.spec_from_file_location("problem_catalogue", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_catalogue_lists_every_problem_with_suite_version_and_inter_node_count():
    problems = discover()
    text = _script().catalogue_markdown(problems)
    assert f"Suite version **{SUITE_VERSION}**: {len(problems)} problems" in text
    inter = sum(1 for p in problems.values() if p.has_tag("inter-node"))
    assert inter >= 6 and f"{inter} of them inter-node" in text
    for pid in problems:
        assert f"| `{pid}` |" in text


def test_communication_falls_back_to_the_reference_collectives():
    script = _script()
    problem = discover()["collectives/all_reduce"]
    assert script.reference_collectives(problem) == ["all-reduce"]
    hierarchical = discover()["collectives/hierarchical_all_reduce"]
    assert script.communication(hierarchical) == hierarchical.communication != ""
