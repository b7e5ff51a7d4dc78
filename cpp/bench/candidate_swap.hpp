// Compiles the engine's model.cpp against the candidate kernels (model_candidates.cpp includes this
// first): the kernel calls in Model::forward are renamed to *_candidate, defined in candidate_swap.cpp.
// Nothing in cpp/src changes; the resulting Model lives only in the *_cand benchmark module.
#pragma once
#define attention_forward attention_forward_candidate
#define matmul_forward matmul_forward_candidate
#define matmul_rows_forward matmul_rows_forward_candidate
#include "headscope/kernels.hpp"
