// Compiles the engine's model.cpp and forward.cpp against the previous kernels (model_previous.cpp includes this
// first): the attention kernel call in block_forward is renamed to attention_forward_previous, defined in previous_swap.cpp.
// Nothing in cpp/src changes; the resulting Model lives only in the *_prev benchmark module, which
// times the whole model with the kernels as they were before the register-tiled port, next to the engine.
#pragma once
#define attention_forward attention_forward_previous
#include "kernels/kernels.hpp"
