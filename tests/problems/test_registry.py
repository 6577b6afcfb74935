"""The registry accepts the suite and refuses malformed problems with a message that names file and field."""

import re
import shutil
from pathlib import Path

import pytest

from problems.registry import PROBLEMS_ROOT, ProblemError, discover, evaluate_expression, get, load_problem

EXAMPLE = PROBLEMS_ROOT / "collectives" / "all_reduce"


def make_problem(tmp_path: Path, edit=None, drop: str | None = None) -> Path:
    folder = tmp_path / "collectives" / "example"
    shutil.copytree(EXAMPLE, folder)
    if edit:
        toml = folder / "problem.toml"
        toml.write_text(edit(toml.read_text()))
    if drop:
        (folder / drop).unlink()
    return folder


def test_the_example_problem_loads(tmp_path):
    problem = load_problem(make_problem(tmp_path), tmp_path)
    assert problem.id == "collectives/example"
    assert problem.presets["bench"].dtype == "bfloat16"
    assert problem.roofline_terms(4, "bench")["link_bytes_per_rank"] == 2 * 3 / 4 * 8388608 * 2


@pytest.mark.parametrize(
    "edit, fragment",
    [
        (lambda t: t.replace('title = "All-reduce (sum)"\n', ""), "field 'title' is missing"),
        (lambda t: t.replace("version = 1", 'version = "one"'), "field 'version' must be int"),
        (lambda t: t.replace('category = "collectives"', 'category = "misc"'), "use one of collectives"),
        (lambda t: t.replace("world_sizes = [2, 4, 8]", "world_sizes = []"), "'world_sizes' must be a non-empty"),
        (lambda t: t.replace('dtype = "bfloat16"', 'dtype = "bf16"'), "[presets.bench]: the field 'dtype'"),
        (lambda t: t.replace("[presets.small]", "[presets.tiny]"), "[presets.small] is missing"),
        (lambda t: t.replace("[tolerance.bfloat16]", "[tolerance.float16]"), "[tolerance.bfloat16] is missing"),
        (lambda t: t.replace('"(W + 1) * numel * E"', "\"__import__('os')\""), "calls something other than"),
        (lambda t: t.replace('"(W + 1) * numel * E"', '"(W + 1) * numl * E"'), "names 'numl'"),
        (lambda t: t + "\n[[broken", "not valid TOML"),
    ],
)
def test_malformed_metadata_is_refused_naming_file_and_field(tmp_path, edit, fragment):
    with pytest.raises(ProblemError) as err:
        load_problem(make_problem(tmp_path, edit), tmp_path)
    assert fragment in str(err.value)
    assert "problem.toml" in str(err.value)


def test_missing_reference_function_is_named(tmp_path):
    folder = make_problem(tmp_path)
    ref = folder / "reference.py"
    ref.write_text(ref.read_text().replace("def oracle(", "def not_the_oracle("))
    with pytest.raises(ProblemError, match="the function 'oracle' is missing"):
        load_problem(folder, tmp_path)


def test_missing_statement_file_is_named(tmp_path):
    with pytest.raises(ProblemError, match="README.md is missing"):
        load_problem(make_problem(tmp_path, drop="README.md"), tmp_path)


def test_category_must_match_the_folder(tmp_path):
    folder = make_problem(tmp_path, lambda t: t.replace('category = "collectives"', 'category = "pipeline"'))
    with pytest.raises(ProblemError, match="move the folder or fix the field"):
        load_problem(folder, tmp_path)


def test_content_hash_changes_with_the_reference(tmp_path):
    folder = make_problem(tmp_path)
    before = load_problem(folder, tmp_path).content_hash
    ref = folder / "reference.py"
    ref.write_text(ref.read_text() + "\n# changed\n")
    assert load_problem(folder, tmp_path).content_hash != before


def test_unknown_problem_lists_known_ones():
    with pytest.raises(ProblemError, match="unknown problem 'nope/x'.*collectives/all_reduce"):
        get("nope/x")


def test_roofline_formulas_are_arithmetic_only():
    assert evaluate_expression("max(a, 2) * W", {"a": 1, "W": 4}) == 8
    with pytest.raises(ProblemError):
        evaluate_expression("a.__class__", {"a": 1})


def test_the_whole_suite_is_valid():
    problems = discover()
    assert "collectives/all_reduce" in problems
    assert all(p.version >= 1 and p.world_sizes for p in problems.values())


def _without_hard_and_tags(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if not line.startswith(("hard =", "tags =")))


def test_hard_line_and_tags_are_read_onto_the_problem(tmp_path):
    problem = load_problem(
        make_problem(
            tmp_path,
            lambda t: (
                'hard = "bandwidth-bound at large sizes"\ntags = ["inter-node", "decode"]\n' + _without_hard_and_tags(t)
            ),
        ),
        tmp_path,
    )
    assert problem.hard == "bandwidth-bound at large sizes"
    assert problem.tags == ("inter-node", "decode") and problem.has_tag("inter-node")


def test_hard_and_tags_are_optional(tmp_path):
    problem = load_problem(make_problem(tmp_path, _without_hard_and_tags), tmp_path)
    assert problem.hard == "" and problem.tags == ()


@pytest.mark.parametrize(
    "line, fragment",
    [
        ("hard = 3", "the field 'hard' must be str"),
        ('hard = "' + "x" * 161 + '"', "the field 'hard' is 161 characters; keep it to 160"),
        ('hard = "two\\nlines"', "the field 'hard' must be one non-empty line"),
        ('hard = ""', "the field 'hard' must be one non-empty line"),
        ('tags = "inter-node"', "the field 'tags' must be a list of strings"),
        ('tags = ["Inter Node"]', "the field 'tags' holds 'Inter Node'"),
        ("tags = [1]", "the field 'tags' holds 1"),
        ('tags = ["a", "a"]', "the field 'tags' repeats a tag"),
    ],
)
def test_malformed_hard_or_tags_is_refused_naming_file_and_field(tmp_path, line, fragment):
    with pytest.raises(ProblemError) as err:
        load_problem(make_problem(tmp_path, lambda t: line + "\n" + _without_hard_and_tags(t)), tmp_path)
    assert fragment in str(err.value) and "problem.toml" in str(err.value)


def test_internode_roofline_term_is_optional_and_validated(tmp_path):
    plain = load_problem(make_problem(tmp_path), tmp_path)
    assert "internode_bytes_per_rank" not in plain.roofline_terms(4, "bench")
    shutil.rmtree(tmp_path / "collectives")
    with_term = load_problem(
        make_problem(
            tmp_path, lambda t: t.replace("[roofline]\n", '[roofline]\ninternode_bytes_per_rank = "numel * E / W"\n')
        ),
        tmp_path,
    )
    assert with_term.roofline_terms(4, "bench")["internode_bytes_per_rank"] == 8388608 * 2 / 4
    for bad, fragment in (('"numl * E"', "names 'numl'"), ('"-numel"', "is negative")):
        shutil.rmtree(tmp_path / "collectives")
        with pytest.raises(ProblemError) as err:
            load_problem(
                make_problem(
                    tmp_path,
                    lambda t, bad=bad: t.replace("[roofline]\n", f"[roofline]\ninternode_bytes_per_rank = {bad}\n"),
                ),
                tmp_path,
            )
        assert "internode_bytes_per_rank" in str(err.value) and fragment in str(err.value)


def test_suite_version_is_a_date_like_string():
    from problems.registry import SUITE_VERSION

    assert re.fullmatch(r"\d{4}\.\d{2}(\.\d+)?", SUITE_VERSION)


def test_every_built_in_problem_says_why_it_is_hard():
    missing = [pid for pid, p in discover().items() if not p.hard]
    assert not missing, f"problems without a 'hard' line: {missing}"


def test_inter_node_problems_take_ranks_per_node_and_bound_internode_bytes():
    inter = {pid: p for pid, p in discover().items() if p.has_tag("inter-node")}
    assert len(inter) >= 6
    for pid, p in inter.items():
        assert "internode_bytes_per_rank" in p.roofline, pid
        assert 4 in p.world_sizes and 8 in p.world_sizes, pid


@pytest.mark.parametrize(
    "formula, bound",
    [
        ("9**9**9**9", "exponents are limited to 64"),
        ("(10**20) * (10**20)", "beyond 1e30"),
        ("2**63 * 2**63", "beyond 1e30"),
        ("1" + " + 1" * 400, "the limit is 500"),
        ("-" * 250 + "1", "parts; the limit is 200"),
        ("(-8) ** 0.5", "fractional power"),
        ("min + 1", "without calling it"),
    ],
)
def test_roofline_formulas_are_bounded_and_refused_at_once(formula, bound):
    import time

    started = time.monotonic()
    with pytest.raises(ProblemError, match=re.escape(bound)):
        evaluate_expression(formula, {"N": 1 << 20, "W": 4, "E": 2})
    assert time.monotonic() - started < 0.5


def test_bounded_formulas_still_give_the_real_suites_figures():
    assert evaluate_expression("2 * (W - 1) / W * N * E", {"N": 1 << 30, "W": 8, "E": 2}) == 2 * 7 / 8 * (1 << 31)
    assert evaluate_expression("2 * M * N * K / W", {"M": 8192, "N": 8192, "K": 8192, "W": 4}) == 2 * 8192**3 / 4
    assert evaluate_expression("log2(W) * N ** 2", {"N": 1000, "W": 8}) == 3e6
