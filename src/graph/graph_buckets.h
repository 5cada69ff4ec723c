// The default graph keys (sglang's choices) and bucket lookup.
#pragma once
#include <string>
#include <vector>

namespace seam {

// Decode batch sizes: 1, 2, 4, 8, 12, then 16..256 step 8, then step 16 to 512
// and step 32 beyond, up to max_bs (max_bs itself is always a key).
std::vector<int> default_decode_buckets(int max_bs);
// Piecewise token counts: 4..32 step 4, 48..256 step 16, 288..512 step 32,
// 576..1024 step 64, 1280..4096 step 256, then step 512, up to max_tokens.
std::vector<int> default_piecewise_buckets(int max_tokens);
// The smallest bucket >= n, or 0 when n is above every bucket.
int bucket_for(const std::vector<int>& ascending, int n);
// Parses "1,2,4" (sorted, deduplicated); throws seam::Error on bad input.
std::vector<int> parse_bucket_list(const std::string& text, const char* flag);

}  // namespace seam
