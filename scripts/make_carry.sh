#!/usr/bin/env bash
# Assembles .carry/ (git-ignored) on this machine for the device calls: the device machine
# lacks the PCRE2 headers (../shared/DEVICE.md), and ../shared does not travel.
# Run after scripts/setup.sh; name ".carry" in the device call's `carry`. Layout (what
# scripts/gpu_suite.sh reads):
#   .carry/include/  pcre2.h
#   .carry/lib/      libpcre2-8.so
#   .carry/pkgconfig/libpcre2-8.pc (prefix relative to the .pc file)
#   .carry/shared/   the small models, golden outputs and tokenizers (SEAM_SHARED_DIR there)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SHARED="${SEAM_SHARED_DIR:-$ROOT/../shared}"
C="$ROOT/.carry"
LIB=/usr/lib/x86_64-linux-gnu
rm -rf "$C"
mkdir -p "$C/include" "$C/lib" "$C/pkgconfig" "$C/shared"
cp /usr/include/pcre2.h "$C/include/"
cp -L "$LIB/libpcre2-8.so" "$C/lib/"
sed -e 's|^prefix=.*|prefix=${pcfiledir}/..|' -e 's|^libdir=.*|libdir=${prefix}/lib|' \
  -e 's|^includedir=.*|includedir=${prefix}/include|' "$LIB/pkgconfig/libpcre2-8.pc" > "$C/pkgconfig/libpcre2-8.pc"
cp -r "$SHARED/models" "$SHARED/golden" "$SHARED/tokenizers" "$C/shared/"
du -sh "$C"
