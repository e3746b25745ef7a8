"""REST API of the pools app: collections (list, create, copy) and importing topics, passages and qrels into
one. Only researchers (the ``researchers`` group) and staff. Every researcher reads every collection; only its
owner and staff change it (403 otherwise). A name means the collection's current version; a change to a
version that a started campaign uses makes a new version (``pools.services.versions``)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from django.core.exceptions import ValidationError as ModelValidationError
from django.http import Http404
from drf_spectacular.utils import extend_schema
from rest_framework import generics, permissions, serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from pools.access import IsResearcher
from pools.models import Collection
from pools.selectors import collection_list_with_counts
from pools.services import (
    CollectionForbiddenError,
    collection_change_check,
    collection_copy,
    collection_create,
)


class CollectionSerializer(serializers.ModelSerializer):
    topic_count = serializers.IntegerField(read_only=True)
    item_count = serializers.IntegerField(read_only=True)
    run_count = serializers.IntegerField(read_only=True)
    owner = serializers.CharField(source="owner.username", read_only=True, default=None)

    class Meta:
        model = Collection
        fields = [
            "name",
            "description",
            "is_strict",
            "owner",
            "version",
            "topic_count",
            "item_count",
            "run_count",
            "created_at",
        ]
        read_only_fields = ["created_at", "version"]
        # A taken name is the service's check (unique among current versions only).
        validators: list = []


class CollectionListApi(generics.ListCreateAPIView):
    """Collections (list, create). A collection created here is the caller's: only they and staff change it."""

    permission_classes = [permissions.IsAuthenticated, IsResearcher]

    serializer_class = CollectionSerializer

    def get_queryset(self):
        return collection_list_with_counts()

    def perform_create(self, serializer):
        data = serializer.validated_data
        try:
            collection = collection_create(
                name=data["name"],
                description=data.get("description", ""),
                is_strict=data.get("is_strict", True),
                owner=self.request.user,
            )
        except ModelValidationError as error:
            raise ValidationError(error.message_dict) from None
        serializer.instance = collection_list_with_counts().get(pk=collection.pk)


class CollectionCopyRequestSerializer(serializers.Serializer):
    name = serializers.SlugField(max_length=100)
    description = serializers.CharField(required=False, allow_blank=True)


class CollectionCopyApi(APIView):
    """POST ``{"name": NEW}``: a copy of the collection (topics, passages, graded qrels, its own runs) owned by
    the caller: a collection of one's own to change. Any researcher may copy a collection they can read."""

    permission_classes = [permissions.IsAuthenticated, IsResearcher]

    @extend_schema(request=CollectionCopyRequestSerializer, responses={201: CollectionSerializer})
    def post(self, request, name: str):
        source = Collection.objects.current().filter(name=name).first()
        if source is None:
            raise Http404(f"no collection named {name!r}")
        data = CollectionCopyRequestSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            copy = collection_copy(
                source=source,
                name=data.validated_data["name"],
                owner=request.user,
                description=data.validated_data.get("description"),
            )
        except ModelValidationError as error:
            raise ValidationError(error.message_dict) from None
        return Response(
            CollectionSerializer(collection_list_with_counts().get(pk=copy.pk)).data,
            status=status.HTTP_201_CREATED,
        )


class CollectionFileSerializer(serializers.Serializer):
    file = serializers.FileField()


class ImportResultSerializer(serializers.Serializer):
    created = serializers.IntegerField()
    updated = serializers.IntegerField()
    unchanged = serializers.IntegerField()
    version = serializers.IntegerField()
    new_version = serializers.BooleanField()


class CollectionFileImportApi(APIView):
    """POST a file (multipart ``file``) into a collection: ``topics`` (TSV, CAsT JSON...), ``passages``
    (TSV or JSONL) or ``qrels`` (graded, ``topic Q0 docid grade``). All or nothing: a bad line is a 400
    naming ``file:line: problem`` and nothing is imported. The format follows the file name's extension.
    403 for a caller who is neither the collection's owner nor staff. A change to a version that a started
    campaign uses is made in a new version (``version`` and ``new_version`` in the answer), whoever runs
    the campaign."""

    permission_classes = [permissions.IsAuthenticated, IsResearcher]

    parser_classes = [MultiPartParser]
    kind = ""

    @extend_schema(
        request={"multipart/form-data": CollectionFileSerializer}, responses={200: ImportResultSerializer}
    )
    def post(self, request, name: str):
        from pools.services import passages_import, qrels_import, topics_import
        from pools.services.importing import ImportRejectedError
        from pools.trec import TrecFormatError

        collection = Collection.objects.current().filter(name=name).first()
        if collection is None:
            raise Http404(f"no collection named {name!r}")
        try:
            collection_change_check(collection, user=request.user)
        except CollectionForbiddenError as error:
            return Response({"detail": str(error)}, status=status.HTTP_403_FORBIDDEN)
        data = CollectionFileSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        upload = data.validated_data["file"]
        importer = {"topics": topics_import, "passages": passages_import, "qrels": qrels_import}[self.kind]
        suffix = Path(upload.name).suffix
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / f"upload{suffix}"
            with open(path, "wb") as out:
                for chunk in upload.chunks():
                    out.write(chunk)
            try:
                result = importer(collection=collection, path=path)
            except (TrecFormatError, ImportRejectedError, ValueError) as error:
                message = str(error).replace(str(path), upload.name)
                raise ValidationError({"file": [message]}) from None
        return Response(ImportResultSerializer(result).data)
