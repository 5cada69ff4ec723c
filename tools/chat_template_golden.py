#!/usr/bin/env python3
"""Runs `seam chat-template` over the shared chat-template goldens and prints
the cases whose output differs (a development aid; the CI test is
tests/chat_template_golden_test.cpp).

usage: tools/chat_template_golden.py SEAM_BINARY [SHARED_DIR]"""
import glob, json, os, subprocess, sys, tempfile

seam = sys.argv[1]
shared = sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.path.dirname(__file__), "../../shared")
n_pass = n_total = 0
for path in sorted(glob.glob(os.path.join(shared, "chat_templates", "*.json"))):
    d = json.load(open(path))
    with tempfile.TemporaryDirectory() as tmp:
        cfg = {"chat_template": d["template"], "bos_token": d["bos_token"], "eos_token": d["eos_token"]}
        json.dump(cfg, open(os.path.join(tmp, "tokenizer_config.json"), "w"))
        lines = "".join(json.dumps({k: c[k] for k in ("messages", "tools", "add_generation_prompt", "kwargs")}) + "\n"
                        for c in d["cases"])
        out = subprocess.run([seam, "chat-template", "--tokenizer", tmp, "--fixed-time", "2026-07-26T00:00:00"],
                             input=lines, capture_output=True, text=True)
    results = [json.loads(l) for l in out.stdout.splitlines()]
    for c, r in zip(d["cases"], results):
        n_total += 1
        if c["expect_error"]:
            ok = "error" in r and (not c.get("raised_by_template") or r["error"] == c["error"])
        else:
            ok = r.get("text") == c["expected"]
        n_pass += ok
        if not ok:
            print(f"FAIL {os.path.basename(path)} {c['id']}\n  expected: {c['expected'] if not c['expect_error'] else c['error']!r}\n  got:      {r!r}")
    if len(results) != len(d["cases"]):
        print(f"{path}: {len(results)} results for {len(d['cases'])} cases; stderr: {out.stderr}")
print(f"{n_pass}/{n_total} cases match")
