#!/usr/bin/env python3
"""Mixed load for scripts/soak.sh (stdlib only, 127.0.0.1 only): streams read to
the end, streams and plain requests abandoned mid-way, long prompts near the
context, chat requests, bad bodies and an oversized prompt, from N workers for
a fixed time. Prints one JSON line of counts at the end."""
import http.client
import json
import random
import socket
import sys
import threading
import time

port, seconds, workers = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
deadline = time.time() + seconds
counts = {}
lock = threading.Lock()
WORDS = "once upon a time there was a little girl named lily who loved to play in the park with her dog".split()


def count(key):
    with lock:
        counts[key] = counts.get(key, 0) + 1


def prompt(n_words, rng):
    return " ".join(rng.choice(WORDS) for _ in range(n_words))


def post(path, body, timeout=60):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    conn.request("POST", path, body=json.dumps(body) if not isinstance(body, (bytes, str)) else body,
                 headers={"Content-Type": "application/json"})
    return conn, conn.getresponse()


def full_stream(rng):
    conn, r = post("/v1/completions", {"prompt": prompt(rng.randint(3, 60), rng), "max_tokens": rng.randint(16, 200),
                                       "stream": True, "temperature": 0.8})
    data = r.read()
    conn.close()
    return "stream_ok" if r.status == 200 and b"[DONE]" in data else f"stream_{r.status}"


def abandoned_stream(rng):
    conn, r = post("/v1/completions", {"prompt": prompt(rng.randint(3, 40), rng), "max_tokens": 400,
                                       "stream": True, "ignore_eos": True})
    r.read1(64) if hasattr(r, "read1") else r.read(64)
    conn.sock.close()  # hang up mid-stream
    return "stream_abandoned"


def abandoned_plain(rng):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    body = json.dumps({"prompt": prompt(20, rng), "max_tokens": 300, "ignore_eos": True}).encode()
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
              b"Content-Length: %d\r\n\r\n" % len(body) + body)
    time.sleep(rng.uniform(0.05, 0.5))
    s.close()  # hang up before the answer
    return "plain_abandoned"


def long_prompt(rng):
    # Near the 512-token context: heavy prefill and KV pressure.
    conn, r = post("/v1/completions", {"prompt": prompt(rng.randint(250, 380), rng), "max_tokens": 32})
    r.read()
    conn.close()
    return "long_ok" if r.status == 200 else f"long_{r.status}"


def chat(rng):
    conn, r = post("/v1/chat/completions", {"messages": [{"role": "user", "content": prompt(10, rng)}],
                                            "max_tokens": 48, "n": rng.randint(1, 3)})
    r.read()
    conn.close()
    return "chat_ok" if r.status == 200 else f"chat_{r.status}"


def bad(rng):
    body = rng.choice(['{"prompt": "x", "temperature": 1e400}', '{"prompt": ', '{"messages": []}',
                       '{"prompt": "x", "max_tokens": -1}'])
    conn, r = post("/v1/chat/completions" if "messages" in body else "/v1/completions", body)
    r.read()
    conn.close()
    return "bad_4xx" if 400 <= r.status < 500 else f"bad_{r.status}"


def oversized(rng):
    conn, r = post("/v1/completions", {"prompt": "lily " * 400000, "max_tokens": 4})  # 2 MB
    r.read()
    conn.close()
    return "oversized_4xx" if r.status == 400 else f"oversized_{r.status}"


MIX = [(full_stream, 30), (abandoned_stream, 15), (abandoned_plain, 10), (long_prompt, 15), (chat, 15), (bad, 10),
       (oversized, 5)]


def worker(seed):
    rng = random.Random(seed)
    kinds = [k for k, w in MIX for _ in range(w)]
    while time.time() < deadline:
        try:
            count(rng.choice(kinds)(rng))
        except Exception as e:  # a failure is counted, never fatal: the soak watches the server
            count("client_error_" + type(e).__name__)


threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(workers)]
for t in threads:
    t.start()
for t in threads:
    t.join(timeout=max(0.0, deadline - time.time()) + 120)
print(json.dumps(counts, sort_keys=True))
