#!/usr/bin/env python3
"""Writes the chat-template goldens of tests/data/chat_templates (the families that
../shared/chat_templates does not hold) in the shared goldens' format: the verbatim
Hub template, its special tokens, and each conversation's expected text as Python
jinja2 renders it the way transformers' apply_chat_template(tokenize=False) does
(tools/jinja_differential.py's environment), or the error it raises.

Conversations: the shared goldens' 22, then each family's own (FAMILY_CASES: content
parts with an image, a system message carrying Phi-4-mini's `tools` string, Gemma's
`model` role, ...). The CI test is tests/chat_template_golden_test.cpp.

usage: tools/make_chat_template_goldens.py SHARED_DIR [OUT_DIR]   (python3-jinja2 3.1)"""
import hashlib, json, os, sys

import jinja2

sys.path.insert(0, os.path.dirname(__file__))
from jinja_differential import make_env  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
TEMPLATE_DIR = os.path.join(HERE, "../tests/data/chat_templates/templates")

# One entry per golden file: the template file (verbatim Hub text) and where it was copied from.
FAMILIES = [
    dict(file="google__gemma-3-4b-it.json", model="google/gemma-3-4b-it", template="google__gemma-3-4b-it.jinja",
         source='ShishirPatil/gorilla (bfcl GemmaHandler docstring: the tokenizer_config.json "chat_template" of '
                "google/gemma-3 it models)",
         identical_copies=["a Gemma 3 processor test script's CHAT_TEMPLATE (\"as the real google/gemma-3-4b-it "
                           "tokenizer_config.json\")"],
         bos_token="<bos>", eos_token="<eos>", tokens_from="google/gemma-3-4b-it tokenizer_config.json",
         note="Gemma 3: the system message is folded into the first user turn; assistant renders as the 'model' "
              "role; list content may hold {\"type\": \"image\"} parts (<start_of_image>)"),
    dict(file="microsoft__Phi-4-mini-instruct.json", model="microsoft/Phi-4-mini-instruct",
         template="microsoft__Phi-4-mini-instruct.jinja",
         source="huggingface.co/microsoft/Phi-4-mini-instruct/blob/main/tokenizer_config.json#L104 "
                "(as copied in a chat-template registry, dated 06/16/25)",
         identical_copies=["ShishirPatil/gorilla bfcl Phi handler docstring",
                           "an onnxruntime-genai test (\"From HuggingFace Python output for "
                           "'microsoft/Phi-4-mini-instruct'\")"],
         bos_token="<|endoftext|>", eos_token="<|endoftext|>", tokens_from="microsoft/Phi-4-mini-instruct "
         "tokenizer_config.json",
         note="Phi-4-mini: tools travel as a JSON string in the system message's own 'tools' key (the request's "
              "`tools` list is not read); no generation prompt means eos_token at the end"),
    dict(file="mistralai__Mistral-7B-Instruct-v0.1.json", model="mistralai/Mistral-7B-Instruct-v0.1",
         template="mistralai__Mistral-7B-Instruct-v0.1.jinja",
         source='openvinotoolkit/openvino.genai:tests/python_tests/data/tokenizer_configs.py '
                '["mistralai/Mistral-7B-Instruct-v0.1"]["chat_template"]',
         identical_copies=[], bos_token="<s>", eos_token="</s>",
         tokens_from="mistralai/Mistral-7B-Instruct-v0.1 tokenizer_config (openvino.genai copy)",
         note="the later Hub revision of v0.1's template (an optional system message joins the first user turn, "
              "' [INST] ' with spaces on both sides); the first revision refused system messages"),
]

IMAGE_PARTS = [{"type": "image"}, {"type": "text", "text": "  What is in this picture?  "}]
FAMILY_CASES = {
    "google__gemma-3-4b-it.json": [
        dict(id="gemma_image_part", messages=[{"role": "user", "content": IMAGE_PARTS}]),
        dict(id="gemma_system_parts_image",
             messages=[{"role": "system", "content": [{"type": "text", "text": "Describe images briefly."}]},
                       {"role": "user", "content": IMAGE_PARTS},
                       {"role": "assistant", "content": [{"type": "text", "text": " A cat on a mat. "}]},
                       {"role": "user", "content": "And its colour?"}]),
        dict(id="gemma_model_role", messages=[{"role": "user", "content": "Hi"}, {"role": "model", "content": "Hello."},
                                              {"role": "user", "content": "Bye"}]),
        dict(id="gemma_null_content", messages=[{"role": "user", "content": "Hi"},
                                                {"role": "assistant", "content": None}]),
        dict(id="gemma_system_only", messages=[{"role": "system", "content": "Be brief."}]),
    ],
    "microsoft__Phi-4-mini-instruct.json": [
        dict(id="phi4_system_tools_string",
             messages=[{"role": "system", "content": "You are a helpful assistant with some tools.",
                        "tools": "[{\"name\": \"get_current_weather\", \"description\": \"Get the weather.\", "
                                 "\"parameters\": {\"location\": {\"type\": \"str\"}}}]"},
                       {"role": "user", "content": "Weather in Paris?"}]),
        dict(id="phi4_system_tools_null",
             messages=[{"role": "system", "content": "Be brief.", "tools": None},
                       {"role": "user", "content": "Hi"}], add_generation_prompt=False),
        dict(id="phi4_tool_result",
             messages=[{"role": "user", "content": "Weather in Paris?"},
                       {"role": "assistant", "content": "<|tool_call|>[{\"name\": \"get_current_weather\"}]"},
                       {"role": "tool", "content": "{\"temperature\": 18}"}]),
    ],
    "mistralai__Mistral-7B-Instruct-v0.1.json": [
        dict(id="mistral_system_only", messages=[{"role": "system", "content": "Be brief."}]),
        dict(id="mistral_assistant_first", messages=[{"role": "assistant", "content": "Hello."}]),
    ],
}


def render(template, variables):
    """python_render's environment with a recording raise_exception: ({"text"} or {"error"}, whether the
    error is the template's own raise_exception, whose message is then part of the template's contract)."""
    raised = []

    def raise_exception(message):
        raised.append(message)
        raise jinja2.exceptions.TemplateError(message)

    env = make_env(raise_exception)
    try:
        context = {"messages": [], "tools": None, "documents": None, "add_generation_prompt": False, **variables}
        return {"text": env.from_string(template).render(**context)}, False
    except Exception as e:  # noqa: BLE001 - any failure is an "error" result
        return {"error_type": type(e).__name__, "error": str(e)}, bool(raised)


def golden_case(case, template, bos, eos):
    kwargs = dict(case.get("kwargs", {}))
    documents = kwargs.pop("documents", None)
    variables = {"messages": case["messages"], "tools": case.get("tools"), "documents": documents,
                 "add_generation_prompt": case.get("add_generation_prompt", True), **kwargs}
    # A null special token is not passed (undefined in the template), as in the shared goldens.
    if bos is not None:
        variables["bos_token"] = bos
    if eos is not None:
        variables["eos_token"] = eos
    result, raised = render(template, variables)
    out = {"id": case["id"], "messages": case["messages"], "tools": case.get("tools"),
           "add_generation_prompt": case.get("add_generation_prompt", True), "kwargs": case.get("kwargs", {})}
    if "text" in result:
        out.update(expected=result["text"], expect_error=False, error=None)
    else:
        out.update(expected=None, expect_error=True, error=result["error"], error_type=result["error_type"])
        if raised:
            out["raised_by_template"] = True
    return out


def main():
    shared = sys.argv[1]
    out_dir = sys.argv[2] if len(sys.argv) > 2 else os.path.join(HERE, "../tests/data/chat_templates")
    base = json.load(open(os.path.join(shared, "chat_templates", "Qwen__Qwen2.5-7B-Instruct.json")))
    shared_cases = [{k: c[k] for k in ("id", "messages", "tools", "add_generation_prompt", "kwargs")}
                    for c in base["cases"]]
    for fam in FAMILIES:
        template = open(os.path.join(TEMPLATE_DIR, fam["template"]), encoding="utf-8").read()
        cases = [golden_case(c, template, fam["bos_token"], fam["eos_token"])
                 for c in shared_cases + FAMILY_CASES[fam["file"]]]
        golden = {"model": fam["model"], "variant": None, "source": fam["source"],
                  "identical_copies": fam["identical_copies"], "note": fam["note"], "template": template,
                  "template_sha256": hashlib.sha256(template.encode()).hexdigest(), "bos_token": fam["bos_token"],
                  "eos_token": fam["eos_token"], "tokens_from": fam["tokens_from"],
                  "render": dict(base["render"], jinja2_version=jinja2.__version__), "cases": cases}
        with open(os.path.join(out_dir, fam["file"]), "w", encoding="utf-8", newline="\n") as f:
            json.dump(golden, f, indent=1, ensure_ascii=False)
            f.write("\n")
        n_err = sum(c["expect_error"] for c in cases)
        print(f"{fam['file']}: {len(cases)} cases, {n_err} errors")


if __name__ == "__main__":
    main()
