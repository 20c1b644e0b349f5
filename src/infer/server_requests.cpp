// The server scenario's requests (src/infer/generate.h): Poisson arrivals, and prompt and output
// lengths fixed or drawn from the paragraphs of the validation text.
#include <fmt/format.h>

#include <algorithm>
#include <random>

#include "infer/generate.h"
#include "trainscope/error.h"
#include "trainscope/inference.h"

namespace trainscope {

namespace {

// Whether a run of `brk` ends at position i of `t` (t[i - k, i) == brk).
bool break_ends_at(const std::vector<int64_t>& t, const std::vector<int64_t>& brk, size_t i) {
  const size_t k = brk.size();
  if (i < k || i > t.size()) return false;
  for (size_t j = 0; j < k; ++j)
    if (t[i - k + j] != brk[j]) return false;
  return true;
}

// Paragraph boundaries: positions after a run of breaks, where the next token is no further
// break (so several blank lines make one boundary), before the text's end.
std::vector<int64_t> paragraph_boundaries(const std::vector<int64_t>& t, const std::vector<int64_t>& brk) {
  std::vector<int64_t> out;
  for (size_t i = brk.size(); i < t.size(); ++i)
    if (break_ends_at(t, brk, i) && !break_ends_at(t, brk, i + 1)) out.push_back(static_cast<int64_t>(i));
  return out;
}

}  // namespace

std::vector<TextSpan> server_text_spans(const torch::Tensor& text, const std::vector<int64_t>& paragraph_break,
                                        int64_t count, int64_t max_prompt, int64_t max_output, int64_t context,
                                        uint64_t seed) {
  if (paragraph_break.empty())
    throw_error(ErrorKind::kInvalidArgument,
                "--server-lengths text: the paragraph break of this data's tokenizer is unknown (a token file); "
                "use --server-lengths fixed, or text data (--data-format text)");
  auto flat = text.to(torch::kCPU, torch::kLong).contiguous();
  const std::vector<int64_t> t(flat.data_ptr<int64_t>(), flat.data_ptr<int64_t>() + flat.numel());
  const auto b = paragraph_boundaries(t, paragraph_break);
  if (b.size() < 3)
    throw_error(ErrorKind::kInvalidArgument,
                fmt::format("--server-lengths text: the validation text ({} tokens) has {} paragraph boundaries "
                            "(blank lines); it needs at least 3, so that a whole paragraph lies before and after "
                            "one; use --server-lengths fixed, or validation text with paragraphs",
                            t.size(), b.size()));
  std::mt19937_64 pick(seed);
  std::vector<TextSpan> out;
  for (int64_t r = 0; r < count; ++r) {
    const size_t j = 1 + static_cast<size_t>(pick() % static_cast<uint64_t>(b.size() - 2));
    TextSpan s;
    s.prompt_len = std::max<int64_t>(1, std::min({b[j] - b[j - 1], max_prompt, context - 1}));
    s.prompt_start = b[j] - s.prompt_len;
    s.output_len = std::max<int64_t>(1, std::min({b[j + 1] - b[j], max_output, context - s.prompt_len}));
    out.push_back(s);
  }
  return out;
}

std::vector<ServerRequest> server_requests(const torch::Tensor& text, const GenerationOptions& o, double rate,
                                           int64_t count, uint64_t seed, const torch::Device& device) {
  const auto arrivals = poisson_arrivals(rate, count, seed);
  std::vector<ServerRequest> out(arrivals.size());
  if (o.server_lengths == "text") {
    const auto spans = server_text_spans(text, o.paragraph_break, static_cast<int64_t>(out.size()), o.prompt_len, o.output_len,
                                         o.prompt_len + o.output_len, seed);
    for (size_t i = 0; i < out.size(); ++i)
      out[i] = {arrivals[i], text_tokens(text, spans[i].prompt_start, 1, spans[i].prompt_len, device),
                spans[i].output_len};
    return out;
  }
  std::mt19937_64 pick(seed);  // each prompt from a seeded offset of the text
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = {arrivals[i],
              text_tokens(text, static_cast<int64_t>(pick() % static_cast<uint64_t>(text.numel())), 1, o.prompt_len,
                          device),
              o.output_len};
  return out;
}

}  // namespace trainscope
