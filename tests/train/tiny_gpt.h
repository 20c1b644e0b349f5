// The small GPT and token-id tensors of the decoder tests (test_gpt_decoder.cpp,
// test_gpt_slot_decoder.cpp). One copy each: `inline`, in namespace trainscope::test.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "workload/gpt.h"

namespace trainscope::test {

/// A small GPT (2 layers, width 32, 4 heads, context 40, vocabulary 61) with weights seeded by
/// `seed`, in eval mode, on the CPU.
inline std::unique_ptr<Model> tiny_gpt(uint64_t seed = 3) {
  torch::manual_seed(seed);
  auto m = make_gpt("gpt-tiny", GptShape{2, 32, 4, 40, 61});
  m->set_training(false);
  return m;
}

/// Token ids `v` as an int64 tensor [rows, v.size() / rows] on the CPU.
inline torch::Tensor ids(const std::vector<int64_t>& v, int64_t rows = 1) {
  return torch::tensor(v, torch::kLong).view({rows, static_cast<int64_t>(v.size()) / rows});
}

}  // namespace trainscope::test
