"""Attacks a real `lorascope-cli serve --demo` on 127.0.0.1 as hostile clients would (issue 26) and
prints one line per attack with what it measured. Driven by scripts/attack-serve; Python's
standard library only. Every phase is bounded in time; nothing leaves 127.0.0.1.
"""
import argparse
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time

HOST = "127.0.0.1"


def report(name, **fields):
    print("%-22s %s" % (name + ":", "  ".join("%s=%s" % kv for kv in fields.items())), flush=True)


def proc_status(pid, key):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return -1


def count(path):
    try:
        return len(os.listdir(path)) if os.path.isdir(path) else sum(1 for _ in open(path))
    except OSError:
        return -1


class Server:
    def __init__(self, cli, extra):
        self.proc = subprocess.Popen([cli, "serve", "--demo", "--host", HOST, "--port", "0"] + extra,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if not line:
            sys.exit("attack-serve: the server did not start: " + self.proc.stderr.read())
        self.port = int(json.loads(line)["listening"].rsplit(":", 1)[1])
        self.pid = self.proc.pid
        threading.Thread(target=self.proc.stderr.read, daemon=True).start()   # keep the pipe drained

    def rss_mb(self):
        return proc_status(self.pid, "VmRSS") / 1024.0

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def request(port, method, path, body=None, timeout=120):
    """(status, body bytes, seconds); status -1 on a connection error."""
    start = time.monotonic()
    try:
        c = http.client.HTTPConnection(HOST, port, timeout=timeout)
        data = json.dumps(body).encode() if isinstance(body, (dict, list)) else body
        c.request(method, path, body=data, headers={"Content-Type": "application/json"} if data else {})
        r = c.getresponse()
        out = (r.status, r.read(), time.monotonic() - start)
        c.close()
        return out
    except (OSError, http.client.HTTPException):
        return (-1, b"", time.monotonic() - start)


def metrics(port):
    status, body, _ = request(port, "GET", "/metrics", timeout=30)
    values = {}
    for line in body.decode(errors="replace").splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            values[name] = float(value)
    return values


HONEST = {"inputs": "queen wolf kite goat sun", "parameters": {"max_new_tokens": 24, "ignore_eos_token": True}}


def honest_run(port, n, workers=4):
    """n /generate requests from `workers` clients: (all answered 200, p95 seconds, their texts)."""
    latencies, statuses, texts, lock = [], [], set(), threading.Lock()
    todo = list(range(n))

    def work():
        while True:
            with lock:
                if not todo:
                    return
                todo.pop()
            status, body, seconds = request(port, "POST", "/generate", HONEST)
            with lock:
                statuses.append(status)
                latencies.append(seconds)
                if status == 200:
                    texts.add(json.loads(body)["generated_text"])
    threads = [threading.Thread(target=work) for _ in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    latencies.sort()
    p95 = latencies[min(len(latencies) - 1, int(0.95 * len(latencies)))]
    return all(s == 200 for s in statuses), p95, texts, statuses


class RssWatch:
    """The server's peak RSS, sampled every 50 ms while attacks run."""

    def __init__(self, server):
        self.server, self.peak, self.stop_flag = server, 0.0, threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stop_flag.is_set():
            try:
                self.peak = max(self.peak, self.server.rss_mb())
            except OSError:
                return
            self.stop_flag.wait(0.05)


class SlowClients:
    """n connections that never finish their request: half send a header byte every `every`
    seconds, half send a whole head announcing a body and then a body byte every `every` seconds.
    A connection the server closes is opened again, so that n stay connected throughout."""

    def __init__(self, port, n, every=2.0):
        self.port, self.n, self.every = port, n, every
        self.socks, self.reopened, self.stop_flag = [], 0, threading.Event()
        for i in range(n):
            self.socks.append(self.open(i))
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def open(self, i):
        s = socket.create_connection((HOST, self.port))
        s.setblocking(False)
        if i % 2:
            s.send(b"POST /generate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n")
        else:
            s.send(b"GET /health HTTP/1.1\r\nHost: x\r\n")
        return s

    def run(self):
        while not self.stop_flag.wait(self.every):
            for i, s in enumerate(self.socks):
                try:
                    s.send(b"a" if i % 2 else b"X")
                    closed = s.recv(1, socket.MSG_PEEK) == b""
                except BlockingIOError:
                    closed = False
                except OSError:
                    closed = True
                if closed:
                    s.close()
                    try:
                        self.socks[i] = self.open(i)
                        self.reopened += 1
                    except OSError:
                        pass

    def close(self):
        self.stop_flag.set()
        self.thread.join()
        for s in self.socks:
            s.close()


def stream(port, body, hang_up_after=None):
    """One /generate_stream over a bare socket: (status, events); hangs up after that many events."""
    s = socket.create_connection((HOST, port), timeout=120)
    data = json.dumps(body).encode()
    s.sendall(b"POST /generate_stream HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: %d\r\n\r\n%s" % (len(data), data))
    f = s.makefile("rb")
    status = int(f.readline().split()[1])
    while f.readline() not in (b"\r\n", b""):
        pass
    events = 0
    while status == 200:
        size_line = f.readline()
        if not size_line or int(size_line.strip(), 16) == 0:
            break
        events += f.read(int(size_line.strip(), 16)).count(b"data:")
        f.readline()
        if hang_up_after and events >= hang_up_after:
            break
    s.close()
    return status, events


def attack_bodies(server):
    deep = b'{"inputs": "rain owl", "parameters": {"stop": ' + b"[" * 500000 + b"]" * 500000 + b"}}"
    status, body, seconds = request(server.port, "POST", "/generate", deep)
    report("deep-json", bytes=len(deep), status=status, answered_s="%.3f" % seconds,
           error=json.loads(body or b"{}").get("error", "")[:60].replace(" ", "_"))
    cases = [("max_new_tokens=2^63-1", {"max_new_tokens": 9223372036854775807}),
             ("temperature=1e-39", {"temperature": 1e-39}), ("temperature=1e309", b"1e309"),
             ("repetition_penalty=1e300", {"repetition_penalty": 1e300}), ("temperature=NaN", b"NaN"),
             ("stop=17x", {"stop": ["x%d" % i for i in range(17)]}), ("stop=200KB", {"stop": ["x" * 200000]})]
    statuses = []
    for name, params in cases:
        if isinstance(params, bytes):
            body = b'{"inputs": "rain owl", "parameters": {"temperature": ' + params + b"}}"
        else:
            body = {"inputs": "rain owl", "parameters": params}
        statuses.append("%s:%d" % (name, request(server.port, "POST", "/generate", body)[0]))
    report("bad-parameters", answers=",".join(statuses))


def attack_headers(server):
    before = server.rss_mb()
    s = socket.create_connection((HOST, server.port), timeout=30)
    s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ")
    sent, piece = 0, b"a" * (1 << 20)
    try:
        for _ in range(300):
            s.sendall(piece)
            sent += 1
    except OSError:
        pass
    s.close()
    report("header-line-300MiB", sent_before_close_mib=sent, rss_growth_mb="%.1f" % (server.rss_mb() - before))
    many = b"GET /health HTTP/1.1\r\nHost: x\r\n" + b"".join(b"X-%d: v\r\n" % i for i in range(10000)) + b"\r\n"
    s = socket.create_connection((HOST, server.port), timeout=30)
    try:
        s.sendall(many)
        answer = s.recv(64).split(b"\r\n")[0].decode()
    except OSError as e:
        answer = "closed (%s)" % e.__class__.__name__
    s.close()
    report("header-count-10000", answer=answer.replace(" ", "_"))


def attack_slow(server, n, honest_n, base_p95, idle_rss):
    slow = SlowClients(server.port, n)
    time.sleep(3)
    m = metrics(server.port)
    ok, p95, texts, statuses = honest_run(server.port, honest_n)
    health = request(server.port, "GET", "/health", timeout=30)
    report("slow-clients", held=n, open_connections=int(m.get("lorascope_connections_open", -1)),
           honest_ok="%d/%d" % (sum(1 for s in statuses if s == 200), honest_n), p95_s="%.3f" % p95,
           p95_vs_baseline="%.2fx" % (p95 / base_p95), same_text=len(texts) == 1,
           health_s="%.3f" % health[2], rss_mb="%.0f" % server.rss_mb(), rss_vs_idle="%.2fx" % (server.rss_mb() / idle_rss))
    return slow


def attack_streams(server, n):
    results, lock = [], threading.Lock()
    body = {"inputs": "rain owl jam", "parameters": {"max_new_tokens": 32, "ignore_eos_token": True}}

    def one():
        try:
            r = stream(server.port, body)
        except OSError as e:
            r = (-1, repr(e))
        with lock:
            results.append(r)
    start = time.monotonic()
    threads = [threading.Thread(target=one) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    done = sum(1 for s, e in results if s == 200 and e == 32)
    refused = sum(1 for s, _ in results if s == 429)
    report("honest-streams", concurrent=n, completed=done, refused_429=refused, other=n - done - refused,
           seconds="%.1f" % (time.monotonic() - start))


def attack_vanish(server, n):
    before = metrics(server.port)
    body = {"inputs": "rain owl jam queen hat", "parameters": {"max_new_tokens": 5000, "ignore_eos_token": True}}
    threads = [threading.Thread(target=stream, args=(server.port, body, 1)) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    gone = time.monotonic()
    while metrics(server.port).get("lorascope_requests_in_engine", 1) > 0 and time.monotonic() - gone < 30:
        time.sleep(0.05)
    m = metrics(server.port)
    key = "lorascope_client_disconnect_cancels"
    report("vanishing-clients", streams=n, cancelled=int(m.get(key, 0) - before.get(key, 0)),
           engine_idle_after_s="%.2f" % (time.monotonic() - gone))


def attack_storm(cli, n):
    server = Server(cli, ["--adapter-memory-budget", "1"])
    try:
        def run(k):
            for i in range(k):
                request(server.port, "POST", "/generate", {"inputs": "queen wolf kite",
                        "parameters": {"adapter_id": "upper" if i % 2 else "reverse", "max_new_tokens": 2}})
        run(20)
        task, maps, vm = count("/proc/%d/task" % server.pid), count("/proc/%d/maps" % server.pid), proc_status(server.pid, "VmSize")
        start = time.monotonic()
        run(n)
        report("eviction-storm", requests=n, seconds="%.1f" % (time.monotonic() - start),
               threads="%d->%d" % (task, count("/proc/%d/task" % server.pid)),
               mappings="%d->%d" % (maps, count("/proc/%d/maps" % server.pid)),
               vmsize_mb="%.0f->%.0f" % (vm / 1024.0, proc_status(server.pid, "VmSize") / 1024.0))
    finally:
        server.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--slow", type=int, default=1000)
    ap.add_argument("--honest", type=int, default=100)
    ap.add_argument("--streams", type=int, default=500)
    ap.add_argument("--vanish", type=int, default=50)
    ap.add_argument("--storm", type=int, default=1000)
    ap.add_argument("--grace", type=int, default=10)
    a = ap.parse_args()

    server = Server(a.cli, ["--shutdown-grace-seconds", str(a.grace), "--max-connections", str(max(64, a.streams + 16))])
    ok, base_p95, texts, _ = honest_run(server.port, 8)   # warm-up
    idle_rss = server.rss_mb()
    watch = RssWatch(server)
    ok, base_p95, texts, statuses = honest_run(server.port, a.honest)
    report("baseline", honest_ok="%d/%d" % (sum(1 for s in statuses if s == 200), a.honest), p95_s="%.3f" % base_p95,
           idle_rss_mb="%.0f" % idle_rss)
    attack_bodies(server)
    attack_headers(server)
    slow = attack_slow(server, a.slow, a.honest, base_p95, idle_rss)
    attack_streams(server, a.streams)
    attack_vanish(server, a.vanish)
    report("rss-during-attacks", idle_mb="%.0f" % idle_rss, peak_mb="%.0f" % watch.peak,
           peak_vs_idle="%.2fx" % (watch.peak / idle_rss))
    # SIGTERM while the slow clients are still connected: the server must exit within its grace + 2 s.
    start = time.monotonic()
    server.proc.send_signal(signal.SIGTERM)
    try:
        server.proc.wait(a.grace + 30)
        exit_s = time.monotonic() - start
    except subprocess.TimeoutExpired:
        exit_s = float("inf")
        server.proc.kill()
    report("sigterm-with-slow", slow_connected=len(slow.socks), exit_s="%.2f" % exit_s,
           within_grace_plus_2s=exit_s <= a.grace + 2, status=server.proc.returncode)
    watch.stop_flag.set()
    slow.close()
    attack_storm(a.cli, a.storm)


if __name__ == "__main__":
    main()
