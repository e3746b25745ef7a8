"""The planner: the ``toppref plan`` parameters in, expected judgments, HITs, cost and risk out."""

from __future__ import annotations

import random

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from judging.api.base import ResearcherApi
from judging.engine import CrowdParams, HitShape
from judging.engine.planning import plan_campaign
from judging.models import Campaign
from pools.models import Collection
from pools.selectors import collection_candidate_pools


class PlanRequestSerializer(serializers.Serializer):
    """The parameters of ``toppref plan``: a collection's graded qrels (``collection``) or one pool size."""

    collection = serializers.SlugRelatedField(
        slug_field="name", queryset=Collection.objects.all(), required=False, allow_null=True
    )
    pool_size = serializers.IntegerField(required=False, allow_null=True, min_value=0, max_value=10_000)
    k = serializers.IntegerField(default=5, min_value=1)
    F = serializers.IntegerField(default=9, min_value=1)
    P = serializers.IntegerField(default=7, min_value=1)
    culling = serializers.ChoiceField(choices=Campaign.Culling.choices, default=Campaign.Culling.HALF)
    max_rounds = serializers.IntegerField(default=10, min_value=1, max_value=100)
    reinstate = serializers.BooleanField(default=True)
    preferences_per_hit = serializers.IntegerField(default=10, min_value=1)
    challenges_per_hit = serializers.IntegerField(default=3, min_value=0)
    pay_per_hit = serializers.FloatField(default=2.0, min_value=0)
    fee = serializers.FloatField(default=0.4, min_value=0)
    trials = serializers.IntegerField(default=100, min_value=1, max_value=1000)
    seed = serializers.IntegerField(default=0)

    def validate(self, data):
        if data.get("collection") is None and data.get("pool_size") is None:
            raise ValidationError({"collection": ["give collection or pool_size"]})
        return data


class PlanApi(ResearcherApi, APIView):
    """POST the ``toppref plan`` parameters: expected judgments, HITs, cost and the risk ``p_miss``."""

    @extend_schema(request=PlanRequestSerializer, responses={200: OpenApiTypes.OBJECT})
    def post(self, request):
        from judging.engine import Pricing

        data = PlanRequestSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        args = data.validated_data
        params = CrowdParams(
            k=args["k"],
            F=args["F"],
            P=args["P"],
            culling=args["culling"],
            max_rounds=args["max_rounds"],
            reinstate=args["reinstate"],
        )
        try:
            params.validate()
            hit_shape = HitShape(
                preferences=args["preferences_per_hit"], challenges=args["challenges_per_hit"]
            )
            hit_shape.validate()
        except ValueError as error:
            raise ValidationError({"non_field_errors": [str(error)]}) from None
        if args.get("pool_size") is not None:
            pool_sizes = {"pool": args["pool_size"]}
        else:
            pools = collection_candidate_pools(collection=args["collection"], k=args["k"])
            pool_sizes = {topic: len(pool) for topic, pool in pools.items()}
        try:
            plan = plan_campaign(
                pool_sizes,
                params=params,
                trials=args["trials"],
                rng=random.Random(args["seed"]),
                hit_shape=hit_shape,
                pricing=Pricing(pay_per_hit=args["pay_per_hit"], fee=args["fee"]),
            )
        except ValueError as error:
            raise ValidationError({"non_field_errors": [str(error)]}) from None
        plan["seed"] = args["seed"]
        return Response(plan)
