"""REST API of the pools app: collections (list, create) and importing topics, passages and qrels into
one. Only researchers (the ``researchers`` group) and staff."""

from __future__ import annotations

import tempfile
from pathlib import Path

from django.http import Http404
from drf_spectacular.utils import extend_schema
from rest_framework import generics, permissions, serializers
from rest_framework.exceptions import ValidationError
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from pools.access import IsResearcher
from pools.models import Collection
from pools.selectors import collection_list_with_counts
from pools.services import collection_create


class CollectionSerializer(serializers.ModelSerializer):
    topic_count = serializers.IntegerField(read_only=True)
    item_count = serializers.IntegerField(read_only=True)
    run_count = serializers.IntegerField(read_only=True)

    class Meta:
        model = Collection
        fields = ["name", "description", "is_strict", "topic_count", "item_count", "run_count", "created_at"]
        read_only_fields = ["created_at"]


class CollectionListApi(generics.ListCreateAPIView):
    """Collections (list, create). Topics, passages and qrels are imported with the manage commands."""

    permission_classes = [permissions.IsAuthenticated, IsResearcher]

    serializer_class = CollectionSerializer

    def get_queryset(self):
        return collection_list_with_counts()

    def perform_create(self, serializer):
        data = serializer.validated_data
        collection = collection_create(
            name=data["name"], description=data.get("description", ""), is_strict=data.get("is_strict", True)
        )
        serializer.instance = collection_list_with_counts().get(pk=collection.pk)


class CollectionFileSerializer(serializers.Serializer):
    file = serializers.FileField()


class ImportResultSerializer(serializers.Serializer):
    created = serializers.IntegerField()
    updated = serializers.IntegerField()
    unchanged = serializers.IntegerField()


class CollectionFileImportApi(APIView):
    """POST a file (multipart ``file``) into a collection: ``topics`` (TSV, CAsT JSON...), ``passages``
    (TSV or JSONL) or ``qrels`` (graded, ``topic Q0 docid grade``). All or nothing: a bad line is a 400
    naming ``file:line: problem`` and nothing is imported. The format follows the file name's extension."""

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

        collection = Collection.objects.filter(name=name).first()
        if collection is None:
            raise Http404(f"no collection named {name!r}")
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
