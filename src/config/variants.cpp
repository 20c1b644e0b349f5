#include "trainscope/variants.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <optional>

#include "trainscope/error.h"

namespace trainscope {

namespace {

// The member of a Variant each technique name sets, in canonical order.
bool Variant::*technique_member(size_t i) {
  static bool Variant::*const kMembers[] = {&Variant::graphs, &Variant::bf16, &Variant::tf32, &Variant::channels_last};
  return kMembers[i];
}

[[noreturn]] void bad_variant(const std::string& text, std::string_view where, const std::string& what) {
  throw_error(ErrorKind::kInvalidArgument,
              fmt::format("variant '{}': {}; use eager or a '+' combination of {}, threadsN (N intra-op CPU threads, "
                          "1..{}), e.g. eager,bf16,graphs+bf16,threads8 ({})",
                          text, what, fmt::join(variant_techniques(), ", "), kMaxVariantThreads, where));
}

// N of a "threadsN" part; nullopt when the part is not of that form. N out of range: an error.
std::optional<int64_t> threads_part(const std::string& part, const std::string& text, std::string_view where) {
  const std::string head = "threads";
  if (part.rfind(head, 0) != 0) return std::nullopt;
  const std::string digits = part.substr(head.size());
  if (digits.empty() || digits.size() > 5 || !std::all_of(digits.begin(), digits.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }))
    bad_variant(text, where, fmt::format("'{}' needs a thread count: threads8, say", part));
  const int64_t n = std::stoll(digits);
  if (n < 1 || n > kMaxVariantThreads)
    bad_variant(text, where, fmt::format("the thread count must be in 1..{}", kMaxVariantThreads));
  return n;
}

}  // namespace

const std::vector<std::string>& variant_techniques() {
  static const std::vector<std::string> kNames = {"graphs", "bf16", "tf32", "channels_last"};
  return kNames;
}

std::string Variant::name() const {
  std::vector<std::string> on;
  for (size_t i = 0; i < variant_techniques().size(); ++i)
    if (this->*technique_member(i)) on.push_back(variant_techniques()[i]);
  if (threads > 0) on.push_back(fmt::format("threads{}", threads));
  return on.empty() ? "eager" : fmt::format("{}", fmt::join(on, "+"));
}

Variant parse_variant(const std::string& text, std::string_view where) {
  if (text == "eager") return Variant{};
  Variant v;
  size_t start = 0;
  while (start <= text.size()) {
    size_t plus = text.find('+', start);
    std::string part = text.substr(start, plus == std::string::npos ? std::string::npos : plus - start);
    if (part.empty()) bad_variant(text, where, "an empty part");
    if (part == "eager") bad_variant(text, where, "eager cannot be combined with a technique");
    if (auto n = threads_part(part, text, where)) {
      if (v.threads > 0) bad_variant(text, where, "a thread count appears twice");
      v.threads = *n;
      if (plus == std::string::npos) break;
      start = plus + 1;
      continue;
    }
    const auto& names = variant_techniques();
    auto it = std::find(names.begin(), names.end(), part);
    if (it == names.end()) bad_variant(text, where, fmt::format("unknown part '{}'", part));
    bool& on = v.*technique_member(static_cast<size_t>(it - names.begin()));
    if (on) bad_variant(text, where, fmt::format("'{}' appears twice", part));
    on = true;
    if (plus == std::string::npos) break;
    start = plus + 1;
  }
  return v;
}

std::string variant_not_applicable(const Variant& v, const std::string& device, bool model_has_4d_params,
                                   bool data_parallel) {
  if (device.rfind("cuda", 0) != 0) {
    if (v.graphs) return fmt::format("not applicable on {}: graphs needs a CUDA device", device);
    if (v.tf32) return fmt::format("not applicable on {}: tf32 needs a CUDA device (Ampere or newer)", device);
  } else if (v.threads > 0) {
    return fmt::format("not applicable on {}: threads{} sets a CPU run's intra-op threads", device, v.threads);
  }
  if (v.channels_last && !model_has_4d_params)
    return "not applicable: channels_last needs a model with 4-D parameters (convolutions); this one has none";
  if (v.graphs && data_parallel)
    return "not applicable in a data-parallel run: graphs replays a captured step, and the gradient all-reduce runs from "
           "host-side autograd hooks outside it (docs/variants.md#applicability)";
  return "";
}

void check_gpu_only_variants(const std::vector<std::string>& variants, const std::vector<std::string>& devices,
                             bool devices_given) {
  const bool all_cpu = std::none_of(devices.begin(), devices.end(), [](const auto& d) { return d.rfind("cuda", 0) == 0; });
  if (!all_cpu || !devices_given) return;
  for (const auto& v : variants)
    if (parse_variant(v, "--variants").gpu_only())
      throw_error(ErrorKind::kInvalidArgument,
                  fmt::format("variant '{}' needs a CUDA device, but every device asked for ({}) is a CPU; add a GPU "
                              "with --devices cuda, or leave graphs and tf32 out of --variants (eager, bf16, "
                              "channels_last and threadsN run on the CPU)",
                              parse_variant(v, "--variants").name(), fmt::join(devices, ", ")));
}

std::vector<std::string> default_variants(const std::vector<std::string>& devices) {
  const bool gpu = std::any_of(devices.begin(), devices.end(), [](const auto& d) { return d.rfind("cuda", 0) == 0; });
  if (gpu) return {"eager", "graphs"};
  return {"eager"};
}

std::string variant_run_id_suffix(const std::string& variant) {
  return variant.empty() || variant == "eager" ? "" : "-" + variant;
}

std::string model_with_variant(const std::string& model, const std::string& variant) {
  return variant.empty() || variant == "eager" ? model : fmt::format("{} [{}]", model, variant);
}

std::pair<std::string, std::string> split_model_variant(const std::string& label) {
  const auto open = label.rfind(" [");
  if (open == std::string::npos || label.back() != ']') return {label, "eager"};
  return {label.substr(0, open), label.substr(open + 2, label.size() - open - 3)};
}

}  // namespace trainscope
