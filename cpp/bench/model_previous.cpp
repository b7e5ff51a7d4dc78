// The engine's Model and its block forward pass, compiled against the previous kernels (see
// previous_swap.hpp): block_forward (forward.cpp) is where the attention kernel is called.
#include "previous_swap.hpp"
#include "../src/model.cpp"
#include "../src/forward.cpp"
