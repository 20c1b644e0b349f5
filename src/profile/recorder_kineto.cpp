// Kineto recorder (LibTorch 2.x with CUDA): the PyTorch profiler's C++ entry points
// (torch/csrc/autograd/profiler_kineto.h). Only compiled when TRAINSCOPE_WITH_CUDA.
// Kineto timestamps are Unix-epoch nanoseconds (c10 approximate clock converted to wall time);
// they are moved onto the matrix clock with an offset measured when the window opens.
#ifdef TRAINSCOPE_WITH_CUDA
#include <ATen/record_function.h>
#include <fmt/format.h>
#include <torch/csrc/autograd/profiler_kineto.h>

#include <chrono>
#include <set>
#include <unordered_map>

#include "profile/recorder.h"
#include "trainscope/fs.h"

namespace trainscope::profile {

namespace {

namespace tap = torch::autograd::profiler;
namespace tpi = torch::profiler::impl;
using Clock = std::chrono::steady_clock;

class KinetoRecorder final : public Recorder {
 public:
  KinetoRecorder(const ProfileConfig& c, const std::string& device, Clock::time_point origin)
      : cfg_(c), cuda_(device.rfind("cuda", 0) == 0), origin_(origin) {}
  ~KinetoRecorder() override {
    step_end();
    if (enabled_) {
      try {
        tap::disableProfiler();
      } catch (...) {
      }
    }
  }

  void warmup() override {
    if (prepared_ || enabled_) return;
    tap::prepareProfiler(config(), activities());
    prepared_ = true;
  }
  void activate() override {
    if (enabled_) return;
    if (!prepared_) warmup();
    // Offset between Kineto's wall-clock nanoseconds and the matrix clock.
    auto sys = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    auto mono = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - origin_).count();
    unix_origin_ns_ = sys - mono;
    tap::enableProfiler(config(), activities(), {});
    enabled_ = true;
  }
  std::string deactivate(ProfileData& out) override {
    step_end();
    if (!enabled_) {
      prepared_ = false;
      return {};
    }
    enabled_ = false;
    prepared_ = false;
    std::unique_ptr<tap::ProfilerResult> result = tap::disableProfiler();
    if (!result) return "Kineto returned no result for the window";
    std::unordered_map<uint64_t, uint64_t> op_tid;  // correlation -> thread of the op
    for (const auto& e : result->events())
      if (e.deviceType() == c10::DeviceType::CPU && e.linkedCorrelationId() == 0)
        op_tid[e.correlationId()] = e.startThreadId();
    for (const auto& e : result->events()) {
      const std::string name = e.name();
      const int64_t t0 = static_cast<int64_t>(e.startNs()) - unix_origin_ns_;
      const int64_t t1 = t0 + static_cast<int64_t>(e.durationNs());
      if (name == "[memory]") {
        out.mem_events.push_back({t0, e.startThreadId(), static_cast<int64_t>(e.nBytes()),
                                  c10::Device(e.deviceType(), static_cast<c10::DeviceIndex>(std::max(0, static_cast<int>(e.deviceIndex())))).str()});
        continue;
      }
      if (name == "[OutOfMemory]" || name.rfind("ProfilerStep#", 0) == 0) continue;
      if (e.deviceType() == c10::DeviceType::CUDA) {
        DeviceEvent d;
        d.name = name;
        d.t0_ns = t0;
        d.t1_ns = t1;
        d.device = static_cast<int>(e.deviceIndex());
        d.stream = static_cast<int64_t>(e.deviceResourceId());
        d.linked = static_cast<int64_t>(e.linkedCorrelationId());
        d.correlation = static_cast<int64_t>(e.correlationId());  // the launching runtime call's
        d.bytes = static_cast<int64_t>(e.nBytes());
        out.device_events.push_back(std::move(d));
        continue;
      }
      OpEvent o;
      o.name = name;
      o.t0_ns = t0;
      o.t1_ns = t1;
      o.tid = e.startThreadId();
      o.flops = static_cast<double>(e.flops());
      o.correlation = static_cast<int64_t>(e.correlationId());
      o.linked = static_cast<int64_t>(e.linkedCorrelationId());
      if (o.linked != 0) {  // CUDA runtime call: show it on the thread of the op that made it
        o.category = "cuda_runtime";
        auto it = op_tid.find(e.linkedCorrelationId());
        if (it != op_tid.end()) o.tid = it->second;
      }
      if (e.hasShapes()) {
        std::string s = "[";
        bool first = true;
        for (const auto& sh : e.shapes()) {
          s += first ? "[" : ", [";
          first = false;
          for (size_t i = 0; i < sh.size(); ++i) s += (i ? ", " : "") + std::to_string(sh[i]);
          s += "]";
        }
        o.shapes = s + "]";
      }
      out.ops.push_back(std::move(o));
    }
    results_.push_back(std::move(result));
    return {};
  }
  uint64_t current_tid() const override { return at::RecordFunction::currentThreadId(); }
  const char* backend() const override { return "kineto"; }

  std::vector<std::string> save_native(const std::string& stem, std::string* warning) override {
    std::vector<std::string> files;
    for (size_t i = 0; i < results_.size(); ++i) {
      std::string p = results_.size() == 1 ? stem + ".pt.trace.json" : fmt::format("{}.{}.pt.trace.json", stem, i);
      try {
        // Kineto writes the file by path, once: to a temporary on the disk, renamed when complete
        // (trainscope/fs.h; the memfd route fails on PyTorch 2.11 and a second save throws).
        write_file_through_disk_temporary(p, [&](const std::string& tmp) { results_[i]->save(tmp); });
        files.push_back(p);
      } catch (const std::exception& e) {
        if (warning) *warning = fmt::format("Kineto trace {} not written: {}", p, e.what());
      }
    }
    return files;
  }

  // ProfilerStep#N as a user-scope RecordFunction, as torch.profiler marks steps (HTA and
  // TensorBoard split the trace on it).
  void step_begin(int64_t step) override {
    step_end();
    if (!enabled_) return;
    step_rf_ = std::make_unique<at::RecordFunction>(at::RecordScope::USER_SCOPE);
    if (step_rf_->isActive()) step_rf_->before(fmt::format("ProfilerStep#{}", step));
  }
  void step_end() override {
    if (step_rf_) {
      step_rf_->end();
      step_rf_.reset();
    }
  }

 private:
  tpi::ProfilerConfig config() const {
    return tpi::ProfilerConfig(tpi::ProfilerState::KINETO, cfg_.record_shapes, cfg_.profile_memory,
                               /*with_stack=*/false, cfg_.with_flops, /*with_modules=*/false);
  }
  std::set<tpi::ActivityType> activities() const {
    std::set<tpi::ActivityType> a{tpi::ActivityType::CPU};
    if (cuda_) a.insert(tpi::ActivityType::CUDA);
    return a;
  }
  ProfileConfig cfg_;
  bool cuda_;
  Clock::time_point origin_;
  int64_t unix_origin_ns_ = 0;
  bool prepared_ = false, enabled_ = false;
  std::unique_ptr<at::RecordFunction> step_rf_;
  std::vector<std::unique_ptr<tap::ProfilerResult>> results_;
};

}  // namespace

std::unique_ptr<Recorder> make_kineto_recorder(const ProfileConfig& c, const std::string& device, Clock::time_point origin) {
  return std::make_unique<KinetoRecorder>(c, device, origin);
}

}  // namespace trainscope::profile
#endif  // TRAINSCOPE_WITH_CUDA
