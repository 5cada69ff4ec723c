#!/usr/bin/env python3
"""Independent check of the grammar tests' samples with Python's jsonschema.

Run the grammar tests with SEAM_GRAMMAR_SAMPLES_DIR=<dir>; they write one JSON
line per sample ({"case", "schema", "output"}). This validates each output
against its schema (jsonschema's Draft 2020-12 validator with format checks).
Not needed by CI: the C++ tests assert on their own.
"""
import json
import sys

import jsonschema
from jsonschema import Draft202012Validator


def main(paths):
    n = bad = 0
    checker = Draft202012Validator.FORMAT_CHECKER
    for path in paths:
        for line in open(path, encoding="utf-8"):
            d = json.loads(line)
            n += 1
            try:
                value = json.loads(d["output"])
                Draft202012Validator(d["schema"], format_checker=checker).validate(value)
            except (ValueError, jsonschema.ValidationError) as e:
                bad += 1
                print(f"{path}: {d['case']}: {d['output'][:200]!r}: {str(e).splitlines()[0]}")
    print(f"{n} samples, {bad} invalid")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
