#!/usr/bin/env python3
"""Renders chat templates over the shared goldens' 22 conversations with both
seam (`seam chat-template`) and Python jinja2 configured as transformers does,
and reports differences (a development aid for templates that have no goldens).

usage: tools/jinja_template_differential.py SEAM_BINARY SHARED_DIR TEMPLATE.jinja... [--bos B] [--eos E]"""
import argparse, json, os, subprocess, sys, tempfile

sys.path.insert(0, os.path.dirname(__file__))
from jinja_differential import python_render  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("seam")
ap.add_argument("shared")
ap.add_argument("templates", nargs="+")
ap.add_argument("--bos", default="<s>")
ap.add_argument("--eos", default="</s>")
a = ap.parse_args()
cases = json.load(open(os.path.join(a.shared, "chat_templates", "Qwen__Qwen2.5-7B-Instruct.json")))["cases"]
for path in a.templates:
    template = open(path).read()
    n_same = 0
    with tempfile.TemporaryDirectory() as tmp:
        json.dump({"chat_template": template, "bos_token": a.bos, "eos_token": a.eos},
                  open(os.path.join(tmp, "tokenizer_config.json"), "w"))
        lines = "".join(json.dumps({k: c[k] for k in ("messages", "tools", "add_generation_prompt", "kwargs")}) + "\n"
                        for c in cases)
        out = subprocess.run([a.seam, "chat-template", "--tokenizer", tmp, "--fixed-time", "2026-07-26T00:00:00"],
                             input=lines, capture_output=True, text=True)
    # "\n" only: seam writes U+2028 and U+0085 raw inside its JSON strings, which str.splitlines() splits at.
    ours = [json.loads(l) for l in out.stdout.split("\n") if l]
    for c, r in zip(cases, ours):
        kwargs = dict(c["kwargs"])
        documents = kwargs.pop("documents", None)
        theirs = python_render(template, {"messages": c["messages"], "tools": c["tools"], "documents": documents,
                                          "add_generation_prompt": c["add_generation_prompt"],
                                          "bos_token": a.bos, "eos_token": a.eos, **kwargs})
        same = ("text" in r and r["text"] == theirs.get("text")) or ("error" in r and "error" in theirs)
        n_same += same
        if not same:
            print(f"DIFF {os.path.basename(path)} {c['id']}\n  jinja2: {theirs}\n  seam:   {r}")
    print(f"{os.path.basename(path)}: {n_same}/{len(cases)} agree")
