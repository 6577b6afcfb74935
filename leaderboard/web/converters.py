"""URL converter for problem ids, which hold one slash: ``collectives/all_reduce``."""

from django.urls import register_converter


class ProblemIdConverter:
    regex = r"[A-Za-z0-9][A-Za-z0-9_-]*/[A-Za-z0-9][A-Za-z0-9_.-]*"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return str(value)


register_converter(ProblemIdConverter, "problem")
