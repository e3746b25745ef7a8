"""Memory of the web server under hostile and large uploads (issue 15, "bad input cannot exhaust the server").

    .venv/bin/python benchmarks/uploads.py                  # SQLite, tasks in-process (the no-Redis setup)
    .venv/bin/python benchmarks/uploads.py --redis redis://127.0.0.1:6379/3   # tasks queued (no worker here)
    .venv/bin/python benchmarks/uploads.py --run-mb 50      # a smaller run

Starts gunicorn with one worker (its peak memory is the server's) on a free port of 127.0.0.1
with a fresh SQLite database, loads the demo collection, then sends, streamed from disk:

1. a ``qrels.gz`` of about 1 MB that inflates to 1 GiB without a line break (the issue's gzip bomb), to
   ``POST /api/collections/demo/qrels/``: refused with 400 naming the line;
2. a TREC run of ``--run-mb`` MB (default 200) to ``POST /api/campaigns/<name>/runs/``: 202, stored streaming
   to disk; without ``--redis`` its validation runs in the same process, after the response;
3. a body announcing more than ``TOPPREF_MAX_UPLOAD_MB``: 413 before a byte is read.

Prints one table: status, seconds, and the server's resident memory (RSS, sampled every 20 ms) before and at
its peak during each request. The goal: under 300 MB whatever the file.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
import zlib
from pathlib import Path

REPO_DIR = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
SETUP = """
from django.contrib.auth.models import Group, User
from rest_framework.authtoken.models import Token
from judging.services import campaign_create
from pools.services import demo_load
user = User.objects.create_user("bench", password="bench-pass-1")
Group.objects.get_or_create(name="researchers")[0].user_set.add(user)
collection = demo_load(directory="demo").collection
campaign_create(collection=collection, name="bench", seed=1, owner=user)
print(Token.objects.get_or_create(user=user)[0].key)
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run-mb", type=int, default=200, help="size of the run upload in MB (default 200)")
    parser.add_argument(
        "--bomb-mb", type=int, default=1024, help="what the qrels.gz inflates to (default 1024)"
    )
    parser.add_argument("--redis", help="REDIS_URL: queue the tasks instead of running them in-process")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="toppref-uploads-bench-"))
    env = {
        **os.environ,
        "DJANGO_ENV": "development",
        "DJANGO_DEBUG": "false",
        "DATABASE_URL": f"sqlite:///{workdir / 'bench.sqlite3'}",
        "TOPPREF_MEDIA_ROOT": str(workdir / "media"),
        "TOPPREF_SWEEP_SECONDS": "0",
    }
    env.pop("REDIS_URL", None)
    if args.redis:
        env["REDIS_URL"] = args.redis
    manage = [PYTHON, str(REPO_DIR / "manage.py")]
    subprocess.run([*manage, "migrate", "-v", "0"], env=env, cwd=REPO_DIR, check=True)
    token = subprocess.run(
        [*manage, "shell", "-c", SETUP], env=env, cwd=REPO_DIR, check=True, capture_output=True, text=True
    ).stdout.split()[-1]

    bomb = workdir / "qrels.gz"
    gzip_bomb(bomb, size=args.bomb_mb << 20)
    run = workdir / "big.run"
    write_run(run, size=args.run_mb << 20)

    port = free_port()
    # gunicorn with one sync worker, as in production (Dockerfile); its worker's memory is the server's.
    server = subprocess.Popen(
        [
            str(Path(PYTHON).parent / "gunicorn"),
            "config.wsgi",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            "1",
            "--timeout",
            "3600",
        ],
        env=env,
        cwd=REPO_DIR,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(port)
        worker = worker_pid(server.pid)
        rows = []
        headers = {"Authorization": f"Token {token}"}
        warm_up(port, headers)  # the first request imports the apps: not the upload's memory
        rows.append(
            measure(
                worker,
                f"qrels.gz {bomb.stat().st_size / 1e6:.1f} MB -> {args.bomb_mb} MiB, no line break",
                lambda: post_file(port, "/api/collections/demo/qrels/", bomb, {}, headers),
            )
        )
        rows.append(
            measure(
                worker,
                f"run upload {run.stat().st_size / 1e6:.0f} MB"
                + (" (queued)" if args.redis else " (validated in-process)"),
                lambda: post_file(
                    port, "/api/campaigns/bench/runs/", run, {"name": "big"}, headers, wait=not args.redis
                ),
            )
        )
        rows.append(
            measure(
                worker,
                "body announcing 600 MB (past TOPPREF_MAX_UPLOAD_MB=512)",
                lambda: announce(port, "/api/campaigns/bench/runs/", 600 << 20, headers),
            )
        )
    finally:
        server.terminate()
        server.wait(timeout=30)
    print(f"{'request':<58} {'status':>6} {'seconds':>8} {'RSS before':>11} {'RSS peak':>9}")
    for name, status, seconds, before, peak in rows:
        print(f"{name:<58} {status:>6} {seconds:>8.1f} {before:>8.0f} MB {peak:>6.0f} MB")
    return 0


def gzip_bomb(path: Path, *, size: int) -> None:
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunk = b"a" * (1 << 20)
    with open(path, "wb") as out:
        for _ in range(size >> 20):
            out.write(compressor.compress(chunk))
        out.write(compressor.flush())


def write_run(path: Path, *, size: int) -> None:
    topics = ["c1_1", "c1_2", "d11"]  # topics of the demo collection (a strict one refuses others)
    with open(path, "w", encoding="ascii") as out:
        written = rank = 0
        while written < size:
            lines = [
                f"{topics[(rank + i) % 3]} Q0 CAR_{rank + i:012d} {rank + i + 1} {1e6 - rank - i:.3f} bench\n"
                for i in range(10_000)
            ]
            block = "".join(lines)
            out.write(block)
            written += len(block)
            rank += 10_000


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def measure(pid: int, name: str, request) -> tuple[str, int, float, float, float]:
    before = rss_mb(pid)
    peak = [before]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], rss_mb(pid))
            time.sleep(0.02)

    sampler = threading.Thread(target=sample)
    sampler.start()
    started = time.perf_counter()
    try:
        status = request()
        # the in-process validation goes on after the response: wait for it to end before reading the peak
        time.sleep(0.5)
    finally:
        seconds = time.perf_counter() - started
        done.set()
        sampler.join()
    return name, status, seconds, before, peak[0]


def post_file(
    port: int, url: str, path: Path, fields: dict[str, str], headers: dict[str, str], *, wait: bool = True
) -> int:
    boundary = uuid.uuid4().hex
    head = b"".join(
        f'--{boundary}\r\nContent-Disposition: form-data; name="{key}"\r\n\r\n{value}\r\n'.encode()
        for key, value in fields.items()
    )
    head += (
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{path.name}"\r\n'
        "Content-Type: application/octet-stream\r\n\r\n"
    ).encode()
    tail = f"\r\n--{boundary}--\r\n".encode()
    length = len(head) + path.stat().st_size + len(tail)

    def body():
        yield head
        with open(path, "rb") as handle:
            while chunk := handle.read(1 << 20):
                yield chunk
        yield tail

    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=3600)
    connection.request(
        "POST",
        url,
        body=body(),
        headers={
            **headers,
            "Content-Type": f"multipart/form-data; boundary={boundary}",
            "Content-Length": str(length),
        },
    )
    response = connection.getresponse()
    text = response.read().decode("utf-8", "replace")
    print(f"  {url}: {response.status} {text[:200]}", file=sys.stderr)
    if response.status == 202 and wait:
        status_url = json.loads(text)["status_url"]
        while True:  # until the background validation ends
            connection.request("GET", status_url, headers=headers)
            shown = json.loads(connection.getresponse().read())["results"][0]
            if shown["status"] in ("ready", "failed"):
                print(
                    f"  run {shown['status']}: {shown['line_count']} lines {shown['error']}", file=sys.stderr
                )
                break
            time.sleep(0.5)
    connection.close()
    return response.status


def announce(port: int, url: str, length: int, headers: dict[str, str]) -> int:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    connection.putrequest("POST", url)
    for key, value in {**headers, "Content-Type": "multipart/form-data; boundary=x"}.items():
        connection.putheader(key, value)
    connection.putheader("Content-Length", str(length))
    connection.endheaders()
    response = connection.getresponse()
    print(f"  {url}: {response.status} {response.read()[:200]!r}", file=sys.stderr)
    connection.close()
    return response.status


def warm_up(port: int, headers: dict[str, str]) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    for url in ("/api/campaigns/", "/api/campaigns/bench/runs/", "/api/collections/"):
        connection.request("GET", url, headers=headers)
        connection.getresponse().read()
    connection.close()


def worker_pid(master: int) -> int:
    for _ in range(100):
        children = Path(f"/proc/{master}/task/{master}/children").read_text().split()
        if children:
            return int(children[0])
        time.sleep(0.1)
    raise SystemExit("gunicorn started no worker")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for(port: int) -> None:
    for _ in range(600):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise SystemExit("the server did not start")


if __name__ == "__main__":
    sys.exit(main())
