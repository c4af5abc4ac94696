"""Load test of serve.py on loopback: concurrent UDPipe-style clients, beside predict.py's rate.

Usage: ``python -m benchmarks.serve_load [--model en_ewt_small] [--clients 32] [--seconds 20]
[--sentences-per-request 8] [--threads N] [--onnx-dir DIR]`` (input: EWT test under $UD_ROOT,
or ``--input``). ``--onnx-dir``: the server runs ``runtime=onnx onnx_dir=DIR`` and predict.py
``runtime=onnx onnx=DIR/MODEL``, both without torch.

``predict.py model=MODEL format=text columns=all`` parses every sentence of the input in one
run, before and after the load (the mean of its logged rates: model loading excluded, as for
the server, which is loaded before the clock starts). Between them, ``serve.py`` serves the
model on 127.0.0.1, and ``--clients`` threads, each with its own keep-alive connection, send
requests of ``--sentences-per-request`` pre-tokenized sentences (``input=horizontal``,
``tagger``, ``parser``: the same work) back to back for ``--seconds``. Prints requests/s,
sentences/s, p50/p99 latency, errors, the ratio to predict.py, the server's peak resident
memory, the CPU (lscpu) and the load (uptime): the clients share the CPU with the server.
"""

from __future__ import annotations

import argparse
import http.client
import itertools
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from pathlib import Path

from biaffine.data.conllu import read_conllu

ROOT = Path(__file__).resolve().parents[1]
EWT_TEST = Path("UD_English-EWT") / "en_ewt-ud-test.conllu"
RATE = re.compile(r"parsed (\d+) sentences(?: \((\d+) words\))? in ([\d.]+)s")  # torch, onnx


def main() -> None:
    """Run predict.py, then the server under load; print a markdown report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="en_ewt_small")
    parser.add_argument("--input", type=Path, default=None)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--sentences-per-request", type=int, default=8)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--onnx-dir", type=Path, default=None, help="serve runtime=onnx")
    args = parser.parse_args()
    # Compile a cold numba cache before timing (both subprocesses inherit it), not in the run.
    os.environ.setdefault("ROOTPARSE_COMPILE", "foreground")
    source = args.input or Path(os.environ["UD_ROOT"]) / EWT_TEST
    lines = [" ".join(s.forms) + "\n" for s in read_conllu(source)]
    threads = [] if args.threads is None else [f"threads={args.threads}"]
    model = [f"model={args.model}"]
    served_as: list[str] = []
    if args.onnx_dir is not None:
        model = ["runtime=onnx", f"onnx={args.onnx_dir / args.model}"]
        served_as = ["runtime=onnx", f"onnx_dir={args.onnx_dir}"]
    before = predict_rate(model, lines, threads)
    k = args.sentences_per_request
    bodies = [
        urllib.parse.urlencode(
            {"data": "".join(lines[i : i + k]), "input": "horizontal", "tagger": "", "parser": ""}
        ).encode()
        for i in range(0, len(lines) - k + 1, k)
    ]
    port = free_port()
    with served(args.model, port, [*threads, *served_as]) as server:
        cpu = {"server": cpu_seconds(server.pid), "clients": cpu_seconds(os.getpid())}
        results = load(port, bodies, args.clients, args.seconds)
        for who, pid in (("server", server.pid), ("clients", os.getpid())):
            results[f"{who} cpu"] = cpu_seconds(pid) - cpu[who]
        results["health"] = health(port)
        results["server MiB"] = peak_mib(server.pid)
    # Before and after: the load of a shared machine drifts, the mean is fairer to both.
    predicted = (before + predict_rate(model, lines, threads)) / 2
    report(args, source, len(lines), predicted, results)


def predict_rate(model: list[str], lines: list[str], threads: list[str]) -> float:
    """predict.py's sentences/s on ``lines`` (parsing only, as it logs).

    ``model``: the settings that name the model (``model=NAME``, or ``runtime=onnx onnx=DIR``).
    """
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "input.txt"
        path.write_text("".join(lines), encoding="utf-8")
        command = [sys.executable, "predict.py", *model, f"input={path}"]
        command += ["format=text", "columns=all", "output=/dev/null", *threads]
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=True)
    sentences, _, seconds = RATE.search(done.stderr).groups()
    return int(sentences) / float(seconds)


def free_port() -> int:
    """A TCP port free on loopback now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class served:  # noqa: N801  (a context manager, used as a function)
    """``serve.py`` on 127.0.0.1 while the block runs, its log in a temporary file."""

    def __init__(self, model: str, port: int, threads: list[str]) -> None:
        """Remember the command."""
        self.command = [sys.executable, "serve.py", f"models={model}", f"port={port}", *threads]
        self.port = port

    def __enter__(self) -> subprocess.Popen:
        """Start the server and wait until it answers ``/health``."""
        self.log = tempfile.TemporaryFile()
        self.process = subprocess.Popen(self.command, cwd=ROOT, stdout=self.log, stderr=self.log)
        while True:
            if self.process.poll() is not None:
                self.log.seek(0)
                sys.exit(f"serve.py exited: {self.log.read().decode()[-2000:]}")
            try:
                connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
                connection.request("GET", "/health")
                if connection.getresponse().status == 200:
                    return self.process
            except OSError:
                time.sleep(0.2)

    def __exit__(self, *exc: object) -> None:
        """Stop the server as a user would (SIGINT: requests in flight finish)."""
        self.process.send_signal(signal.SIGINT)
        self.process.wait(timeout=60)
        self.log.close()


def peak_mib(pid: int) -> float:
    """Peak resident memory of a running process so far (``VmHWM`` in ``/proc``), in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def cpu_seconds(pid: int) -> float:
    """CPU time (user and system, all threads) of a process so far, from ``/proc``."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def health(port: int) -> dict:
    """The server's ``/health`` answer (its batch counters)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    connection.request("GET", "/health")
    return json.loads(connection.getresponse().read())


def load(port: int, bodies: list[bytes], clients: int, seconds: float) -> dict:
    """``clients`` threads sending ``bodies`` in turn for ``seconds``; latencies and errors."""
    latencies: list[float] = []
    errors: list[str] = []
    sentences = [0]
    turn = itertools.cycle(range(len(bodies)))
    lock = threading.Lock()
    stop = time.perf_counter() + seconds
    headers = {"Content-Type": "application/x-www-form-urlencoded"}

    def client() -> None:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        while time.perf_counter() < stop:
            with lock:
                body = bodies[next(turn)]
            started = time.perf_counter()
            try:
                connection.request("POST", "/process", body=body, headers=headers)
                answer = connection.getresponse()
                payload = answer.read()
                status = answer.status
            except OSError as error:
                status, payload = 0, str(error).encode()
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
            spent = time.perf_counter() - started
            with lock:
                if status == 200:
                    latencies.append(spent)
                    # A sentence ends in a blank line: "\n\n" in the JSON string, read as
                    # bytes, since the clients share the CPU with the server.
                    sentences[0] += payload.count(b"\\n\\n")
                else:
                    errors.append(f"{status}: {payload[:200]!r}")

    started = time.perf_counter()
    workers = [threading.Thread(target=client) for _ in range(clients)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    elapsed = time.perf_counter() - started
    return {"latencies": latencies, "errors": errors, "sentences": sentences[0], "s": elapsed}


def report(args: argparse.Namespace, source: Path, n: int, predicted: float, results: dict) -> None:
    """Print the figures as a markdown table, with the CPU and the load."""
    latencies = sorted(results["latencies"])
    seconds = results["s"]
    p50 = statistics.median(latencies) * 1000
    p99 = latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))] * 1000
    rate = results["sentences"] / seconds
    cpu = next(
        (line.split(":", 1)[1].strip() for line in lscpu() if line.startswith("Model name")),
        "unknown CPU",
    )
    uptime = subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout
    runtime = "torch" if args.onnx_dir is None else f"onnx ({args.onnx_dir})"
    print(f"{source.name}: {n} sentences; model {args.model}, runtime {runtime}; ")
    print(f"{args.clients} clients, ", end="")
    print(f"{args.sentences_per_request} sentences per request, {args.seconds:g} s, loopback")
    print(f"CPU: {cpu}, {os.cpu_count()} logical CPUs; uptime: {uptime.strip()}\n")
    print(
        "| requests/s | sentences/s | p50 ms | p99 ms | errors | predict.py sentences/s | ratio |"
    )
    print("|---|---|---|---|---|---|---|")
    print(
        f"| {len(latencies) / seconds:.1f} | {rate:.1f} | {p50:.0f} | {p99:.0f} "
        f"| {len(results['errors'])} | {predicted:.1f} | {rate / predicted:.2f} |"
    )
    batches = results["health"]["batches"]
    mean = results["health"]["batched_requests"] / max(batches, 1)
    server, clients = results["server cpu"], results["clients cpu"]
    print(f"\n{batches} batches of {mean:.1f} requests on average; CPU seconds in the run:")
    print(f"server {server:.1f}, clients {clients:.1f} (of {os.cpu_count() * seconds:.0f})")
    print(f"server peak resident memory: {results['server MiB']:.0f} MiB")
    for error in results["errors"][:5]:
        print(f"error: {error}")


def lscpu() -> list[str]:
    """The lines of ``lscpu`` (none where it is missing)."""
    try:
        done = subprocess.run(["lscpu"], capture_output=True, text=True, check=False)
    except OSError:
        return []
    return done.stdout.splitlines()


if __name__ == "__main__":
    main()
