"""The site's upload forms. They only collect input; the services decide whether it can be evaluated (the ranking's
filter form is ``rankings.filters.RunFilterSet``'s)."""

from __future__ import annotations

from django import forms
from django.core.exceptions import ValidationError
from django.http import HttpRequest

from evaluator.contract.profiles import PROFILES
from leaderboard.catalogue.selectors import problem_list
from leaderboard.submissions.selectors import live_queues

NO_WORKER = "no worker serves it now: a submission waits until one starts"


class SubmissionForm(forms.Form):
    """The upload form. It only collects input; ``submission_create`` decides whether it can be evaluated."""

    problem = forms.ChoiceField(help_text="The problem your solution answers.")
    profile = forms.ChoiceField(
        label="Hardware profile",
        choices=[(p.name, f"{p.name} — {p.description}") for p in PROFILES.values()],
        help_text="Where it runs. CPU profiles (gloo) run small sizes and are for trying the pipeline.",
    )
    file = forms.FileField(required=False, label="Solution file (.py)")
    source = forms.CharField(
        required=False,
        strip=False,
        label="…or paste the source",
        widget=forms.Textarea(attrs={"rows": 16, "spellcheck": "false", "class": "code"}),
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["problem"].choices = [(p.id, f"{p.id} — {p.title}") for p in problem_list()]
        # Profiles no live worker serves are marked before anything is submitted (nothing is said when Redis
        # cannot be read). They stay selectable: a worker of that kind may start later.
        live = live_queues()
        self.unserved = [p.name for p in PROFILES.values() if live and not live.get(p.queue)]
        if self.unserved:
            self.fields["profile"].choices = [
                (p.name, f"{p.name} — {p.description}" + (f" ({NO_WORKER})" if p.name in self.unserved else ""))
                for p in PROFILES.values()
            ]
            self.fields["profile"].help_text += (
                " Profiles marked “no worker” have no live worker right now: " + ", ".join(self.unserved) + "."
            )

    def clean(self):
        data = super().clean()
        has_file, has_source = bool(data.get("file")), bool((data.get("source") or "").strip())
        if has_file and has_source:
            raise forms.ValidationError("Give either a file or pasted source, not both.")
        if not has_file and not has_source:
            raise forms.ValidationError("Choose a .py file to upload or paste the source of your solution.")
        return data


class ModelRunForm(forms.Form):
    """The model-run upload form: one archive; ``model_run_create`` validates everything in it."""

    archive = forms.FileField(
        label="Model-run archive (.zip or .tar.gz)",
        help_text=(
            "manifest.json (model, provider, protocol, k, turn_budget, tokens, wall_time_s, hardware, date, "
            "open_weights; optionally precision, notes, suite), attempts/<category>/<name>/attempt_<i>.py "
            "for i = 1..k, and optionally trajectories/<category>/<name>/attempt_<i>.jsonl."
        ),
        widget=forms.ClearableFileInput(attrs={"accept": ".zip,.tar.gz,.tgz,application/zip,application/gzip"}),
    )


def form_errors_from(form: forms.Form, exc: ValidationError) -> None:
    """A service's refusal shown on the form that sent the input: each message on its field where the form has it
    (a source that came as a file on the file field), the others above the form."""
    if hasattr(exc, "error_dict"):
        for field, errors in exc.message_dict.items():
            target = field if field in form.fields else None
            if field == "source" and form.cleaned_data.get("file"):
                target = "file"
            for message in errors:
                form.add_error(target, message)
    else:
        for message in exc.messages:
            form.add_error(None, message)


def published_flag(request: HttpRequest) -> bool:
    """Whether a publish button asks to publish (the default) or to make private again (``published=0``)."""
    return request.POST.get("published", "1") not in ("0", "false", "no")
