"""The proposal and review forms. They only collect input; the services decide what is valid."""

from __future__ import annotations

from django import forms

from problems.registry import CATEGORIES

# (form field, file name in the folder, rows of its paste box)
PROBLEM_FILES = (("problem_toml", "problem.toml", 14), ("reference_py", "reference.py", 18),
                 ("readme_md", "README.md", 14))


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
    category = forms.ChoiceField(choices=[(k, f"{k} — {v}") for k, v in CATEGORIES.items()],
                                 help_text="The folder under problems/ (and the 'category' in problem.toml).")
    name = forms.CharField(max_length=64, help_text="The folder name: lower-case letters, digits and underscores, "
                                                    "e.g. all_gather_matmul. The problem id is category/name.")
    problem_toml_file = forms.FileField(required=False, label="Upload problem.toml",
                                        widget=forms.ClearableFileInput(attrs={"accept": ".toml"}))
    problem_toml = forms.CharField(required=False, strip=False, widget=_code(14), label="…or paste problem.toml")
    reference_py_file = forms.FileField(required=False, label="Upload reference.py",
                                        widget=forms.ClearableFileInput(attrs={"accept": ".py"}))
    reference_py = forms.CharField(required=False, strip=False, widget=_code(18), label="…or paste reference.py")
    readme_md_file = forms.FileField(required=False, label="Upload README.md",
                                     widget=forms.ClearableFileInput(attrs={"accept": ".md,text/markdown"}))
    readme_md = forms.CharField(required=False, strip=False, widget=_code(14), label="…or paste README.md")
    correct = MultipleFileField(required=False, label="Known answers that must pass (solutions/correct/*.py)",
                                help_text="Optional here, but the catalogue needs at least one before merging.")
    correct_source = forms.CharField(required=False, strip=False, widget=_code(8),
                                     label="…or paste one correct solution (saved as solutions/correct/pasted.py)")
    wrong = MultipleFileField(required=False, label="Known answers that must fail (solutions/wrong/*.py)",
                              help_text="Optional here, but the catalogue needs at least one before merging.")
    wrong_source = forms.CharField(required=False, strip=False, widget=_code(8),
                                   label="…or paste one wrong solution (saved as solutions/wrong/pasted.py)")

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

    def known_answers(self):
        """(kind, filename, upload-or-text) for every known answer given."""
        out = []
        for kind in ("correct", "wrong"):
            out += [(kind, upload.name, upload) for upload in self.cleaned_data.get(kind) or []]
            pasted = self.cleaned_data.get(f"{kind}_source") or ""
            if pasted.strip():
                out.append((kind, "pasted.py", pasted))
        return out


class ReviewForm(forms.Form):
    decision = forms.ChoiceField(choices=[("accept", "Accept"), ("reject", "Reject")])
    note = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 4}),
                           help_text="The contributor reads this. Required to reject: say what to change.")
