#!/usr/bin/env python3
"""Independent check of structured-output samples with Python's jsonschema and re.

Each input file holds one JSON line per sample: {"case", "output"} and one of
  "schema": the output parses as JSON and validates (jsonschema's Draft 2020-12
            validator with format checks)
  "regex":  re.fullmatch(regex, output)
  "choice": the output is one of the listed strings
The grammar tests write such files when run with SEAM_GRAMMAR_SAMPLES_DIR=<dir>;
tests/server_structured_output_validation_test.cpp runs this on every output of
seam serve (there the check is part of the test: python3-jsonschema is needed).
Prints "N samples, M invalid"; exits 1 when M > 0 or a line has no check.
"""
import json
import re
import sys

import jsonschema
from jsonschema import Draft202012Validator


def check(d):
    """None when the sample is valid, else why not."""
    output = d["output"]
    if "schema" in d:
        try:
            value = json.loads(output)
        except ValueError as e:
            return f"not JSON: {e}"
        try:
            Draft202012Validator(d["schema"], format_checker=Draft202012Validator.FORMAT_CHECKER).validate(value)
        except jsonschema.ValidationError as e:
            return str(e).splitlines()[0]
        return None
    if "regex" in d:
        return None if re.fullmatch(d["regex"], output) else f"no full match of {d['regex']!r}"
    if "choice" in d:
        return None if output in d["choice"] else f"not one of {d['choice']!r}"
    return "the sample has no schema, regex or choice"


def main(paths):
    n = bad = 0
    for path in paths:
        for line in open(path, encoding="utf-8"):
            d = json.loads(line)
            n += 1
            why = check(d)
            if why:
                bad += 1
                print(f"{path}: {d['case']}: {d['output'][:200]!r}: {why}")
    print(f"{n} samples, {bad} invalid")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
