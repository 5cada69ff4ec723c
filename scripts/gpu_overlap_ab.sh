#!/usr/bin/env bash
# The serving A/B of the output overlap (twenty-eighth pass): scripts/gpu_serving_ab.sh with its
# default arms, --disable-output-overlap against --enable-output-overlap.
#   device: BUILD=<build dir> bash scripts/gpu_overlap_ab.sh
exec bash "$(dirname "${BASH_SOURCE[0]}")/gpu_serving_ab.sh" "$@"
