// How many bytes of input text one token can stand for, derived from the
// tokenizer's own files, so that a text can be refused as too long for the
// context before it is tokenized. Every function answers 0 ("no bound") when
// a stage can drop text or fold an unbounded run into one id (Strip, a
// Removed split, a fused unk, a stripping added token...): a wrong bound
// would refuse a prompt that fits, so only what is provable counts.
#pragma once
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/added_vocabulary.h"

namespace seam::text_bound {

// The factor by which a tokenizer.json normalizer (null: none) can shrink a
// text: for every text, bytes(text) <= factor * bytes(normalize(text)).
// 0 when it can delete text without bound.
size_t normalizer_shrink(const nlohmann::json& normalizer);

// Whether a tokenizer.json pre-tokenizer (null: none) hands every byte of its
// input to the model (it only cuts, or maps a byte to one or more bytes).
bool pre_tokenizer_keeps_text(const nlohmann::json& pre_tokenizer);

// Whether a normalizer or pre-tokenizer maps text to GPT-2's byte alphabet
// (a ByteLevel stage), so the model sees only those 256 characters.
bool maps_to_byte_alphabet(const nlohmann::json& stage);

// The longest added token in bytes, or 0 when one swallows whitespace beside
// it (lstrip / rstrip: any run of it, so no bound).
size_t added_tokens_bound(const std::vector<AddedToken>& tokens);

// The bytes of `text` other than ASCII whitespace and control characters:
// what survives a normalizer that collapses or strips whitespace runs.
size_t count_non_space_bytes(std::string_view text);

// Multiplies bounds where 0 means "none": 0 if either is 0.
inline size_t times(size_t a, size_t b) { return a == 0 || b == 0 ? 0 : a * b; }

}  // namespace seam::text_bound
