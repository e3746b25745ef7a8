"""The ceiling on an upload, ``TOPPREF_MAX_UPLOAD_MB`` (default 512): a request body announcing more is refused
with 413 before a byte is read (``config.middleware.UploadSizeLimitMiddleware``), and one that streams more
without announcing its length (chunked) is stopped by this upload handler once it passes the ceiling, with a
400 naming the limit. Every uploaded file is streamed to disk in chunks past FILE_UPLOAD_MAX_MEMORY_SIZE, so the
server's memory stays flat whatever the upload."""

from __future__ import annotations

from django.conf import settings
from django.core.files.uploadhandler import FileUploadHandler
from django.http.multipartparser import MultiPartParserError


def max_upload_bytes() -> int:
    return int(settings.TOPPREF_MAX_UPLOAD_MB * 1024 * 1024)


def upload_limit_message(size: int | None = None) -> str:
    what = f"an upload of {size:,} bytes" if size is not None else "the upload"
    return (
        f"{what} is larger than the server's limit, TOPPREF_MAX_UPLOAD_MB={settings.TOPPREF_MAX_UPLOAD_MB:g}"
        f" ({max_upload_bytes():,} bytes)"
    )


class UploadTooLargeError(MultiPartParserError):
    """Raised while parsing a multipart body: Django answers 400, DRF a 400 naming the problem."""


class UploadSizeLimitHandler(FileUploadHandler):
    """First of FILE_UPLOAD_HANDLERS: counts the bytes of every file of the request and passes them on to the
    next handler (memory, then a temporary file) until they pass the ceiling."""

    def __init__(self, request=None) -> None:
        super().__init__(request)
        self.received = 0

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes:
        self.received += len(raw_data)
        if self.received > max_upload_bytes():
            raise UploadTooLargeError(upload_limit_message())
        return raw_data

    def file_complete(self, file_size: int) -> None:
        return None
