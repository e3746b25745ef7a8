"""A real HTTP server on 127.0.0.1 standing in for a model server speaking the OpenAI Chat Completions
protocol (``POST /v1/chat/completions``, as OpenAI, vLLM and Ollama serve it): it reads the question and the
two passages from the published preference prompt and answers "1" or "2" from an oracle, with the faults a
real server shows, to inject per test:

- ``position_biased``: pairs of passage texts for which it always names passage 1 (a position-inconsistent
  pair once both orders are asked);
- ``wrong``: pairs for which it names the worse passage in both orders (a wrong but consistent answer);
- ``malformed``: passage texts whose questions get a reply naming neither passage (every attempt), and
  ``malformed_once``: a count of replies naming neither passage before the normal ones;
- ``throttle`` (429 with ``Retry-After: 0``), ``server_errors`` (500) and ``timeouts`` (a reply later than
  the client waits): counts of the next requests to fail so;
- ``delay``: seconds before every reply (a model's latency).

Usage is reported as a real server does: prompt tokens (a quarter of the characters) and completion tokens.
Requests without ``Authorization: Bearer <api_key>`` get 401 when ``api_key`` is set."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PROMPT = re.compile(
    r"Question:\n(?P<question>.*)\nPassage 1:\n(?P<first>.*)\nPassage 2:\n(?P<second>.*)\n", re.S
)


class FakeLlm:
    def __init__(
        self,
        *,
        oracle: Callable[[str, str, str], int],
        api_key: str = "",
        delay: float = 0.0,
    ) -> None:
        """``oracle(question, passage_1, passage_2)`` is 1 or 2: the passage that answers better."""
        self.oracle = oracle
        self.api_key = api_key
        self.delay = delay
        self.position_biased: set[frozenset[str]] = set()
        self.wrong: set[frozenset[str]] = set()
        self.malformed: set[str] = set()
        self.malformed_once = 0
        self.throttle = 0
        self.server_errors = 0
        self.timeouts = 0
        self.timeout_seconds = 3.0
        self.requests: list[dict] = []  # every request body that reached the model (faults included)
        self.arrivals: list[float] = []  # time.monotonic() of each request's arrival
        # seconds one request's reply waits, by its body: replies then come back in another order than asked
        self.delay_of: Callable[[dict], float] | None = None
        self.answered = 0  # requests answered with a completion
        self.models: set[str] = set()
        self._lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.server.request_queue_size = 64
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> FakeLlm:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _fault(self) -> str:
        with self._lock:
            for name in ("throttle", "server_errors", "timeouts"):
                if getattr(self, name) > 0:
                    setattr(self, name, getattr(self, name) - 1)
                    return name
        return ""

    def reply(self, body: dict) -> tuple[str, int]:
        """The reply text to a request and its prompt's length in characters."""
        message = body["messages"][-1]["content"]
        match = PROMPT.search(message)
        if match is None:
            return "I do not understand the question.", len(message)
        question, first, second = match["question"], match["first"], match["second"]
        with self._lock:
            if self.malformed_once > 0:
                self.malformed_once -= 1
                return "Both passages are fine.", len(message)
        if first in self.malformed or second in self.malformed:
            return "Both passages are fine.", len(message)
        pair = frozenset((first, second))
        if pair in self.position_biased:
            return "1", len(message)
        choice = self.oracle(question, first, second)
        if pair in self.wrong:
            choice = 3 - choice
        return ("Passage 1" if choice == 1 else "2"), len(message)

    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def _send(self, status: int, payload: dict, headers: dict[str, str] | None = None) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                raw = self.rfile.read(length)
                if len(raw) < length:
                    # the client died between its headers and its body (a killed process): no request arrived
                    self.close_connection = True
                    return
                body = json.loads(raw or b"{}")
                if fake.api_key and self.headers.get("Authorization") != f"Bearer {fake.api_key}":
                    self._send(401, {"error": {"message": "bad key", "type": "invalid_request_error"}})
                    return
                if not self.path.endswith("/chat/completions"):
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                with fake._lock:
                    fake.requests.append(body)
                    fake.arrivals.append(time.monotonic())
                    fake.models.add(body.get("model", ""))
                fault = fake._fault()
                if fault == "throttle":
                    self._send(429, {"error": {"message": "rate limited"}}, {"Retry-After": "0"})
                    return
                if fault == "server_errors":
                    self._send(500, {"error": {"message": "overloaded"}})
                    return
                if fault == "timeouts":
                    time.sleep(fake.timeout_seconds)
                    return
                if fake.delay:
                    time.sleep(fake.delay)
                if fake.delay_of is not None:
                    time.sleep(fake.delay_of(body))
                text, characters = fake.reply(body)
                with fake._lock:
                    fake.answered += 1
                self._send(
                    200,
                    {
                        "id": f"chatcmpl-{fake.answered}",
                        "object": "chat.completion",
                        "created": int(time.time()),
                        "model": body.get("model", ""),
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": text},
                                "finish_reason": "stop",
                            }
                        ],
                        "usage": {
                            "prompt_tokens": characters // 4,
                            "completion_tokens": 1,
                            "total_tokens": characters // 4 + 1,
                        },
                    },
                )

        return Handler


def oracle_by_value(values: dict[str, float]) -> Callable[[str, str, str], int]:
    """An oracle over passage texts: the higher value answers better; equal values, the shorter text (then
    the smaller text), so every pair has one right answer whatever the order it is shown in."""

    def prefer(question: str, first: str, second: str) -> int:
        def rank(text: str) -> tuple:
            return (values.get(text, 0.0), -len(text), text)

        return 1 if rank(first) > rank(second) else 2

    return prefer


def demo_oracle(demo_dir) -> Callable[[str, str, str], int]:
    """The demo collection's preference values (``qrels.preference.txt``) as an oracle over (question,
    passage text), read from its files: the stand-in sees texts only. Equal values: the shorter text."""
    from pathlib import Path

    demo = Path(demo_dir)
    with open(demo / "topics.tsv", encoding="utf-8") as lines:
        questions = dict(line.rstrip("\n").split("\t", 1) for line in lines if line.strip())
    with open(demo / "passages.jsonl", encoding="utf-8") as lines:
        texts = {row["id"]: row["text"] for row in map(json.loads, lines)}
    values: dict[tuple[str, str], float] = {}
    with open(demo / "qrels.preference.txt", encoding="utf-8") as lines:
        for line in lines:
            topic, _, docid, value = line.split()
            values[(questions[topic], texts[docid])] = float(value)

    def prefer(question: str, first: str, second: str) -> int:
        a, b = values.get((question, first), 0.0), values.get((question, second), 0.0)
        return 1 if (a, -len(first), first) > (b, -len(second), second) else 2

    return prefer
