#include "train/batch_source.h"

#include <fmt/format.h>
#include <sys/resource.h>

#include <chrono>
#include <cstring>
#include <numeric>
#include <thread>

#include "data/stream_defaults.h"
#include "trainscope/cpu_budget.h"
#include "trainscope/error.h"
#include "trainscope/provenance.h"

namespace trainscope {

namespace {

using Clock = std::chrono::steady_clock;

double process_cpu_s() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  auto tv = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6; };
  return tv(ru.ru_utime) + tv(ru.ru_stime);
}

// What both sources record: mode, reason, cores, the process' CPU since the source was made.
class SourceBase : public BatchSource {
 protected:
  explicit SourceBase(const Workload& w) : w_(w), cpu0_(process_cpu_s()), t0_(Clock::now()) {}
  InputPipelineSection base(double loader_cpu_s) const {
    InputPipelineSection p;
    p.mode = w_.data.stream ? "stream" : "memory";
    p.cache_reason = w_.data.cache_reason.empty() ? fmt::format("{} data sets are decoded into memory", w_.data.format)
                                                  : w_.data.cache_reason;
    if (w_.data.stream) {
      p.decoded_bytes = w_.data.stream->decoded_bytes;
      p.budget_bytes = w_.data.stream->budget_bytes;
    }
    p.cores = usable_cpus();
    p.intra_op_threads = at::get_num_threads();
    const double wall = std::chrono::duration<double>(Clock::now() - t0_).count();
    if (wall > 0) p.trainer_cpu_pct = 100.0 * std::max(0.0, process_cpu_s() - cpu0_ - loader_cpu_s) / wall;
    return p;
  }
  const Workload& w_;

 private:
  double cpu0_;
  Clock::time_point t0_;
};

// Assembles a batch by copying whole samples into the (pinned) staging buffer. A plain
// memcpy per sample: at::index_select would fan out to every intra-op thread, and waking 32
// idle OpenMP threads costs a GPU step more than the copy (bench/RESULTS.md, "Figures the code's choices rest on").
class MemorySource : public SourceBase {
 public:
  MemorySource(const Workload& w, int64_t B, bool pinned, int staging) : SourceBase(w) {
    const auto& tr = w.data.train;
    for (int k = 0; k < staging; ++k) {
      x_.push_back(torch::empty({B, tr.channels, tr.height, tr.width}, torch::TensorOptions().dtype(torch::kFloat).pinned_memory(pinned)));
      y_.push_back(torch::empty({B}, torch::TensorOptions().dtype(torch::kLong).pinned_memory(pinned)));
    }
  }
  void begin_epoch(int64_t, const int64_t*, int64_t) override {}
  std::pair<torch::Tensor, torch::Tensor> next(int64_t s, const int64_t* idx, int64_t m) override {
    const auto k = static_cast<size_t>(s % static_cast<int64_t>(x_.size()));
    auto bx = x_[k].narrow(0, 0, m), by = y_[k].narrow(0, 0, m);
    const int64_t numel = w_.data.train.sample_numel();
    const float* src = w_.data.train.images.data();
    const int64_t* labels = w_.data.train.labels.data();
    float* dst = bx.data_ptr<float>();
    int64_t* dl = by.data_ptr<int64_t>();
    for (int64_t i = 0; i < m; ++i) {
      std::memcpy(dst + i * numel, src + idx[i] * numel, static_cast<size_t>(numel) * sizeof(float));
      dl[i] = labels[idx[i]];
    }
    return {bx, by};
  }
  InputPipelineSection section() const override { return base(0); }

 private:
  std::vector<torch::Tensor> x_, y_;
};

// A language-model set: window i is tokens[i*T, i*T+T), its targets the same shifted by one
// (trainscope/dataset.h); two memcpy per sample into the (pinned) staging buffers.
class TokenSource : public SourceBase {
 public:
  TokenSource(const Workload& w, int64_t B, bool pinned, int staging) : SourceBase(w) {
    const int64_t T = w.data.train.width;
    for (int k = 0; k < staging; ++k) {
      x_.push_back(torch::empty({B, T}, torch::TensorOptions().dtype(torch::kLong).pinned_memory(pinned)));
      y_.push_back(torch::empty({B, T}, torch::TensorOptions().dtype(torch::kLong).pinned_memory(pinned)));
    }
  }
  void begin_epoch(int64_t, const int64_t*, int64_t) override {}
  std::pair<torch::Tensor, torch::Tensor> next(int64_t s, const int64_t* idx, int64_t m) override {
    const auto k = static_cast<size_t>(s % static_cast<int64_t>(x_.size()));
    auto bx = x_[k].narrow(0, 0, m), by = y_[k].narrow(0, 0, m);
    const int64_t T = w_.data.train.width;
    const int64_t* src = w_.data.train.tokens.data();
    int64_t* dx = bx.data_ptr<int64_t>();
    int64_t* dy = by.data_ptr<int64_t>();
    for (int64_t i = 0; i < m; ++i) {
      std::memcpy(dx + i * T, src + idx[i] * T, static_cast<size_t>(T) * sizeof(int64_t));
      std::memcpy(dy + i * T, src + idx[i] * T + 1, static_cast<size_t>(T) * sizeof(int64_t));
    }
    return {bx, by};
  }
  InputPipelineSection section() const override { return base(0); }

 private:
  std::vector<torch::Tensor> x_, y_;
};

class StreamSource : public SourceBase {
 public:
  StreamSource(const Workload& w, int64_t B, bool pinned, int staging, uint64_t seed);
  void begin_epoch(int64_t epoch, const int64_t* perm, int64_t n) override {
    if (epoch > 1)
      if (auto c = stream_->folder_changes(w_.data.stream->root); !c.empty() && changes_.size() < 8)
        changes_.push_back(fmt::format("before epoch {}: {}", epoch, c));
    stream_->begin_epoch(epoch, std::vector<int64_t>(perm, perm + n));
  }
  std::pair<torch::Tensor, torch::Tensor> next(int64_t s, const int64_t*, int64_t) override {
    const StreamBatch b = stream_->next();
    if (b.count == 0)
      throw_error(ErrorKind::kDataFormat,
                  fmt::format("every image of training batch {} was bad and skipped (the first problems: {}); fix the "
                              "images under '{}'",
                              s, fmt::join(stream_->stats().problems, "; "), w_.data.stream->root));
    const auto k = static_cast<size_t>(b.slot);
    return {x_[k].narrow(0, 0, b.count), y_[k].narrow(0, 0, b.count)};
  }
  InputPipelineSection section() const override;

 private:
  std::vector<torch::Tensor> x_, y_;
  std::unique_ptr<ImageStream> stream_;
  std::string workers_reason_;
  std::vector<std::string> changes_;
};

StreamSource::StreamSource(const Workload& w, int64_t B, bool pinned, int staging, uint64_t seed) : SourceBase(w) {
  const StreamPlan& plan = *w.data.stream;
  StreamOptions opt;
  opt.workers = plan.workers;
  if (opt.workers > 0) workers_reason_ = "--data-workers / data.data_workers";
  else opt.workers = default_data_workers(usable_cpus(), at::get_num_threads(),
                                          &workers_reason_);
  opt.prefetch_batches = plan.prefetch_batches > 0 ? plan.prefetch_batches : default_prefetch_batches(opt.workers, B);
  opt.hold_batches = staging;
  opt.batch_size = B;
  opt.skip_bad_images = plan.skip_bad_images;
  opt.transform = plan.transform;
  opt.seed = seed;
  const auto& tr = w.data.train;
  std::vector<BatchSlot> slots;
  for (int64_t k = 0; k < opt.prefetch_batches + opt.hold_batches; ++k) {
    x_.push_back(torch::empty({B, tr.channels, tr.height, tr.width}, torch::TensorOptions().dtype(torch::kFloat).pinned_memory(pinned)));
    y_.push_back(torch::empty({B}, torch::TensorOptions().dtype(torch::kLong).pinned_memory(pinned)));
    slots.push_back({x_.back().data_ptr<float>(), y_.back().data_ptr<int64_t>()});
  }
  stream_ = std::make_unique<ImageStream>(plan.files, opt, std::move(slots));
}

InputPipelineSection StreamSource::section() const {
  const StreamStats st = stream_->stats();
  const double loader_cpu = std::accumulate(st.worker_cpu_s.begin(), st.worker_cpu_s.end(), 0.0);
  InputPipelineSection p = base(loader_cpu);
  p.workers = st.workers;
  p.workers_reason = workers_reason_;
  p.augment = to_string(w_.data.stream->transform.augment);
  p.prefetch_batches = st.prefetch_batches;
  p.queue_max_depth = st.max_depth;
  p.queue_depth_t_s = st.depth_t_s;
  p.queue_depth = st.depth;
  if (!st.depth.empty())
    p.queue_depth_mean = static_cast<double>(std::accumulate(st.depth.begin(), st.depth.end(), int64_t{0})) /
                         static_cast<double>(st.depth.size());
  p.images_decoded = st.images;
  p.bad_images = st.bad_images;
  p.changed_files = st.changed_files;
  p.problems = st.problems;
  p.problems.insert(p.problems.end(), changes_.begin(), changes_.end());
  p.wall_s = st.wall_s;
  const double busy = std::accumulate(st.worker_busy_s.begin(), st.worker_busy_s.end(), 0.0);
  p.worker_busy_s = busy;
  if (st.wall_s > 0 && st.workers > 0) {
    p.worker_busy_pct = 100.0 * busy / (st.wall_s * static_cast<double>(st.workers));
    p.loader_cpu_pct = 100.0 * loader_cpu / st.wall_s;
  }
  if (busy > 0) p.decode_per_s_per_worker = static_cast<double>(st.images) / busy;
  p.data_wait_s = st.wait_s;
  return p;
}

}  // namespace

std::unique_ptr<BatchSource> make_batch_source(const Workload& w, int64_t batch_size, bool pinned, int staging,
                                               uint64_t seed) {
  if (w.data.stream) return std::make_unique<StreamSource>(w, batch_size, pinned, staging, seed);
  if (w.data.train.is_tokens()) return std::make_unique<TokenSource>(w, batch_size, pinned, staging);
  return std::make_unique<MemorySource>(w, batch_size, pinned, staging);
}

}  // namespace trainscope
