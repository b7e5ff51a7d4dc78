// The engine's Model, compiled against the candidate kernels (see candidate_swap.hpp).
#include "candidate_swap.hpp"
#include "../src/model.cpp"
