"""``/datasets/``: the datasheet and downloads of each config (JSONL or Parquet), built from the database on request
exactly as ``manage.py export_datasets`` writes them."""

from __future__ import annotations

import io

from django.http import Http404, HttpResponse
from django.shortcuts import render

from leaderboard.datasets import export


def datasets(request):
    import datetime as dt

    from django.urls import reverse

    from leaderboard.web import exports as page_exports

    refused = page_exports.unknown_format(request, tables=("datasets",))
    if refused is not None:
        return refused
    table = page_exports.dataset_table()
    if table.wants_export(request, main=True):
        rows = [
            {
                "config": c,
                **{
                    fmt: request.build_absolute_uri(reverse("dataset-download", args=[c, fmt]))
                    for fmt in ("jsonl", "parquet")
                },
            }
            for c in export.CONFIGS
        ]
        return table.export(
            request,
            rows,
            filename="datasets",
            meta={"version": export.dataset_version(dt.date.today()), "licence": export.LICENCE},
        )
    return render(
        request,
        "leaderboard/datasets.html",
        {
            "version": export.dataset_version(dt.date.today()),
            "configs": list(export.CONFIGS),
            "datasheet": export.datasheet(),
            "licence": export.LICENCE,
        },
    )


def dataset_download(request, config: str, fmt: str):
    if config not in export.CONFIGS or fmt not in ("jsonl", "parquet"):
        raise Http404("no such dataset")
    rows = export.CONFIGS[config]()
    if fmt == "jsonl":
        response = HttpResponse(export.to_jsonl(rows), content_type="application/x-ndjson; charset=utf-8")
    else:
        import tempfile
        from pathlib import Path

        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "data.parquet"
            export.write_parquet(rows, config, path)
            body = io.BytesIO(path.read_bytes())
        response = HttpResponse(body.getvalue(), content_type="application/vnd.apache.parquet")
    response["Content-Disposition"] = f'attachment; filename="arena-{config}.{fmt}"'
    return response
