// server/ sees the engine's face (engine/engine.h, api/) and nothing below it.
#include "scheduler/scheduler.h"
