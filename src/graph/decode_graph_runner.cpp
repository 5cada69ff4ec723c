#include "graph/decode_graph_runner.h"

namespace seam {

DecodeGraphRunner::DecodeGraphRunner(Backend& backend, std::vector<int> buckets, DecodeGraphWork work)
    : cache_(backend, "decode graphs", std::move(buckets)), work_(std::move(work)) {
  SEAM_ASSERT(work_.pad && work_.forward, "DecodeGraphRunner needs its pad and forward closures");
}

void DecodeGraphRunner::capture_all() {
  cache_.capture_all([&](int bs) {
    // An all-padding batch: every row is a padded decode row on the scratch slot.
    work_.pad(bs, bs);
    cache_.capture(bs, [&] { work_.forward(bs); });
  });
}

}  // namespace seam
