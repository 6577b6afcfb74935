"""The API's ranking of model runs writes each run as ``serializers.ModelRunOutputSerializer`` writes it, field for
field and in its order, without DRF's per-field machinery (about half of the API's CPU for a page of 50 runs) and with
one ``reverse()`` a page instead of two a run; a run's record is kept once written (``RECORDS``), with the JSON text it
was rendered as (``KeptJSONRenderer``: a page of runs kept is written without encoding them again).
``tests/leaderboard/web/test_run_output.py`` holds it to the serializer and the text to DRF's renderer; the serializer
stays the API's documented schema."""

from __future__ import annotations

from typing import Any, Callable

from django.urls import reverse
from django.conf import settings
from django.utils.timezone import get_current_timezone, get_current_timezone_name
from rest_framework import serializers
from rest_framework.compat import SHORT_SEPARATORS
from rest_framework.renderers import JSONRenderer

from leaderboard.rankings import scores
from leaderboard.rankings.memo import Memo

_DATE = serializers.DateField()
_DATETIME = serializers.DateTimeField()
_BOOLEAN = serializers.BooleanField()


def _date(value: Any) -> Any:
    return None if value is None else _DATE.to_representation(value)


def _text(value: Any) -> Any:
    return None if value is None else str(value)


def _flag(value: Any) -> Any:
    return None if value is None else _BOOLEAN.to_representation(value)


# A run's record as the API writes it, kept per process for the same inputs (``rankings/memo.py``): after a result
# lands, the API's next page rewrites the run that changed and reuses the others. The records are shared between
# answers: nothing writes into them once built.
RECORDS = Memo(2048)


class RunOutput:
    """Writes runs for one request: the runs' page URLs are built from two prefixes."""

    def __init__(self, request: Any) -> None:
        absolute: Callable[[str], str] = request.build_absolute_uri if request is not None else str
        self.page = absolute(reverse("model-run-detail", kwargs={"run_id": 0}))[: -len("0/")]
        self.api = absolute(reverse("api-model-run-detail", kwargs={"run_id": 0}))[: -len("0/")]
        # Dates in the current time zone, looked up once: the field looks it up for every date it writes (about a
        # tenth of a page of runs written afresh) unless it is given one, which it then converts to the same way.
        zone = get_current_timezone() if settings.USE_TZ else None
        self._dates = _DATETIME if zone is None else serializers.DateTimeField(default_timezone=zone)

    def _datetime(self, value: Any) -> Any:
        return None if value is None else self._dates.to_representation(value)

    def __call__(self, run: Any) -> dict[str, Any]:
        """The run's record, from ``RECORDS`` when a run read the same (``RunRow.read``) with the same rank range was
        written for the same URL prefixes and time zone (the dates are written in it)."""
        return self._kept(run).record

    def results(self, runs: list[Any]) -> Results:
        """The records of ``runs``, each with the text it is rendered as (``KeptJSONRenderer``)."""
        kept = [self._kept(run) for run in runs]
        results = Results(k.record for k in kept)
        results.kept = kept
        return results

    def _kept(self, run: Any) -> _Kept:
        read = getattr(run, "read", None)
        if read is None:  # a model instance: written every time
            return _Kept(self._record(run))
        key = (self.page, self.api, get_current_timezone_name(), read, getattr(run, "rank_range", None))
        return RECORDS.get_or_build(key, lambda: _Kept(self._record(run)))

    def _record(self, run: Any) -> dict[str, Any]:
        span = getattr(run, "rank_range", None)
        return {
            "id": None if run.pk is None else int(run.pk),
            "model": _text(run.model),
            "provider": _text(run.provider),
            "user": _text(run.user.username),
            "profile": _text(run.profile),
            "precision": _text(run.precision),
            "suite": _text(run.suite),
            "run_date": _date(run.run_date),
            "open_weights": _flag(run.open_weights),
            "is_demo": _flag(run.is_demo),
            "state": _text(run.state),
            "attempts_done": None if run.attempts_done is None else int(run.attempts_done),
            "attempts_total": None if run.attempts_total is None else int(run.attempts_total),
            "created_at": self._datetime(run.created_at),
            "finished_at": self._datetime(run.finished_at),
            "published_at": self._datetime(run.published_at),
            "url": f"{self.page}{run.pk}/",
            "api_url": f"{self.api}{run.pk}/",
            "protocol": scores.protocol(run),
            "scores": scores.stored(run),
            "suite_version": _text(run.suite_version),
            "standing": getattr(getattr(run, "score", None), "status", None) or "unfinished",
            "rank": list(span) if span else None,
        }


class _Kept:
    """A run's record (never written into once built) and the JSON text it was rendered as, once it was."""

    __slots__ = ("record", "text")

    def __init__(self, record: dict[str, Any]) -> None:
        self.record = record
        self.text: bytes | None = None


class Results(list):
    """A page's records (``RunOutput.results``): a list of them, which any renderer writes as such, and what each was
    kept as (``kept``), which ``KeptJSONRenderer`` writes from."""

    kept: list[_Kept]


class KeptJSONRenderer(JSONRenderer):
    """DRF's ``JSONRenderer``, the same bytes: an answer whose last field is ``Results`` is written as the rest of it
    followed by each record's text, encoded once per kept record (a list's JSON is its items' joined by the
    separator, and the escapes of U+2028 and U+2029 are made within each item). Indented (``Accept: ...; indent=``)
    or any other answer: written as DRF writes it."""

    def render(self, data: Any, accepted_media_type: Any = None, renderer_context: Any = None) -> bytes:
        fields = list(data) if isinstance(data, dict) else []
        results = data[fields[-1]] if fields else None
        if (
            not isinstance(results, Results)
            or not self.compact
            or self.get_indent(accepted_media_type, renderer_context or {}) is not None
        ):
            return super().render(data, accepted_media_type, renderer_context)
        head = super().render({**data, fields[-1]: []}, accepted_media_type, renderer_context)
        texts = []
        encode = None  # (as the renderer encodes, with one encoder for the page: json.dumps makes one a call)
        for kept in results.kept:
            if kept.text is None:
                if encode is None:
                    encode = self.encoder_class(
                        ensure_ascii=self.ensure_ascii, allow_nan=not self.strict, separators=SHORT_SEPARATORS
                    ).encode
                text = encode(kept.record).replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
                kept.text = text.encode()
            texts.append(kept.text)
        return head[: -len(b"[]}")] + b"[" + b",".join(texts) + b"]}"
