#!/usr/bin/env bash
# Installs what a fresh Debian 12 machine lacks to build and test seam.
# Idempotent: packages already present are skipped by apt.
set -euo pipefail
pkgs=(build-essential cmake ninja-build pkg-config git
      libgtest-dev libgmock-dev libsentencepiece-dev nlohmann-json3-dev libcli11-dev
      libboost-dev libpcre2-dev libspdlog-dev
      libgloo-dev  # tensor parallelism on the CPU backend (backend/cpu/gloo_communicator.cpp)
      python3 python3-jsonschema  # tests/server_structured_output_validation_test validates outputs with it
      clang libclang-rt-dev)  # clang + libFuzzer: scripts/fuzz.sh (the CI smoke)
missing=()
for p in "${pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
# Node.js may come from elsewhere (NodeSource ships npm inside nodejs, and
# Debian's npm package then conflicts): install Debian's only when absent.
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# The end-to-end tests drive the server with the official openai npm client.
if [ -f tests/e2e/setup.sh ]; then bash tests/e2e/setup.sh; fi
