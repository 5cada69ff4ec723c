// Unicode tables for NFC/NFD (generated into unicode_nfc_data.cpp by
// tools/make_unicode_tables.py). Hangul syllables are not listed: they are
// composed and decomposed algorithmically.
#pragma once
#include <cstddef>
#include <cstdint>

namespace seam::unicode_data {
// Flat records: code point, n, then n code points of its full canonical decomposition.
extern const uint32_t kCanonicalDecomposition[];
extern const size_t kCanonicalDecompositionSize;
// Flat triples (first, last, class) covering every code point whose class is not 0.
extern const uint32_t kCombiningClassRanges[];
extern const size_t kCombiningClassRangesSize;
// Flat triples (first, second, composite): the pairs canonical composition joins.
extern const uint32_t kPrimaryComposites[];
extern const size_t kPrimaryCompositesSize;
}  // namespace seam::unicode_data
