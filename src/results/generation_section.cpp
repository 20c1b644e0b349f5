// The generation section's JSON form (written and read through its fields() lists,
// src/results/record_json.h) and llama-bench's test names.
#include <fmt/format.h>

#include "results/record_json.h"
#include "trainscope/error.h"
#include "trainscope/generation_section.h"

namespace trainscope {

std::string generation_section_json(const GenerationSection& s) { return record_json::write(s).dump(2); }

GenerationSection generation_section_from_json(const std::string& text) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    throw_error(ErrorKind::kDataFormat, "generation section: the text is not a JSON object; give the \"generation\" "
                                        "object of inference.json or results.json");
  GenerationSection s;
  record_json::read(j, s);
  return s;
}

std::string token_test_name(int64_t n_prompt, int64_t n_gen, int64_t n_depth) {
  std::string name = n_prompt > 0 ? fmt::format("pp{}", n_prompt) : fmt::format("tg{}", n_gen);
  if (n_depth > 0) name += fmt::format(" @ d{}", n_depth);
  return name;
}

}  // namespace trainscope
