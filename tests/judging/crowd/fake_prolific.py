"""A real HTTP server on 127.0.0.1 standing in for Prolific's researcher API v1, as Prolific's own API
description documents it (../shared/notes/prolific.md, section 0): studies (draft, publish, places only
growing once published and reactivating a completed or awaiting-review study by themselves, ``START`` only
from ``PAUSED``), submissions paginated with ``page``/``page_size``, ``_links.next`` and ``meta.count`` (a
page past the end is a 404, which a client never needs to reach), submission transitions, participant
groups, workspaces (listed in no documented order) and their projects, a balance that may be null, and the
study cost calculator (reward plus fee plus VAT). Faults to inject by path prefix: "429" and "5xx".
Requests without the right token get 401."""

from __future__ import annotations

import itertools
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

TOKEN = "test-prolific-token"


class FakeProlific:
    def __init__(self, *, page_size: int = 2) -> None:
        self.studies: dict[str, dict] = {}
        self.submissions: dict[str, dict] = {}
        self.groups: dict[str, dict] = {}
        self.calls: list[tuple[str, str, dict]] = []
        self.faults: list[tuple[str, str, str]] = []  # (method, path prefix, "429" | "5xx")
        self.page_size = page_size
        # Live responses carry ``_links`` and ``meta``; the spec documents only ``results``.
        self.links = True
        self.balance_cents: int | None = 1_000_000
        self.workspaces = [{"id": "workspace-1", "title": "lab"}]
        self.projects = {"workspace-1": [{"id": "project-1", "title": "toppref"}]}
        # The account's fee and VAT on it, as the study cost calculator applies them (UK: 20% VAT on fees).
        self.fee_rate, self.vat_rate = 0.3333, 0.20
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/api/v1/"

    def __enter__(self) -> FakeProlific:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    def calls_of(self, method: str, path: str) -> list[dict]:
        return [body for m, p, body in self.calls if m == method and p == path]

    def submit(self, study_id: str, participant_id: str, status: str = "AWAITING REVIEW") -> str:
        """A participant's submission appears (status as Prolific spells it)."""
        submission_id = f"sub{next(self._ids):05d}"
        self.submissions[submission_id] = {
            "id": submission_id,
            "participant_id": participant_id,
            "study_id": study_id,
            "status": status,
        }
        return submission_id

    def handle(self, method: str, path: str, query: dict, body: dict) -> tuple[int, dict]:
        parts = [part for part in path.removeprefix("/api/v1/").split("/") if part]
        with self._lock:
            if parts == ["workspaces"] and method == "GET":
                return 200, {"results": list(self.workspaces)}
            if parts[:1] == ["workspaces"] and parts[2:] == ["projects"] and method == "GET":
                return 200, {"results": list(self.projects.get(parts[1], []))}
            if parts[:1] == ["workspaces"] and parts[2:] == ["balance"]:
                balance = self.balance_cents
                return 200, {
                    "currency_code": "USD",
                    "total_balance": balance,
                    "available_balance": balance,
                }
            if parts == ["study-cost-calculator"] and method == "POST":
                rewards = int(body["reward"]) * int(body["total_available_places"])
                fee = round(rewards * self.fee_rate)
                return 200, {"total_cost": rewards + fee + round(fee * self.vat_rate)}
            if parts == ["participant-groups"] and method == "POST":
                group_id = f"group{next(self._ids)}"
                self.groups[group_id] = {"id": group_id, **body, "participants": []}
                return 201, self.groups[group_id]
            if parts[:1] == ["participant-groups"] and parts[2:] == ["participants"] and method == "POST":
                group = self.groups[parts[1]]
                group["participants"].extend(
                    p for p in body["participant_ids"] if p not in group["participants"]
                )
                return 200, {"results": group["participants"]}
            if parts == ["studies"] and method == "POST":
                study_id = f"study{next(self._ids)}"
                self.studies[study_id] = {"id": study_id, **body, "status": "UNPUBLISHED"}
                return 201, self.studies[study_id]
            if parts[:1] == ["studies"] and len(parts) == 2:
                study = self.studies[parts[1]]
                if method == "PATCH":
                    if (
                        study["status"] != "UNPUBLISHED"
                        and body.get("total_available_places", 0) < study["total_available_places"]
                    ):
                        return 400, {"error": {"title": "places can only increase"}}
                    grew = body.get("total_available_places", 0) > study.get("total_available_places", 0)
                    study.update(body)
                    if grew and study["status"] in ("COMPLETED", "AWAITING REVIEW"):
                        # More places reactivate a completed or awaiting-review study by themselves.
                        study["status"] = "ACTIVE"
                return 200, study
            if parts[:1] == ["studies"] and parts[2:] == ["transition"]:
                study = self.studies[parts[1]]
                allowed = {
                    "PUBLISH": ("UNPUBLISHED",),
                    "START": ("PAUSED",),
                    "PAUSE": ("ACTIVE",),
                    "STOP": ("ACTIVE", "PAUSED"),
                }[body["action"]]
                if study["status"] not in allowed:
                    return 400, {
                        "error": {"title": f"{body['action']} is not allowed from {study['status']}"}
                    }
                study["status"] = {
                    "PUBLISH": "ACTIVE",
                    "STOP": "COMPLETED",
                    "START": "ACTIVE",
                    "PAUSE": "PAUSED",
                }[body["action"]]
                return 200, study
            if parts == ["submissions"] and method == "GET":
                if "study" not in query:
                    return 400, {"error": {"title": "study is required"}}
                rows = [s for s in self.submissions.values() if s["study_id"] == query["study"]]
                page = int(query.get("page", "1"))
                size = int(query.get("page_size", self.page_size))
                start = (page - 1) * size
                if page > 1 and start >= len(rows):
                    return 404, {"error": {"title": "Invalid page."}}
                more = start + size < len(rows)
                next_href = (
                    f"{self.url}submissions/?study={query['study']}&page={page + 1}&page_size={size}"
                    if more and self.links
                    else None
                )
                if not self.links:
                    # The list as the spec documents it: ``results`` only.
                    return 200, {"results": rows[start : start + size]}
                return 200, {
                    "results": rows[start : start + size],
                    "_links": {"next": {"href": next_href}},
                    "meta": {"count": len(rows)},
                }
            if parts[:1] == ["submissions"] and parts[2:] == ["transition"]:
                submission = self.submissions[parts[1]]
                if body["action"] == "APPROVE":
                    if submission["status"] == "APPROVED":
                        return 200, submission
                    if submission["status"] != "AWAITING REVIEW":
                        return 400, {"error": {"title": "cannot approve"}}
                    submission["status"] = "APPROVED"
                    return 200, submission
                return 400, {"error": {"title": f"fake: {body['action']} not implemented"}}
            if parts[:1] == ["submissions"] and len(parts) == 2:
                submission = self.submissions[parts[1]]
                return 200, {**submission, "participant": submission["participant_id"]}
        return 404, {"error": {"title": f"fake: {method} {path} not implemented"}}

    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _serve(self, method):
                url = urlsplit(self.path)
                query = {key: values[0] for key, values in parse_qs(url.query).items()}
                length = int(self.headers.get("Content-Length", 0) or 0)
                body = json.loads(self.rfile.read(length) or b"{}") if length else {}
                fake.calls.append((method, url.path, body))
                if self.headers.get("Authorization") != f"Token {TOKEN}":
                    return self._send(401, {"error": {"title": "Invalid token"}})
                with fake._lock:
                    for index, (fault_method, prefix, kind) in enumerate(fake.faults):
                        if fault_method == method and url.path.startswith(prefix):
                            fake.faults.pop(index)
                            return self._send(429 if kind == "429" else 503, {"error": {"title": kind}})
                status, payload = fake.handle(method, url.path, query, body)
                self._send(status, payload)

            def do_GET(self):
                self._serve("GET")

            def do_POST(self):
                self._serve("POST")

            def do_PATCH(self):
                self._serve("PATCH")

            def _send(self, status, payload):
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("X-Request-Id", f"req-{len(fake.calls)}")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler
