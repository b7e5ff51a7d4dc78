// The analyses that read a run's buffers or the packed weights directly (explain.cpp, circuits.cpp)
// reach the model's Impl through this one door (Model names it a friend), not through the API.
#pragma once
#include "../model/model_impl.hpp"
#include "headscope/model.hpp"

namespace headscope {

struct AnalysisAccess {
  using Impl = Model::Impl;
  static const Impl& impl(const Model& m) { return *m.impl_; }
};

}  // namespace headscope
