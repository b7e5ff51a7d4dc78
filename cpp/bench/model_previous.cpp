// The engine's Model, compiled against the previous kernels (see previous_swap.hpp).
#include "previous_swap.hpp"
#include "../src/model.cpp"
