// Candidate kernel variants, benchmarked against the engine's kernels before being proposed.
#pragma once
namespace headscope::bench {
void register_variants();  // embind registrations (wasm); no-op natively
}
