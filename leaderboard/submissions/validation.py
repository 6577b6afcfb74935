"""Upload validation: is this file a solution that can be evaluated for this problem on this profile?

Every check raises ``django.core.exceptions.ValidationError`` keyed by the field at fault (``problem``, ``profile``,
``source``) with a message that says what is wrong and what to do. Single uploads, model-run attempts and proposals'
known answers all pass through :func:`source_validate`, whose last step is the contract's one check that a file
defines ``solution`` (``evaluator.contract.source``).
"""

from __future__ import annotations

import ast
import posixpath

from django.conf import settings
from django.core.exceptions import ValidationError

from evaluator.contract.profiles import PROFILES
from evaluator.contract.source import solution_problem
from leaderboard import formats
from leaderboard.beyond_contract import solution_filename_ok
from leaderboard.models import Problem
from leaderboard.names import invisible_character


def _too_large(n: int, limit: int) -> ValidationError:
    return ValidationError(
        {
            "source": f"The file is {formats.size(n)}; the limit is {formats.size(limit)}. "
            f"Submit one Python file with just the solution."
        }
    )


def source_validate(source: str | bytes) -> str:
    """Returns the source as text, or raises ValidationError({'source': ...}) saying what to fix."""
    limit = settings.ARENA_MAX_SOURCE_BYTES
    raw = source if isinstance(source, bytes) else source.encode("utf-8", errors="surrogatepass")
    if len(raw) > limit:
        raise _too_large(len(raw), limit)
    if isinstance(source, bytes):
        try:
            text = source.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValidationError(
                {
                    "source": f"The file is not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset "
                    f"{exc.start}). Upload a Python source file saved as UTF-8."
                }
            ) from None
        text = text.removeprefix("\ufeff")
    else:
        text = source
    if not text.strip():
        raise ValidationError({"source": "The solution is empty. Upload a Python file that defines `solution`."})
    if "\x00" in text:
        raise ValidationError(
            {
                "source": "The file contains NUL bytes, so it is not Python source text. "
                "Upload the .py file itself, not a compiled or archived file."
            }
        )
    try:
        ast.parse(text)
    except SyntaxError as exc:
        where = f"line {exc.lineno}" + (f", column {exc.offset}" if exc.offset else "")
        line = (exc.text or "").rstrip()
        shown = f": `{line.strip()}`" if line.strip() else ""
        raise ValidationError(
            {
                "source": f"The file is not valid Python: {exc.msg} at {where}{shown}. "
                f"Fix it (run `python -m py_compile yourfile.py` to check) and submit again."
            }
        ) from None
    except ValueError as exc:  # e.g. unpaired surrogates
        raise ValidationError({"source": f"The file cannot be parsed as Python: {exc}."}) from None
    problem = solution_problem(text)
    if problem is not None:
        raise ValidationError({"source": problem})
    return text


def upload_read(upload) -> bytes:
    """The bytes of an uploaded file, refusing one over the size limit without reading it all."""
    limit = settings.ARENA_MAX_SOURCE_BYTES
    if upload.size is not None and upload.size > limit:
        raise _too_large(upload.size, limit)
    return upload.read(limit + 1)


def filename_clean(filename: str | None) -> str:
    name = posixpath.basename((filename or "").replace("\\", "/")).strip() or "solution.py"
    if not name.endswith(".py"):
        raise ValidationError(
            {
                "source": f"{name!r} is not a Python file. Upload a single .py file "
                f"(rename it if it already holds Python source)."
            }
        )
    bad = invisible_character(name)
    if len(name) > 255 or bad:
        raise ValidationError(
            {"source": f"The file name {'holds ' + bad if bad else 'is too long'}; rename it, e.g. to solution.py."}
        )
    return name


def filename_check(problem: Problem, filename: str) -> None:
    """ParallelKernelBench's file names for its imported suite: a name of another problem is refused."""
    wrong_name = solution_filename_ok(problem.id, filename)
    if wrong_name:
        raise ValidationError({"source": wrong_name})


def problem_resolve(problem: Problem | str) -> Problem:
    if isinstance(problem, Problem):
        return problem
    problem_id = (problem or "").strip().strip("/")
    row = Problem.objects.filter(pk=problem_id).first()
    if row is not None and not row.is_active:
        raise ValidationError(
            {
                "problem": f"{problem_id} has been retired from the suite and takes no new "
                f"submissions. Pick an active problem from the home page."
            }
        )
    if row is None:
        known = list(Problem.objects.filter(is_active=True).values_list("id", flat=True)[:6])
        hint = f" Known problems include {', '.join(known)}." if known else ""
        raise ValidationError(
            {
                "problem": f"There is no problem {problem_id!r}.{hint} "
                f"Pick one from the list on the home page or GET /api/problems/."
            }
        )
    return row


def profile_check(problem: Problem, profile: str) -> None:
    if profile not in PROFILES:
        raise ValidationError(
            {"profile": f"There is no hardware profile {profile!r}. Choose one of {', '.join(PROFILES)}."}
        )
    if not problem.supports(profile):
        world_size = PROFILES[profile].world_size
        fitting = problem.supported_profiles
        raise ValidationError(
            {
                "profile": (
                    f"{problem.id} runs on {', '.join(map(str, problem.world_sizes))} ranks, but {profile} has "
                    f"{world_size}. Choose a profile with a supported world size"
                    + (f": {', '.join(fitting)}." if fitting else ".")
                )
            }
        )
