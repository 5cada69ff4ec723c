// graph/ sits below runtime/: the graph cache and runners get closures and buffers, never a ModelRunner.
#include "runtime/model_runner.h"
