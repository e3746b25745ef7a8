"""The planner: the ``toppref plan`` parameters in, expected judgments, HITs, cost and risk out."""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from judging.api.base import ResearcherApi
from judging.engine import (
    MAX_OPPONENTS,
    MAX_PER_HIT,
    MAX_POOL_SIZE,
    MAX_ROUNDS,
    MAX_STAGE2_POOL,
    MAX_TRIALS,
    CrowdParams,
    HitShape,
    PlanTimeExceededError,
    plan_bounds_check,
)
from judging.models import Campaign
from pools.models import Collection
from pools.selectors import collection_candidate_pools


class PlanRequestSerializer(serializers.Serializer):
    """The parameters of ``toppref plan``: a collection's graded qrels (``collection``) or one pool size."""

    collection = serializers.SlugRelatedField(
        slug_field="name", queryset=Collection.objects.current(), required=False, allow_null=True
    )
    # The bounds are the CLI's (judging/engine/params.py); the plan's total work is bounded in post().
    pool_size = serializers.IntegerField(
        required=False, allow_null=True, min_value=0, max_value=MAX_POOL_SIZE
    )
    k = serializers.IntegerField(default=5, min_value=1, max_value=MAX_STAGE2_POOL)
    F = serializers.IntegerField(default=9, min_value=1, max_value=MAX_STAGE2_POOL)
    P = serializers.IntegerField(default=7, min_value=1, max_value=MAX_OPPONENTS)
    culling = serializers.ChoiceField(choices=Campaign.Culling.choices, default=Campaign.Culling.HALF)
    max_rounds = serializers.IntegerField(default=10, min_value=1, max_value=MAX_ROUNDS)
    reinstate = serializers.BooleanField(default=True)
    preferences_per_hit = serializers.IntegerField(default=10, min_value=1, max_value=MAX_PER_HIT)
    challenges_per_hit = serializers.IntegerField(default=3, min_value=0, max_value=MAX_PER_HIT)
    pay_per_hit = serializers.FloatField(default=2.0, min_value=0, max_value=1e6)
    fee = serializers.FloatField(default=0.4, min_value=0, max_value=1e6)
    trials = serializers.IntegerField(default=100, min_value=1, max_value=MAX_TRIALS)
    seed = serializers.IntegerField(default=0, min_value=0, max_value=2**32 - 1)  # the CLI's --seed range

    def validate(self, data):
        if data.get("collection") is None and data.get("pool_size") is None:
            raise ValidationError({"collection": ["give collection or pool_size"]})
        return data


class PlanApi(ResearcherApi, APIView):
    """POST the ``toppref plan`` parameters: expected judgments, HITs, cost and the risk ``p_miss``."""

    @extend_schema(request=PlanRequestSerializer, responses={200: OpenApiTypes.OBJECT})
    def post(self, request):
        from decimal import Decimal

        from judging.engine import Pricing
        from judging.services.planning import campaign_plan

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
        hit_shape = HitShape(preferences=args["preferences_per_hit"], challenges=args["challenges_per_hit"])
        # money as Decimal from the request on (str() keeps the amount as typed, not a binary float)
        pricing = Pricing(pay_per_hit=Decimal(str(args["pay_per_hit"])), fee=Decimal(str(args["fee"])))
        try:
            params.validate()
            hit_shape.validate()
        except ValueError as error:
            raise ValidationError({"non_field_errors": [str(error)]}) from None
        if args.get("pool_size") is not None:
            pool_sizes = {"pool": args["pool_size"]}
        else:
            pools = collection_candidate_pools(collection=args["collection"], k=args["k"])
            pool_sizes = {topic: len(pool) for topic, pool in pools.items()}
        try:
            plan_bounds_check(pool_sizes, params=params, hit_shape=hit_shape, trials=args["trials"])
        except ValueError as error:
            raise ValidationError({"non_field_errors": [str(error)]}) from None
        try:
            plan = campaign_plan(
                pool_sizes=pool_sizes,
                params=params,
                hit_shape=hit_shape,
                pricing=pricing,
                trials=args["trials"],
                seed=args["seed"],
                # a web worker must answer well within gunicorn's timeout (config/gunicorn.py)
                max_seconds=settings.TOPPREF_PLAN_MAX_SECONDS,
            )
        except PlanTimeExceededError as error:
            raise ValidationError({"non_field_errors": [f"{error} (TOPPREF_PLAN_MAX_SECONDS)"]}) from None
        except ValueError as error:
            raise ValidationError({"non_field_errors": [str(error)]}) from None
        return Response(plan)
