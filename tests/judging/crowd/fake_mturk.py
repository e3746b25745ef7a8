"""A real HTTP server on 127.0.0.1 standing in for the MTurk requester API (JSON 1.1 protocol,
``X-Amz-Target: MTurkRequesterServiceV20170117.<Operation>``), with faults to inject: throttling, a 5xx, and a
response that times out after the HIT was created. It remembers UniqueRequestTokens as MTurk does (a replay
answers RequestError / AWS.MechanicalTurk.HitAlreadyExists with the HIT id in the message)."""

from __future__ import annotations

import itertools
import json
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PREFIX = "MTurkRequesterServiceV20170117."


class FakeMTurk:
    def __init__(self, *, timeout_sleep: float = 2.5, page_size: int | None = None) -> None:
        self.hits: dict[str, dict] = {}
        self.tokens: dict[str, str] = {}
        self.assignments: dict[str, list[dict]] = {}
        self.qualifications: dict[str, dict] = {}
        self.associations: list[tuple[str, str]] = []
        self.approved: list[str] = []
        self.expired: list[str] = []
        self.calls: list[tuple[str, dict]] = []
        # (operation, fault) pairs consumed in order by the next matching call: "throttle", "5xx", "timeout"
        # (the call succeeds, the answer comes too late), "refuse" (a final RequestError).
        self.faults: list[tuple[str, str]] = []
        self.timeout_sleep = timeout_sleep
        self.page_size = page_size
        self.balance = "10000.00"
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> FakeMTurk:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    def calls_of(self, operation: str) -> list[dict]:
        return [body for op, body in self.calls if op == operation]

    def submit(self, hit_id: str, worker_id: str, *, status: str = "Submitted") -> str:
        """A worker submits on MTurk: an assignment appears on the HIT."""
        assignment_id = f"ASG{next(self._ids):027d}"
        self.assignments.setdefault(hit_id, []).append(
            {
                "AssignmentId": assignment_id,
                "WorkerId": worker_id,
                "HITId": hit_id,
                "AssignmentStatus": status,
                "SubmitTime": time.time(),
                "Answer": "<QuestionFormAnswers/>",
            }
        )
        return assignment_id

    # -- the operations --

    def handle(self, operation: str, body: dict) -> tuple[int, dict]:
        with self._lock:
            method = getattr(self, f"op_{operation}", None)
            if method is None:
                return 400, {"__type": "RequestError", "Message": f"fake: {operation} not implemented"}
            return method(body)

    def op_GetAccountBalance(self, body):
        return 200, {"AvailableBalance": self.balance}

    def op_CreateQualificationType(self, body):
        for qualification in self.qualifications.values():
            if qualification["Name"] == body["Name"]:
                return 400, {
                    "__type": "RequestError",
                    "Message": "You have already created a QualificationType with this name.",
                }
        qualification_id = f"QUAL{next(self._ids):026d}"
        self.qualifications[qualification_id] = {
            "QualificationTypeId": qualification_id,
            "Name": body["Name"],
        }
        return 200, {"QualificationType": self.qualifications[qualification_id]}

    def op_ListQualificationTypes(self, body):
        found = [q for q in self.qualifications.values() if body.get("Query", "") in q["Name"]]
        return 200, {"QualificationTypes": found, "NumResults": len(found)}

    def op_CreateHITType(self, body):
        return 200, {"HITTypeId": "HITTYPE" + "0" * 23}

    def op_CreateHITWithHITType(self, body):
        token = body.get("UniqueRequestToken")
        if token in self.tokens:
            return 400, {
                "__type": "RequestError",
                "Message": f'The HIT with ID "{self.tokens[token]}" already exists. (1700000000000)',
                "TurkErrorCode": "AWS.MechanicalTurk.HitAlreadyExists",
            }
        hit_id = f"HIT{next(self._ids):027d}"
        self.hits[hit_id] = {
            "HITId": hit_id,
            "HITTypeId": body["HITTypeId"],
            "RequesterAnnotation": body.get("RequesterAnnotation", ""),
            "MaxAssignments": body["MaxAssignments"],
            "Expiration": time.time() + body["LifetimeInSeconds"],
            "Question": body["Question"],
        }
        if token:
            self.tokens[token] = hit_id
        return 200, {"HIT": self.hits[hit_id]}

    def op_ListHITs(self, body):
        return 200, {"HITs": list(self.hits.values()), "NumResults": len(self.hits)}

    def op_ListAssignmentsForHIT(self, body):
        assignments = [
            a
            for a in self.assignments.get(body["HITId"], [])
            if a["AssignmentStatus"] in body.get("AssignmentStatuses", ["Submitted", "Approved", "Rejected"])
        ]
        size = self.page_size or body.get("MaxResults", 10)
        start = int(body.get("NextToken", "0"))
        page = assignments[start : start + size]
        response = {"Assignments": page, "NumResults": len(page)}
        if start + size < len(assignments):
            response["NextToken"] = str(start + size)
        return 200, response

    def _assignment(self, assignment_id):
        for assignments in self.assignments.values():
            for assignment in assignments:
                if assignment["AssignmentId"] == assignment_id:
                    return assignment
        return None

    def op_ApproveAssignment(self, body):
        assignment = self._assignment(body["AssignmentId"])
        if assignment is None or assignment["AssignmentStatus"] != "Submitted":
            return 400, {
                "__type": "RequestError",
                "Message": "This operation can be called with a status of: Submitted",
            }
        assignment["AssignmentStatus"] = "Approved"
        self.approved.append(body["AssignmentId"])
        return 200, {}

    def op_GetAssignment(self, body):
        assignment = self._assignment(body["AssignmentId"])
        return 200, {"Assignment": assignment, "HIT": self.hits[assignment["HITId"]]}

    def op_AssociateQualificationWithWorker(self, body):
        self.associations.append((body["QualificationTypeId"], body["WorkerId"]))
        return 200, {}

    def op_UpdateExpirationForHIT(self, body):
        self.expired.append(body["HITId"])
        self.hits[body["HITId"]]["Expiration"] = body["ExpireAt"]
        return 200, {}

    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                target = self.headers.get("X-Amz-Target", "")
                operation = target.removeprefix(PREFIX)
                fake.calls.append((operation, body))
                fault = None
                with fake._lock:
                    for index, (op, _kind) in enumerate(fake.faults):
                        if op == operation:
                            fault = fake.faults.pop(index)[1]
                            break
                if fault == "throttle":
                    return self._send(400, {"__type": "ThrottlingException", "message": "Rate exceeded"})
                if fault == "refuse":
                    return self._send(400, {"__type": "RequestError", "Message": "fake: refused"})
                if fault == "5xx":
                    return self._send(500, {"__type": "ServiceFault", "Message": "We encountered an error"})
                status, response = fake.handle(operation, body)
                if fault == "timeout":
                    # The HIT exists now, but the client gives up before the answer arrives.
                    time.sleep(fake.timeout_sleep)
                self._send(status, response)

            def _send(self, status, payload):
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/x-amz-json-1.1")
                self.send_header("x-amzn-RequestId", str(uuid.uuid4()))
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                try:
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        return Handler
