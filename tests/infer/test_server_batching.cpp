// The server scenario's continuous batching (src/infer/server_continuous.cpp) and request
// lengths from the text (src/infer/server_requests.cpp), on the built-in GPT's decoders. The
// schedule runs on a clock that advances one unit per forward pass, so which step a request
// joins at is fixed by its arrival and the test does not depend on the machine's speed.
#include <gtest/gtest.h>

#include <ATen/CPUGeneratorImpl.h>
#include <c10/core/InferenceMode.h>

#include <numeric>
#include <set>

#include "infer/generate.h"
#include "trainscope/error.h"
#include "workload/gpt.h"

namespace trainscope {
namespace {

std::unique_ptr<Model> tiny_gpt() {
  torch::manual_seed(5);
  auto m = make_gpt("gpt-tiny", GptShape{2, 32, 4, 48, 61});
  m->set_training(false);
  return m;
}

// Time = forward passes so far (a wait jumps to the arrival).
struct PassClock {
  double now = 0;
  ServerClock clock() {
    return {[this] { return now; }, [this](double t) {
              now = std::max(now, t);
              return true;
            }};
  }
};

// The decoders with the clock advanced by each forward pass; the slot decoder also records the
// slots of every step.
class CountedSlots final : public SlotDecoder {
 public:
  CountedSlots(SlotDecoder& d, PassClock& c) : d_(d), c_(c) {}
  void reset_slots(int64_t s, int64_t l) override { d_.reset_slots(s, l); }
  torch::Tensor prefill(int64_t s, const torch::Tensor& t) override { return c_.now += 1, d_.prefill(s, t); }
  torch::Tensor step(const std::vector<int64_t>& s, const torch::Tensor& t) override {
    steps.push_back(s);
    return c_.now += 1, d_.step(s, t);
  }
  int64_t slot_length(int64_t s) const override { return d_.slot_length(s); }
  int64_t slots() const override { return d_.slots(); }
  int64_t context() const override { return d_.context(); }
  int64_t vocab() const override { return d_.vocab(); }
  torch::Device device() const override { return d_.device(); }
  std::string execution() const override { return d_.execution(); }
  std::vector<std::vector<int64_t>> steps;

 private:
  SlotDecoder& d_;
  PassClock& c_;
};

class CountedDecoder final : public Decoder {
 public:
  CountedDecoder(Decoder& d, PassClock& c) : d_(d), c_(c) {}
  void reset(int64_t b, int64_t l) override { d_.reset(b, l); }
  torch::Tensor append(const torch::Tensor& t) override { return c_.now += 1, d_.append(t); }
  int64_t length() const override { return d_.length(); }
  int64_t context() const override { return d_.context(); }
  int64_t vocab() const override { return d_.vocab(); }
  torch::Device device() const override { return d_.device(); }
  std::string execution() const override { return d_.execution(); }

 private:
  Decoder& d_;
  PassClock& c_;
};

// Requests of different prompt and output lengths arriving at different steps: two at once, a
// short one that leaves early (slots 1 and 2 then run without 0 until the next arrival), one
// that waits for a slot, one of a single output token, one after the server went idle.
std::vector<ServerRequest> mixed_requests() {
  const std::vector<double> arrival = {0, 0, 1.5, 8.5, 9.5, 10, 14, 80};
  const std::vector<int64_t> prompt = {5, 9, 3, 12, 1, 7, 4, 6}, output = {3, 14, 10, 6, 1, 8, 5, 4};
  std::vector<ServerRequest> out;
  for (size_t i = 0; i < arrival.size(); ++i)
    out.push_back({arrival[i], torch::arange(prompt[i], torch::kLong).add(static_cast<int64_t>(7 * i)).remainder(61).view({1, -1}),
                   output[i]});
  return out;
}

GenerationOptions greedy_options(int64_t max_batch) {
  GenerationOptions o;
  o.server_max_batch = max_batch;
  return o;
}

// Each request decoded alone by the cached decoder (greedy): its prompt, then one token at a time.
std::vector<int64_t> decoded_alone(Decoder& d, const ServerRequest& q) {
  d.reset(1, q.prompt.size(1) + q.output_len);
  std::vector<int64_t> out;
  auto next = d.append(q.prompt).argmax(-1).view({1, 1});
  out.push_back(next.item<int64_t>());
  while (static_cast<int64_t>(out.size()) < q.output_len) {
    next = d.append(next).argmax(-1).view({1, 1});
    out.push_back(next.item<int64_t>());
  }
  return out;
}

TEST(ServerBatching, EveryRequestGetsTheTokensItGetsAlone) {
  c10::InferenceMode im;
  auto model = tiny_gpt();
  auto single = make_gpt_decoder(*model, torch::kFloat);
  auto slots = make_gpt_slot_decoder(*model, torch::kFloat);
  PassClock pc;
  CountedSlots counted(*slots, pc);
  counted.reset_slots(3, 48);
  const auto reqs = mixed_requests();
  auto gen = at::detail::createCPUGenerator(0);
  const auto done = serve_continuous(counted, reqs, greedy_options(3), gen, pc.clock());
  ASSERT_EQ(done.taken, reqs.size());
  for (size_t i = 0; i < reqs.size(); ++i) {
    EXPECT_EQ(done.tokens[i], decoded_alone(*single, reqs[i])) << "request " << i;
    ASSERT_EQ(static_cast<int64_t>(done.timing[i].token_s.size()), reqs[i].output_len);
    EXPECT_GT(done.timing[i].token_s.front(), reqs[i].arrival_s) << "first token after the arrival";
  }
  // Batching happened, slots were reused, and the gathered path ran (slots without slot 0).
  int64_t alone_steps = 0;
  for (const auto& q : reqs) alone_steps += q.output_len - 1;
  EXPECT_EQ(done.decode_rows, alone_steps);
  EXPECT_LT(done.decode_steps, alone_steps);
  std::set<std::vector<int64_t>> patterns(counted.steps.begin(), counted.steps.end());
  EXPECT_TRUE(patterns.count({1, 2})) << "a step of slots 1 and 2 alone";
  EXPECT_TRUE(patterns.count({0, 1, 2})) << "a full running batch";
  for (const auto& s : counted.steps) EXPECT_LE(s.size(), 3u);
}

TEST(ServerBatching, MaxBatchOneIsFirstComeFirstServed) {
  c10::InferenceMode im;
  auto model = tiny_gpt();
  auto single = make_gpt_decoder(*model, torch::kFloat);
  auto slots = make_gpt_slot_decoder(*model, torch::kFloat);
  const auto reqs = mixed_requests();
  PassClock a, b;
  CountedSlots counted(*slots, a);
  counted.reset_slots(1, 48);
  CountedDecoder fcfs(*single, b);
  auto gen_a = at::detail::createCPUGenerator(0), gen_b = at::detail::createCPUGenerator(0);
  const auto cont = serve_continuous(counted, reqs, greedy_options(1), gen_a, a.clock());
  const auto first = serve_fcfs(fcfs, reqs, greedy_options(1), gen_b, b.clock());
  EXPECT_EQ(cont.tokens, first.tokens);
  EXPECT_EQ(cont.decode_steps, first.decode_steps);
  for (size_t i = 0; i < reqs.size(); ++i)
    EXPECT_EQ(cont.timing[i].token_s, first.timing[i].token_s) << "request " << i << ": the same schedule";
}

// Through the scenario on the host's clock: every request served, the record says how.
TEST(ServerBatching, ScenarioRecordsBatchingAndLengths) {
  auto model = tiny_gpt();
  auto single = make_gpt_decoder(*model, torch::kFloat);
  auto slots = make_gpt_slot_decoder(*model, torch::kFloat);
  GenerationOptions o;
  o.pp = {}, o.tg = {}, o.sweep = false;
  o.server_rates = {1000};
  o.prompt_len = 6, o.output_len = 5;
  o.min_requests = 12, o.server_budget_s = 0.001;
  o.server_max_batch = 4;
  auto g = measure_generation(*single, torch::arange(0, 200, torch::kLong), o, {}, {}, slots.get());
  ASSERT_TRUE(g.server);
  const auto& r = g.server->runs.at(0);
  EXPECT_EQ(r.batching, "continuous");
  EXPECT_EQ(r.max_batch, 4);
  EXPECT_EQ(r.requests_served, 12);
  EXPECT_EQ(r.output_tokens, 60);
  ASSERT_TRUE(r.mean_running_batch);
  EXPECT_GE(*r.mean_running_batch, 1.0);
  EXPECT_LE(*r.mean_running_batch, 4.0);
  EXPECT_EQ(r.lengths, "fixed");
  EXPECT_EQ(r.prompt_lengths.p99, 6.0);
  EXPECT_EQ(r.output_lengths.min, 5);
  EXPECT_NE(g.server->worker.find("continuous batching"), std::string::npos) << g.server->worker;
  // the fields survive inference.json's write and read (compare and history read them back)
  const auto back = generation_section_from_json(generation_section_json(g));
  const auto& b = back.server->runs.at(0);
  EXPECT_EQ(b.batching, "continuous");
  EXPECT_EQ(b.max_batch, 4);
  EXPECT_EQ(b.mean_running_batch, r.mean_running_batch);
  EXPECT_EQ(b.decode_steps, r.decode_steps);
  EXPECT_EQ(b.lengths, "fixed");
  EXPECT_EQ(b.prompt_lengths.mean, 6.0);
  EXPECT_EQ(b.output_lengths.max, 5);
  // fcfs asked for: the slot decoder is left alone
  o.server_batching = "fcfs";
  g = measure_generation(*single, torch::arange(0, 200, torch::kLong), o, {}, {}, slots.get());
  EXPECT_EQ(g.server->runs.at(0).batching, "fcfs");
  EXPECT_EQ(g.server->runs.at(0).mean_running_batch, 1.0);
  // no slot decoder (a TorchScript LM): fcfs, and the worker says why
  o.server_batching = "continuous";
  g = measure_generation(*single, torch::arange(0, 200, torch::kLong), o);
  EXPECT_EQ(g.server->runs.at(0).batching, "fcfs");
  EXPECT_NE(g.server->worker.find("needs the built-in GPT's slot decoder"), std::string::npos) << g.server->worker;
}

TEST(ServerLengths, DistributionIsMeanTypeSevenPercentilesAndRange) {
  const auto t = token_lengths({10, 1, 4, 7});  // sorted 1 4 7 10
  EXPECT_EQ(t.mean, 5.5);
  EXPECT_DOUBLE_EQ(*t.p50, 5.5);         // type 7: 4 + 0.5 x (7 - 4)
  EXPECT_DOUBLE_EQ(*t.p99, 7 + 0.97 * 3);  // rank 0.99 x 3 = 2.97
  EXPECT_EQ(t.min, 1);
  EXPECT_EQ(t.max, 10);
  EXPECT_FALSE(token_lengths({}).mean);
}

// Byte text: "\n\n" ends a paragraph; several blank lines make one boundary.
torch::Tensor bytes(const std::string& s) {
  std::vector<int64_t> v(s.begin(), s.end());
  return torch::tensor(v, torch::kLong);
}

TEST(ServerLengths, PromptIsTheParagraphBeforeABoundaryOutputTheOneAfter) {
  // paragraph boundaries at 7 (after "head.\n\n"), 21 (after three newlines), 27 and 39
  const std::string text = "head.\n\nfirst para.\n\n\nsec.\n\nthird one.\n\nend";
  const auto t = bytes(text);
  const std::vector<int64_t> brk = {'\n', '\n'};
  const auto spans = server_text_spans(t, brk, 200, 100, 100, 48, 9);
  std::set<int64_t> starts;
  for (const auto& s : spans) {
    const std::string prompt = text.substr(static_cast<size_t>(s.prompt_start), static_cast<size_t>(s.prompt_len));
    const size_t end = static_cast<size_t>(s.prompt_start + s.prompt_len);
    EXPECT_TRUE(prompt == "first para.\n\n\n" || prompt == "sec.\n\n") << prompt;
    const size_t next = text.find("\n\n", end) + 2;  // the paragraph after, with its break
    EXPECT_EQ(s.output_len, static_cast<int64_t>(next - end)) << prompt;
    starts.insert(s.prompt_start);
  }
  EXPECT_EQ(starts.size(), 2u) << "both inner boundaries drawn";
  // seeded: the same seed, the same spans; bounds clip prompt (its last tokens) and output
  const auto again = server_text_spans(t, brk, 200, 100, 100, 48, 9);
  for (size_t i = 0; i < spans.size(); ++i) EXPECT_EQ(again[i].prompt_start, spans[i].prompt_start);
  for (const auto& s : server_text_spans(t, brk, 50, 4, 3, 48, 1)) {
    EXPECT_LE(s.prompt_len, 4);
    EXPECT_LE(s.output_len, 3);
    EXPECT_TRUE(s.prompt_start + s.prompt_len == 21 || s.prompt_start + s.prompt_len == 27);
  }
  for (const auto& s : server_text_spans(t, brk, 50, 100, 100, 16, 1)) EXPECT_LE(s.prompt_len + s.output_len, 16);
}

TEST(ServerLengths, RequestsAndRecordCarryTheTextLengths) {
  std::string text;
  for (int i = 0; i < 40; ++i) text += std::string(static_cast<size_t>(3 + (i * 7) % 11), 'a' + static_cast<char>(i % 26)) + "\n\n";
  GenerationOptions o;
  o.server_lengths = "text";
  o.paragraph_break = {'\n', '\n'};
  o.prompt_len = 10, o.output_len = 12;
  const auto reqs = server_requests(bytes(text), o, 5, 30, 3, torch::kCPU);
  ASSERT_EQ(reqs.size(), 30u);
  std::set<int64_t> prompt_lens;
  for (const auto& q : reqs) {
    const int64_t p = q.prompt.size(1);
    prompt_lens.insert(p);
    EXPECT_EQ(q.prompt[0][p - 1].item<int64_t>(), '\n') << "the prompt ends at a paragraph break";
    EXPECT_LE(p, 10);
    EXPECT_GE(q.output_len, 1);
    EXPECT_LE(q.output_len, 12);
  }
  EXPECT_GT(prompt_lens.size(), 1u) << "lengths vary with the text";
}

TEST(ServerLengths, BadInputsNameTheFlag) {
  auto expect_bad = [](const std::function<void()>& f, const std::string& text) {
    try {
      f();
      ADD_FAILURE() << "accepted: " << text;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    }
  };
  const auto t = bytes("one\n\ntwo\n\nthree");
  expect_bad([&] { server_text_spans(t, {}, 1, 8, 8, 40, 1); }, "--server-lengths text");
  expect_bad([&] { server_text_spans(t, {'\n', '\n'}, 1, 8, 8, 40, 1); }, "2 paragraph boundaries");
  auto o = GenerationOptions{};
  o.pp = {4}, o.tg = {};
  o.server_batching = "batched";
  expect_bad([&] { check_generation_options(o, 40); }, "--server-batching batched");
  o = GenerationOptions{};
  o.server_max_batch = 0;
  expect_bad([&] { check_generation_options(o, 1024); }, "--server-max-batch 0");
  o = GenerationOptions{};
  o.server_lengths = "random";
  expect_bad([&] { check_generation_options(o, 1024); }, "--server-lengths random");
}

}  // namespace
}  // namespace trainscope
