"""Forms of the researchers' dashboard: validation only; the views call the services."""

from decimal import Decimal

from django import forms

from judging.models import Campaign, Export
from pools.models import Collection


class CampaignCreateForm(forms.Form):
    name = forms.SlugField(max_length=100)
    collection = forms.ModelChoiceField(queryset=Collection.objects.order_by("name"), to_field_name="name")
    mode = forms.ChoiceField(choices=Campaign.Mode.choices, initial=Campaign.Mode.CROWD)
    k = forms.IntegerField(min_value=1, initial=5)
    final_stage_size = forms.IntegerField(label="F", min_value=2, initial=9)
    opponents = forms.IntegerField(label="P", min_value=2, initial=7)
    seed = forms.IntegerField(initial=0)
    budget_usd = forms.DecimalField(required=False, min_value=Decimal("0"), decimal_places=2)

    def clean_name(self):
        name = self.cleaned_data["name"]
        if Campaign.objects.filter(name=name).exists():
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
