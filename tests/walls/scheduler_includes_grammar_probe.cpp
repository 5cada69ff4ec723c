// scheduler/ never sees grammar/: a request's grammar state lives in the engine, not in Request.
#include "grammar/grammar_matcher.h"
