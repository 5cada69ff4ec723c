// Arrows point down: the engine knows nothing of the HTTP server above it.
#include "server/http_server.h"
