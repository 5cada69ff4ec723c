// model/ sits below runtime/: the model's pieces take their buffers as arguments.
#include "runtime/step_buffers.h"
