// runtime/ never sees grammar/: the engine owns the matchers and hands the runner a host
// callback that writes each constrained row's token mask (ForwardBatch::fill_mask).
#include "grammar/grammar_matcher.h"
