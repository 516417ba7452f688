"""Issue 26's six hostile inputs against `lorascope-cli serve`, one command each; run by
tests/serve/test_serve_hostile.cpp. Each checks that the server answers the attack clearly (or
closes the connection), that a neighbour request finishes with the text it has alone (EXPECTED,
from `lorascope-cli generate`), and that the next request is served.

usage: hostile_client.py URL COMMAND [ARGS]
  deep-json EXPECTED              /generate whose parameters hold 500,000 nested arrays (1 MB)
  huge-max-new-tokens EXPECTED    max_new_tokens 9223372036854775807
  tiny-temperature EXPECTED       temperature 1e-39 beside a running greedy neighbour
  slow-headers N EXPECTED         N sockets sending a header byte every 2 s; prints "holding" and keeps them
                                  open until stdin closes (the C++ test sends SIGTERM to the server meanwhile)
  huge-header MIB PID             one header line of MIB MiB; prints the server's RSS growth
  storm N                         N requests alternating two adapters (server under --adapter-memory-budget 1)
Assertions fail with a message and exit status 1; results go to stdout as JSON.
"""
import json
import os
import socket
import sys
import threading
import time
import urllib.parse

import requests

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_client import alive, check, expect_error, post_raw  # noqa: E402

NEIGHBOUR = {"inputs": "queen wolf kite goat sun", "parameters": {"max_new_tokens": 200, "ignore_eos_token": True}}


class Neighbour:
    """A greedy request running while the attack happens; joined to check its text."""

    def __init__(self, url):
        self.result = {}
        self.thread = threading.Thread(target=self.run, args=(url,))
        self.thread.start()

    def run(self, url):
        try:
            r = requests.post(url + "/generate", json=NEIGHBOUR, timeout=120)
            self.result = {"status": r.status_code, "text": r.json().get("generated_text")}
        except Exception as e:  # a failure of the neighbour is the finding
            self.result = {"status": -1, "text": repr(e)}

    def check(self, expected, what):
        self.thread.join()
        check(self.result.get("status") == 200 and self.result.get("text") == expected,
              "the neighbour of %s did not finish with its solo text: %s" % (what, self.result))


def deep_json(url, expected):
    n = Neighbour(url)
    # Inside the parameters object, whose copy used to recurse once per level.
    body = b'{"inputs": "rain owl", "parameters": {"stop": ' + b"[" * 500000 + b"]" * 500000 + b"}}"
    expect_error(post_raw(url, "/generate", body), 400, "invalid_input", "nested deeper than 64", "a 500,000-deep body")
    n.check(expected, "a deep body")
    print(json.dumps({"deep_json": "refused", "next": alive(url, "a deep body")}), flush=True)


def huge_max_new_tokens(url, expected):
    n = Neighbour(url)
    body = json.dumps({"inputs": "rain owl", "parameters": {"max_new_tokens": 9223372036854775807}})
    expect_error(post_raw(url, "/generate", body), 422, "validation", "max_batch_tokens", "max_new_tokens 2^63-1")
    n.check(expected, "max_new_tokens 2^63-1")
    # Admission still works: several requests at once, each served (a hang would time out).
    results = []
    threads = [threading.Thread(target=lambda: results.append(alive(url, "max_new_tokens 2^63-1"))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    check(len(results) == 4 and len(set(results)) == 1, "the next requests were not all served alike: %s" % results)
    print(json.dumps({"huge_max_new_tokens": "refused", "next": results[0]}), flush=True)


def tiny_temperature(url, expected):
    n = Neighbour(url)
    time.sleep(0.2)  # the neighbour is decoding when the attack arrives
    for path, body in [("/generate", {"inputs": "rain owl", "parameters": {"temperature": 1e-39, "max_new_tokens": 50}}),
                       ("/v1/completions", {"model": "", "prompt": "rain owl", "temperature": 1e-39, "max_tokens": 50})]:
        r = post_raw(url, path, json.dumps(body))
        err = expect_error(r, 422, "validation", "temperature", "temperature 1e-39 on " + path)
        check("\n" not in err["error"] and "/" not in err["error"].replace("1/", ""), "not one line: %r" % err["error"])
    n.check(expected, "temperature 1e-39")
    print(json.dumps({"tiny_temperature": "refused", "next": alive(url, "temperature 1e-39")}), flush=True)


def slow_headers(url, count, expected):
    u = urllib.parse.urlparse(url)
    socks = [socket.create_connection((u.hostname, u.port)) for _ in range(count)]
    line = b"GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 100000
    stop = threading.Event()

    def drip():
        i = 0
        while not stop.is_set():
            for s in socks:
                try:
                    s.send(line[i:i + 1])
                except OSError:
                    pass
            i += 1
            stop.wait(2)

    t = threading.Thread(target=drip, daemon=True)
    t.start()
    time.sleep(1)
    r = requests.get(url + "/health", timeout=30)
    check(r.status_code == 200, "/health answered %d with %d slow clients connected" % (r.status_code, count))
    n = Neighbour(url)
    n.check(expected, "%d slow clients" % count)
    print("holding", flush=True)
    sys.stdin.read()  # the C++ test closes it once the server has gone
    stop.set()
    print(json.dumps({"slow_headers": count}), flush=True)


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def huge_header(url, mib, pid):
    u = urllib.parse.urlparse(url)
    before = rss_kib(pid)
    s = socket.create_connection((u.hostname, u.port), timeout=30)
    s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ")
    piece = b"a" * (1 << 20)
    sent, peak = 0, before
    try:
        for _ in range(mib):
            s.sendall(piece)
            sent += 1
            peak = max(peak, rss_kib(pid))
        s.sendall(b"\r\n\r\n")
        answer = s.recv(4096)
    except OSError:
        answer = b""
    s.close()
    check(sent < mib or answer.startswith(b"HTTP/1.1 431"),
          "a %d MiB header line was read whole (answer %r)" % (mib, answer[:40]))
    print(json.dumps({"sent_mib": sent, "rss_growth_kib": peak - before, "next": alive(url, "a huge header line")}),
          flush=True)


def storm(url, count):
    texts = set()
    for i in range(count):
        adapter = "upper" if i % 2 else "reverse"
        r = requests.post(url + "/generate", timeout=120, json={
            "inputs": "queen wolf kite", "parameters": {"adapter_id": adapter, "max_new_tokens": 2}})
        check(r.status_code == 200, "request %d on %s answered %d: %s" % (i, adapter, r.status_code, r.text))
        texts.add((adapter, r.json()["generated_text"]))
    check(len(texts) == 2, "the two adapters did not each answer alike: %s" % texts)
    print(json.dumps({"storm": count}), flush=True)


def main():
    url, command, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    if command == "deep-json":
        deep_json(url, args[0])
    elif command == "huge-max-new-tokens":
        huge_max_new_tokens(url, args[0])
    elif command == "tiny-temperature":
        tiny_temperature(url, args[0])
    elif command == "slow-headers":
        slow_headers(url, int(args[0]), args[1])
    elif command == "huge-header":
        huge_header(url, int(args[0]), int(args[1]))
    elif command == "storm":
        storm(url, int(args[0]))
    else:
        check(False, "unknown command " + command)


if __name__ == "__main__":
    main()
