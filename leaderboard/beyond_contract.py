"""Everything the web side still takes from ``evaluator/`` beyond ``evaluator.contract``, in one place.

The leaderboard and the portal import the workers' code only through ``evaluator.contract`` (standard library only)
and through this module; ``tests/test_architecture.py`` holds them to that. Each name below says where it comes
from today. When its owner moves it into the contract, import it from there where it is used and delete it here;
when this module is empty, delete it.
"""

from __future__ import annotations

# ParallelKernelBench's file-name rules (uploads and model-run attempts may keep the checkout's own names).
from evaluator.suites.pkb.names import problem_for_solution_filename, solution_filename_ok

# The roofline of an arena problem on a profile, shown on its page when no evaluation has recorded one.
from evaluator.analysis.roofline import roofline

# Linear-interpolated percentile (the evaluator's timing summaries use the same one): the problem page's quartiles.
from evaluator.analysis.stats import percentile

# The check worker's folder rules for a proposal: the world sizes it checks at, the kinds of known answers, their
# file names, how the three files are written as a folder, and the report of a check that could not run to the end.
from evaluator.checks.problem_check import CHECK_WORLD_SIZES, KINDS, SOLUTION_FILENAME, failed_report, write_folder

# Prompt packs (torch-free): rendered from the problem folders, as `arena prompts` writes them; the registry's own
# problems (the folders, not their database rows) are what a prompt is rendered from.
from evaluator.prompts import available_backends as prompt_backends
from evaluator.prompts import jsonl as prompts_jsonl
from evaluator.prompts import pack as prompt_pack
from evaluator.prompts import problem_prompts

# Starter files of a problem (torch-free, generated from its reference), offered for download on its page.
from evaluator import starters as solution_starters
from problems.registry import SUITE_VERSION
from problems.registry import catalogue as registry_catalogue
from problems.registry import get as registry_problem

__all__ = [
    "SUITE_VERSION",
    "prompt_backends",
    "prompts_jsonl",
    "prompt_pack",
    "problem_prompts",
    "registry_catalogue",
    "registry_problem",
    "CHECK_WORLD_SIZES",
    "KINDS",
    "SOLUTION_FILENAME",
    "failed_report",
    "percentile",
    "problem_for_solution_filename",
    "roofline",
    "solution_filename_ok",
    "write_folder",
    "solution_starters",
]
