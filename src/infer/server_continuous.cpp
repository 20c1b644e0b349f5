// Continuous batching of the server scenario (serve_continuous, src/infer/generate.h):
// iteration-level scheduling (Orca, Yu et al., OSDI 2022) on a SlotDecoder.
//
// The loop, until every request is done or Ctrl-C:
//   1. admit: while a slot is free and the next request has arrived, it takes the lowest free
//      slot and is prefilled alone; its first token is selected and read back (TTFT's end). A
//      request of one output token is done there. The clock may refuse a request (the rate's time
//      cap): then nothing more is admitted and the running requests are finished.
//   2. nothing running: wait for the next arrival (or end when none is left to admit).
//   3. step: one step() of every running request (ordered by slot, so slots 0..n-1 take the
//      decoder's view path), each next token selected, read back to the host in one copy and
//      timed; the requests that have their output length leave and free their slots.
// Every token of one step is on the host at the same moment, so they share one time stamp.
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "infer/generate.h"
#include "trainscope/error.h"

namespace trainscope {

namespace {

bool stop_now(const GenerationOptions& o) { return o.stop_requested && o.stop_requested->load(); }

struct Running {
  size_t request = 0;
  int64_t slot = 0;
  torch::Tensor last;  // its last token [1, 1] on the decoder's device
};

class Scheduler {
 public:
  Scheduler(SlotDecoder& dec, const std::vector<ServerRequest>& reqs, const GenerationOptions& o, at::Generator& gen,
            const ServerClock& clock)
      : dec_(dec), reqs_(reqs), o_(o), gen_(gen), clock_(clock) {
    out_.timing.resize(reqs.size());
    out_.tokens.resize(reqs.size());
    for (size_t i = 0; i < reqs.size(); ++i) out_.timing[i].arrival_s = reqs[i].arrival_s;
    for (int64_t s = 0; s < dec.slots(); ++s) free_.insert(s);
  }

  ServedRequests run() {
    while (!stop_now(o_)) {
      admit();
      if (running_.empty()) {
        if (!admitting_ || out_.taken >= reqs_.size()) break;
        if (!clock_.wait_until(reqs_[out_.taken].arrival_s)) admitting_ = false;
        continue;
      }
      step();
    }
    return std::move(out_);
  }

 private:
  void admit() {
    while (admitting_ && !free_.empty() && out_.taken < reqs_.size() && !stop_now(o_) &&
           reqs_[out_.taken].arrival_s <= clock_.now_s()) {
      if (!clock_.wait_until(reqs_[out_.taken].arrival_s)) {  // the arrival is past: checks the cap only
        admitting_ = false;
        return;
      }
      const size_t i = out_.taken++;
      const int64_t slot = *free_.begin();
      free_.erase(free_.begin());
      auto next = select_tokens(dec_.prefill(slot, reqs_[i].prompt), o_.sampling, gen_);
      record(i, next.cpu().item<int64_t>(), clock_.now_s());
      if (reqs_[i].output_len > 1)
        running_.push_back({i, slot, next});
      else
        free_.insert(slot);
    }
  }

  void step() {
    std::sort(running_.begin(), running_.end(), [](const Running& a, const Running& b) { return a.slot < b.slot; });
    std::vector<int64_t> slots;
    std::vector<torch::Tensor> last;
    for (const auto& r : running_) slots.push_back(r.slot), last.push_back(r.last);
    auto next = select_tokens(dec_.step(slots, torch::cat(last, 0)), o_.sampling, gen_);
    auto host = next.cpu();  // every row's token on the host in one copy
    const double t = clock_.now_s();
    ++out_.decode_steps;
    out_.decode_rows += static_cast<int64_t>(running_.size());
    std::vector<Running> still;
    for (size_t k = 0; k < running_.size(); ++k) {
      auto& r = running_[k];
      record(r.request, host[static_cast<int64_t>(k)][0].item<int64_t>(), t);
      r.last = next.narrow(0, static_cast<int64_t>(k), 1);
      if (static_cast<int64_t>(out_.tokens[r.request].size()) < reqs_[r.request].output_len)
        still.push_back(r);
      else
        free_.insert(r.slot);
    }
    running_ = std::move(still);
  }

  void record(size_t request, int64_t token, double t) {
    out_.tokens[request].push_back(token);
    out_.timing[request].token_s.push_back(t);
  }

  SlotDecoder& dec_;
  const std::vector<ServerRequest>& reqs_;
  const GenerationOptions& o_;
  at::Generator& gen_;
  const ServerClock& clock_;
  ServedRequests out_;
  std::set<int64_t> free_;
  std::vector<Running> running_;
  bool admitting_ = true;
};

}  // namespace

ServedRequests serve_continuous(SlotDecoder& dec, const std::vector<ServerRequest>& reqs, const GenerationOptions& o,
                                at::Generator& gen, const ServerClock& clock) {
  if (dec.slots() < 1)
    throw_error(ErrorKind::kModel, "continuous batching: the slot decoder has no slots; call reset_slots() first");
  return Scheduler(dec, reqs, o, gen, clock).run();
}

}  // namespace trainscope
