"""The proposal and review forms. They only collect input; the services decide what is valid."""

from __future__ import annotations

import json

from django import forms

from problems.registry import CATEGORIES

# (form field, file name in the folder, rows of its paste box)
PROBLEM_FILES = (
    ("problem_toml", "problem.toml", 14),
    ("reference_py", "reference.py", 18),
    ("readme_md", "README.md", 14),
)


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    """Several files in one input (Django's documented pattern); cleans to a list."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("widget", MultipleFileInput(attrs={"accept": ".py,text/x-python"}))
        super().__init__(*args, **kwargs)

    def clean(self, data, initial=None):
        single = super().clean
        if isinstance(data, (list, tuple)):
            return [single(d, initial) for d in data if d]
        return [single(data, initial)] if data else []


def _code(rows: int) -> forms.Textarea:
    return forms.Textarea(attrs={"rows": rows, "spellcheck": "false", "class": "code"})


class ProposalForm(forms.Form):
    category = forms.ChoiceField(
        choices=[(k, f"{k} — {v}") for k, v in CATEGORIES.items()],
        help_text="The folder under problems/ (and the 'category' in problem.toml).",
    )
    name = forms.CharField(
        max_length=64,
        help_text="The folder name: lower-case letters, digits and underscores, "
        "e.g. all_gather_matmul. The problem id is category/name.",
    )
    problem_toml_file = forms.FileField(
        required=False, label="Upload problem.toml", widget=forms.ClearableFileInput(attrs={"accept": ".toml"})
    )
    problem_toml = forms.CharField(required=False, strip=False, widget=_code(14), label="…or paste problem.toml")
    reference_py_file = forms.FileField(
        required=False, label="Upload reference.py", widget=forms.ClearableFileInput(attrs={"accept": ".py"})
    )
    reference_py = forms.CharField(required=False, strip=False, widget=_code(18), label="…or paste reference.py")
    readme_md_file = forms.FileField(
        required=False, label="Upload README.md", widget=forms.ClearableFileInput(attrs={"accept": ".md,text/markdown"})
    )
    readme_md = forms.CharField(required=False, strip=False, widget=_code(14), label="…or paste README.md")
    correct = MultipleFileField(
        required=False,
        label="Known answers that must pass (solutions/correct/*.py)",
        help_text="Optional here, but the catalogue needs at least one before merging.",
    )
    correct_source = forms.CharField(
        required=False,
        strip=False,
        widget=_code(8),
        label="…or paste one correct solution (saved as solutions/correct/pasted.py)",
    )
    wrong = MultipleFileField(
        required=False,
        label="Known answers that must fail (solutions/wrong/*.py)",
        help_text="Optional here, but the catalogue needs at least one before merging.",
    )
    wrong_source = forms.CharField(
        required=False,
        strip=False,
        widget=_code(8),
        label="…or paste one wrong solution (saved as solutions/wrong/pasted.py)",
    )
    # Known answers uploaded with an earlier try that failed validation, kept so they need not be uploaded again:
    # JSON [{"kind", "name", "text"}] (see keep_uploads). They go through the same checks as uploads.
    kept_answers = forms.CharField(required=False, strip=False, widget=forms.HiddenInput)
    drop_kept = forms.BooleanField(required=False, label="Forget the known answers kept from the last try")

    def clean(self):
        data = super().clean()
        for field, filename, _ in PROBLEM_FILES:
            has_file, has_text = bool(data.get(f"{field}_file")), bool((data.get(field) or "").strip())
            if has_file and has_text:
                self.add_error(field, f"Give {filename} either as a file or as pasted text, not both.")
            elif not has_file and not has_text:
                self.add_error(field, f"{filename} is required: upload it or paste it.")
        return data

    def file_or_text(self, field: str):
        """The upload (a file object) or the pasted text of one of the three files."""
        return self.cleaned_data.get(f"{field}_file") or self.cleaned_data.get(field)

    def kept(self) -> list[dict[str, str]]:
        """The known answers kept from an earlier try (see keep_uploads), unless the contributor dropped them."""
        if self.data.get(self.add_prefix("drop_kept")):
            return []
        try:
            items = json.loads(self.data.get(self.add_prefix("kept_answers")) or "[]")
        except ValueError:
            return []
        if not isinstance(items, list):
            return []
        return [
            item
            for item in items
            if isinstance(item, dict)
            and item.get("kind") in ("correct", "wrong")
            and isinstance(item.get("name"), str)
            and isinstance(item.get("text"), str)
        ]

    def keep_uploads(self) -> list[str]:
        """After a validation error: what was uploaded is put back into the form, so nothing has to be given again.
        An uploaded problem.toml, reference.py or README.md goes into its paste box (unless text was pasted there
        too), known answers into a hidden field listed above the form. Returns what was kept and what could not be,
        one line each, for the page to say."""
        data = self.data.copy()
        notes: list[str] = []
        cleaned = getattr(self, "cleaned_data", {}) or {}
        files = self.files
        for field, filename, _ in PROBLEM_FILES:
            upload = cleaned.get(f"{field}_file") or files.get(self.add_prefix(f"{field}_file"))
            if not upload:
                continue
            text = _upload_text(upload)
            if text is None:
                notes.append(
                    f"{filename}: the uploaded {upload.name} is not UTF-8 text, so it was not kept; "
                    "upload it again once saved as UTF-8."
                )
            elif (data.get(self.add_prefix(field)) or "").strip():
                notes.append(
                    f"{filename}: you also pasted text, so the pasted text is kept and the uploaded "
                    f"{upload.name} is not."
                )
            else:
                data[self.add_prefix(field)] = text
                notes.append(f"{filename}: your upload {upload.name} is kept, as the text in its paste box.")
        kept = self.kept()
        for kind in ("correct", "wrong"):
            uploads = files.getlist(self.add_prefix(kind)) if hasattr(files, "getlist") else []
            for upload in uploads:
                text = _upload_text(upload)
                if text is None:
                    notes.append(f"solutions/{kind}/{upload.name} is not UTF-8 text, so it was not kept.")
                    continue
                kept = [k for k in kept if (k["kind"], k["name"]) != (kind, upload.name)]
                kept.append({"kind": kind, "name": upload.name, "text": text})
        data[self.add_prefix("kept_answers")] = json.dumps(kept) if kept else ""
        data.pop(self.add_prefix("drop_kept"), None)
        if kept:
            notes.append(
                "Known answers kept: "
                + ", ".join(f"solutions/{k['kind']}/{k['name']}" for k in kept)
                + " (sent again with the form; tick the box below to forget them)."
            )
        self.data = data
        return notes

    def known_answers(self):
        """(kind, filename, upload-or-text) for every known answer given."""
        out = [(item["kind"], item["name"], item["text"]) for item in self.kept()]
        uploaded = {
            (kind, upload.name) for kind in ("correct", "wrong") for upload in self.cleaned_data.get(kind) or []
        }
        out = [item for item in out if (item[0], item[1]) not in uploaded]  # a new upload replaces a kept one
        for kind in ("correct", "wrong"):
            out += [(kind, upload.name, upload) for upload in self.cleaned_data.get(kind) or []]
            pasted = self.cleaned_data.get(f"{kind}_source") or ""
            if pasted.strip():
                out.append((kind, "pasted.py", pasted))
        return out


def _upload_text(upload) -> str | None:
    """An uploaded file's text (UTF-8), read from its start; None when it is not UTF-8."""
    try:
        upload.seek(0)
        raw = upload.read()
        upload.seek(0)
        return raw.decode("utf-8")
    except (UnicodeDecodeError, ValueError, OSError):
        return None


class ReviewForm(forms.Form):
    decision = forms.ChoiceField(choices=[("accept", "Accept"), ("reject", "Reject")])
    note = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 4}),
        help_text="The contributor reads this. Required to reject: say what to change.",
    )
