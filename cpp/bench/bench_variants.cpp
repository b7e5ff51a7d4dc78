#include "bench_variants.hpp"
#ifdef __EMSCRIPTEN__
#include <emscripten/bind.h>
#endif
namespace headscope::bench {
void register_variants() {}
}
