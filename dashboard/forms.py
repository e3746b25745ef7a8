"""Forms of the researchers' dashboard: validation only; the views call the services."""

from decimal import Decimal

from django import forms

from judging.engine import DEFAULT_ADAPTIVE_PARAMS, MAX_MODEL_ROUNDS
from judging.models import Campaign, Export
from pools.models import Collection


class CampaignCreateForm(forms.Form):
    name = forms.SlugField(max_length=100)
    collection = forms.ModelChoiceField(
        queryset=Collection.objects.current().order_by("name"), to_field_name="name"
    )
    mode = forms.ChoiceField(choices=Campaign.Mode.choices, initial=Campaign.Mode.CROWD)
    k = forms.IntegerField(min_value=1, initial=5)
    final_stage_size = forms.IntegerField(label="F", min_value=2, initial=9)
    opponents = forms.IntegerField(label="P", min_value=2, initial=7)
    max_votes = forms.IntegerField(
        required=False,
        min_value=1,
        initial=DEFAULT_ADAPTIVE_PARAMS.max_votes,
        help_text="adaptive mode: votes a pair may get before it is a tie",
    )
    confidence = forms.FloatField(
        required=False,
        min_value=0.5,
        max_value=0.999999,
        initial=DEFAULT_ADAPTIVE_PARAMS.confidence,
        help_text="adaptive mode: the probability that a confirmed pair's order is right",
    )
    max_judgments = forms.IntegerField(
        required=False,
        min_value=1,
        help_text="adaptive mode: the judgment budget; judging stops at this many judgments (blank: none)",
    )
    model_rounds = forms.IntegerField(
        required=False,
        min_value=1,
        max_value=MAX_MODEL_ROUNDS,
        help_text="with a budget: the rounds the judge model spreads it over (blank: "
        f"{DEFAULT_ADAPTIVE_PARAMS.model_rounds}); more rounds buy quality with time, not judgments",
    )
    seed = forms.IntegerField(initial=0)
    budget_usd = forms.DecimalField(required=False, min_value=Decimal("0"), decimal_places=2)

    def clean_max_votes(self):
        value = self.cleaned_data.get("max_votes")
        return DEFAULT_ADAPTIVE_PARAMS.max_votes if value is None else value

    def clean_confidence(self):
        value = self.cleaned_data.get("confidence")
        return DEFAULT_ADAPTIVE_PARAMS.confidence if value is None else value

    def __init__(self, *args, owner=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.owner = owner

    def clean_name(self):
        name = self.cleaned_data["name"]
        # Names are unique per owner: only the creator's own campaigns can be in the way.
        if Campaign.objects.filter(name=name, owner=self.owner).exists():
            raise forms.ValidationError(f"a campaign named {name!r} exists already")
        return name


class RunUploadForm(forms.Form):
    name = forms.CharField(max_length=200)
    file = forms.FileField()


ACTIONS = ("start", "pause", "resume", "publish", "score")


class CampaignActionForm(forms.Form):
    action = forms.ChoiceField(choices=[(a, a) for a in ACTIONS])


class ExportRequestForm(forms.Form):
    kind = forms.ChoiceField(choices=Export.Kind.choices)
