#include "train/trainer.h"

#include <algorithm>
#include <fmt/format.h>
#include <sys/resource.h>

#include <cmath>
#include <cstring>
#include <fstream>

#include "train/compat.h"
#include "train/device.h"
#include "train/optimizer.h"
#include "trainscope/error.h"

namespace trainscope {

using Clock = std::chrono::steady_clock;

namespace {

int64_t ns_since(Clock::time_point origin, Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t - origin).count();
}
double seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

// Peak RSS of this process since the last reset_peak_rss() (Linux: VmHWM in /proc/self/status).
std::optional<int64_t> peak_rss_bytes() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  return std::nullopt;
}

// Writing "5" to clear_refs resets VmHWM to the current RSS (Linux >= 4.0, proc(5)).
bool reset_peak_rss() {
  std::ofstream f("/proc/self/clear_refs");
  if (!f) return false;
  f << "5";
  return static_cast<bool>(f.flush());
}

// Assembles a batch by copying whole samples into the (pinned) staging buffer. A plain
// memcpy per sample: at::index_select would fan out to every intra-op thread, and waking 32
// idle OpenMP threads costs ~0.5 ms per step on a GPU host (measured: bench/RESULTS.md).
void gather_batch(const Workload& w, const int64_t* idx, int64_t m, torch::Tensor& bx, torch::Tensor& by) {
  const int64_t numel = w.data.train.sample_numel();
  const float* src = w.data.train.images.data();
  const int64_t* labels = w.data.train.labels.data();
  float* dst = bx.data_ptr<float>();
  int64_t* dl = by.data_ptr<int64_t>();
  for (int64_t i = 0; i < m; ++i) {
    std::memcpy(dst + i * numel, src + idx[i] * numel, static_cast<size_t>(numel) * sizeof(float));
    dl[i] = labels[idx[i]];
  }
}

// Number of staging buffers: the host may run this many steps ahead of the device.
constexpr int kStaging = 4;

}  // namespace

Workload make_workload(DatasetPair data) {
  Workload w;
  w.data = std::move(data);
  auto& tr = w.data.train;
  auto& te = w.data.test;
  w.train_x = torch::from_blob(tr.images.data(), {tr.count, tr.channels, tr.height, tr.width}, torch::kFloat);
  w.train_y = torch::from_blob(tr.labels.data(), {tr.count}, torch::kLong);
  w.test_x = torch::from_blob(te.images.data(), {te.count, te.channels, te.height, te.width}, torch::kFloat);
  w.test_y = torch::from_blob(te.labels.data(), {te.count}, torch::kLong);
  auto n = tr.name;
  auto pos = n.rfind(' ');
  w.dataset_name = pos == std::string::npos ? n : n.substr(0, pos);
  return w;
}

std::pair<double, double> evaluate(Model& model, const torch::Tensor& x, const torch::Tensor& y,
                                   const torch::Device& device, int64_t batch_size) {
  torch::NoGradGuard no_grad;
  model.set_training(false);
  int64_t n = x.size(0);
  auto correct = torch::zeros({}, torch::TensorOptions().dtype(torch::kLong).device(device));
  auto loss_sum = torch::zeros({}, torch::TensorOptions().dtype(torch::kDouble).device(device));
  for (int64_t s = 0; s < n; s += batch_size) {
    int64_t m = std::min(batch_size, n - s);
    auto bx = x.narrow(0, s, m).to(device);
    auto by = y.narrow(0, s, m).to(device);
    auto logits = model.forward(bx);
    correct += logits.argmax(1).eq(by).sum();
    loss_sum += torch::nn::functional::cross_entropy(logits, by, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum)).to(torch::kDouble);
  }
  model.set_training(true);
  double acc = 100.0 * static_cast<double>(correct.item<int64_t>()) / static_cast<double>(n);
  return {acc, loss_sum.item<double>() / static_cast<double>(n)};
}

RunRecord train_run(const RunSpec& spec, const Workload& w, TrainHooks& hooks, RunRecord* partial) {
  RunRecord local;
  RunRecord& r = partial ? *partial : local;
  const auto& cfg = spec.train;
  const auto& tr = w.data.train;
  r.run_id = spec.run_id;
  r.device = spec.device;
  r.model = spec.model;
  r.batch_size = spec.batch_size;
  r.repeat = spec.repeat;
  r.status = RunStatus::kRunning;
  r.dataset = w.dataset_name;
  r.train_samples = tr.count;
  r.test_samples = w.data.test.count;
  r.input_shape = {tr.channels, tr.height, tr.width};
  r.num_classes = tr.num_classes;
  r.optimizer = cfg.optimizer;
  r.learning_rate = cfg.learning_rate;
  r.seed = cfg.seed;
  r.intra_op_threads = at::get_num_threads();
  r.epochs_requested = cfg.epochs;
  r.warmup_steps = cfg.warmup_steps;
  r.start_ns = ns_since(spec.origin, Clock::now());

  torch::Device dev(spec.device);
  const bool cuda = dev.is_cuda();
  // Same seed for every device and batch size, so runs start from the same weights.
  torch::manual_seed(cfg.seed);
  auto model = make_model(spec.model, tr.channels, tr.height, tr.width, tr.num_classes);
  r.parameters = model->parameter_count();
  try {
    r.forward_flops_per_sample = count_forward_flops(*model, tr.channels, tr.height, tr.width);
  } catch (const c10::Error& e) {
    throw_error(ErrorKind::kModel, fmt::format("model '{}' cannot take inputs of shape 1x{}x{}x{} from the data set: {}",
                                               spec.model, tr.channels, tr.height, tr.width,
                                               e.what_without_backtrace()));
  }
  if (!r.forward_flops_per_sample) r.notes.push_back("forward FLOPs: no convolution or matrix product operator seen");
  model->to(dev);
  model->set_training(true);

  auto opt = make_optimizer(cfg, model->parameters(), dev);
  r.optimizer_impl = opt->implementation();

  reset_device_memory_stats(dev);
  bool rss_reset = reset_peak_rss();

  const int64_t n = tr.count, B = spec.batch_size;
  const int64_t steps_per_epoch = (n + B - 1) / B;
  if (B > n)
    r.notes.push_back(fmt::format("batch size {} is larger than the training set ({} samples): every step trained on "
                                  "all {} samples",
                                  B, n, n));
  r.steps_per_epoch = steps_per_epoch;
  auto clock = make_phase_clock(dev, steps_per_epoch);

  // Pinned staging buffers (GPU) so host-to-device copies are asynchronous DMA transfers.
  auto fopt = torch::TensorOptions().dtype(torch::kFloat).pinned_memory(cuda);
  auto lopt = torch::TensorOptions().dtype(torch::kLong).pinned_memory(cuda);
  const int staging = cuda ? kStaging : 1;
  std::vector<torch::Tensor> host_x, host_y;
  for (int k = 0; k < staging; ++k) {
    host_x.push_back(torch::empty({B, tr.channels, tr.height, tr.width}, fopt));
    host_y.push_back(torch::empty({B}, lopt));
  }
  torch::Generator gen = at::detail::createCPUGenerator(cfg.seed + 1);

  PhaseBreakdown ph;
  ph.method = clock->method();
  int64_t global_step = 0;
  double steady_time = 0;
  int64_t steady_samples = 0;
  double train_time = 0, eval_time_total = 0;
  Clock::time_point warm_mark{};
  bool warm = cfg.warmup_steps == 0;
  bool stop = false;
  const auto train_start = Clock::now();
  if (warm) {
    device_synchronize(dev);
    warm_mark = Clock::now();
  }

  for (int64_t epoch = 1; epoch <= cfg.epochs && !stop; ++epoch) {
    if (hooks.progress)
      hooks.progress->begin(fmt::format("{} {} b{} epoch {}/{}", spec.device, spec.model, B, epoch, cfg.epochs),
                            steps_per_epoch);
    auto perm = torch::randperm(n, gen, torch::TensorOptions().dtype(torch::kLong));
    const int64_t* perm_ptr = perm.data_ptr<int64_t>();
    auto loss_sum = torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat).device(dev));
    auto correct = torch::zeros({}, torch::TensorOptions().dtype(torch::kLong).device(dev));
    std::vector<double> host_data_ms(static_cast<size_t>(steps_per_epoch), 0.0), host_step_ms(host_data_ms);
    std::vector<char> counted(static_cast<size_t>(steps_per_epoch), 0);
    int64_t steps_this_epoch = 0, samples_this_epoch = 0, steady_samples_epoch = 0;
    const auto epoch_start = Clock::now();
    for (int64_t s = 0; s < steps_per_epoch; ++s) {
      const auto t0 = Clock::now();
      if (hooks.on_step_begin) hooks.on_step_begin(global_step);
      const int64_t m = std::min(B, n - s * B);
      const int k = static_cast<int>(s % staging);
      if (cuda && s >= staging) clock->wait(s - staging, 1);  // that buffer's copy has finished
      auto bx = host_x[static_cast<size_t>(k)].narrow(0, 0, m);
      auto by = host_y[static_cast<size_t>(k)].narrow(0, 0, m);
      gather_batch(w, perm_ptr + s * B, m, bx, by);
      const auto t_data = Clock::now();
      Clock::time_point hm[PhaseClock::kMarks];
      hm[0] = t_data;
      clock->mark(s, 0);
      auto x = cuda ? bx.to(dev, /*non_blocking=*/true) : bx;
      auto y = cuda ? by.to(dev, /*non_blocking=*/true) : by;
      clock->mark(s, 1);
      hm[1] = Clock::now();
      auto logits = model->forward(x);
      auto loss = torch::nn::functional::cross_entropy(logits, y);
      if (global_step == cfg.inject_nan_at_step) loss = loss * std::numeric_limits<float>::quiet_NaN();
      {
        torch::NoGradGuard ng;
        loss_sum += loss.detach() * static_cast<double>(m);
        correct += logits.detach().argmax(1).eq(y).sum();
      }
      clock->mark(s, 2);
      hm[2] = Clock::now();
      opt->zero_grad();
      loss.backward();
      clock->mark(s, 3);
      hm[3] = Clock::now();
      opt->step();
      clock->mark(s, 4);
      hm[4] = Clock::now();
      ++global_step;
      ++steps_this_epoch;
      samples_this_epoch += m;
      // NaN/Inf check: one host synchronisation every nan_check_interval steps.
      if (global_step % cfg.nan_check_interval == 0 || global_step == cfg.inject_nan_at_step + 1) {
        float lv = loss.item<float>();
        if (!std::isfinite(lv))
          throw_error(ErrorKind::kNumerical,
                      fmt::format("loss became {} at step {} (epoch {}); lower the learning rate (now {}) or check the "
                                  "data for NaN/Inf values",
                                  std::isnan(lv) ? "NaN" : "Inf", global_step - 1, epoch, cfg.learning_rate));
      }
      r.steps_completed = global_step;  // kept current: a run that fails mid-epoch says how far it got
      const auto t_end = Clock::now();
      if (warm) {
        counted[static_cast<size_t>(s)] = 1;
        steady_samples_epoch += m;
        host_data_ms[static_cast<size_t>(s)] = std::chrono::duration<double, std::milli>(t_data - t0).count();
        host_step_ms[static_cast<size_t>(s)] = std::chrono::duration<double, std::milli>(t_end - t0).count();
      }
      if (hooks.on_phase_span) {
        static const char* kPhase[] = {"h2d", "forward", "backward", "optimizer"};
        hooks.on_phase_span(global_step - 1, "data", ns_since(spec.origin, t0), ns_since(spec.origin, t_data));
        for (int k = 0; k < 4; ++k)
          hooks.on_phase_span(global_step - 1, kPhase[k], ns_since(spec.origin, hm[k]), ns_since(spec.origin, hm[k + 1]));
      }
      if (hooks.on_step_end) hooks.on_step_end(global_step - 1);
      if (!warm && global_step == cfg.warmup_steps) {
        device_synchronize(dev);  // once per run: the start of the steady-state window
        warm_mark = Clock::now();
        warm = true;
      }
      if (hooks.progress) hooks.progress->update(s + 1);
      if (cfg.max_steps > 0 && global_step >= cfg.max_steps) {
        r.stopped_early = global_step < steps_per_epoch * cfg.epochs;
        if (r.stopped_early) r.stop_reason = "max_steps";
        stop = true;
      }
      if (cfg.time_budget_s > 0 && seconds(train_start, Clock::now()) - eval_time_total >= cfg.time_budget_s) {
        r.stopped_early = !(epoch == cfg.epochs && s + 1 == steps_per_epoch);
        if (r.stopped_early) r.stop_reason = "time_budget";
        stop = true;
      }
      if (hooks.stop_requested && hooks.stop_requested->load()) {
        r.status = RunStatus::kInterrupted;
        r.test_accuracy_pct.reset();  // README: null for an interrupted run (its last epoch is not evaluated)
        r.stopped_early = true;
        r.stop_reason = "interrupted";
        r.error_kind = "interrupted";
        r.failure_reason = fmt::format("interrupted (SIGINT/SIGTERM) after step {} of epoch {}; what it measured is kept",
                                       global_step, epoch);
        stop = true;
      }
      if (stop) break;
    }
    device_synchronize(dev);
    const auto epoch_end = Clock::now();
    if (hooks.progress) hooks.progress->end();
    const double epoch_time = seconds(epoch_start, epoch_end);
    train_time += epoch_time;
    if (steady_samples_epoch > 0) {
      steady_samples += steady_samples_epoch;
      steady_time += seconds(std::max(epoch_start, warm_mark), epoch_end);
    }
    // Phase means over the counted (post-warm-up) steps of this epoch.
    clock->synchronize();
    for (int64_t s = 0; s < steps_this_epoch; ++s) {
      if (!counted[static_cast<size_t>(s)]) continue;
      ph.data_ms += host_data_ms[static_cast<size_t>(s)];
      ph.h2d_ms += clock->elapsed_ms(s, 0);
      ph.forward_ms += clock->elapsed_ms(s, 1);
      ph.backward_ms += clock->elapsed_ms(s, 2);
      ph.optimizer_ms += clock->elapsed_ms(s, 3);
      ph.step_ms += host_step_ms[static_cast<size_t>(s)];
      ++ph.steps;
    }
    EpochRecord er;
    er.epoch = epoch;
    er.steps = steps_this_epoch;
    er.samples = samples_this_epoch;
    er.train_loss = loss_sum.item<double>() / static_cast<double>(std::max<int64_t>(samples_this_epoch, 1));
    er.train_accuracy_pct =
        100.0 * static_cast<double>(correct.item<int64_t>()) / static_cast<double>(std::max<int64_t>(samples_this_epoch, 1));
    er.epoch_time_s = epoch_time;
    er.samples_per_s = epoch_time > 0 ? static_cast<double>(samples_this_epoch) / epoch_time : 0;
    er.complete = steps_this_epoch == steps_per_epoch;
    er.start_ns = ns_since(spec.origin, epoch_start);
    er.end_ns = ns_since(spec.origin, epoch_end);
    if (!std::isfinite(er.train_loss))
      throw_error(ErrorKind::kNumerical, fmt::format("mean training loss of epoch {} is not finite; lower the learning "
                                                     "rate (now {})",
                                                     epoch, cfg.learning_rate));
    r.steps_completed = global_step;
    r.train_time_s = train_time;
    if (r.status != RunStatus::kInterrupted) {
      const auto e0 = Clock::now();
      auto [acc, tl] = evaluate(*model, w.test_x, w.test_y, dev, cfg.eval_batch_size);
      er.eval_time_s = seconds(e0, Clock::now());
      eval_time_total += er.eval_time_s;
      er.test_accuracy_pct = acc;
      er.test_loss = tl;
      r.test_accuracy_pct = acc;
    }
    r.final_train_loss = er.train_loss;
    r.final_train_accuracy_pct = er.train_accuracy_pct;
    if (er.complete) ++r.epochs_completed;
    r.epochs.push_back(er);
  }

  if (ph.steps > 0) {
    double k = 1.0 / static_cast<double>(ph.steps);
    ph.data_ms *= k;
    ph.h2d_ms *= k;
    ph.forward_ms *= k;
    ph.backward_ms *= k;
    ph.optimizer_ms *= k;
    ph.step_ms *= k;
    r.phases = ph;
  } else {
    r.notes.push_back(fmt::format("phase breakdown absent: the run had {} steps, not more than the {} warm-up steps",
                                  global_step, cfg.warmup_steps));
  }
  if (steady_samples > 0 && steady_time > 0) {
    r.steady_samples_per_s = static_cast<double>(steady_samples) / steady_time;
  } else {
    r.notes.push_back(fmt::format("steady-state samples/s absent: {} steps, not more than the {} warm-up steps; "
                                  "lower --warmup-steps or run longer",
                                  global_step, cfg.warmup_steps));
  }
  std::vector<double> full_epochs;
  double measured_total = 0;
  for (const auto& e : r.epochs) {
    if (e.complete) full_epochs.push_back(e.epoch_time_s);
    measured_total += e.epoch_time_s + e.eval_time_s;
  }
  if (!full_epochs.empty()) {
    double s = 0;
    for (double v : full_epochs) s += v;
    r.mean_epoch_time_s = s / static_cast<double>(full_epochs.size());
  }
  if (r.epochs_completed == cfg.epochs && !r.stopped_early) {
    r.time_for_requested_epochs_s = measured_total;
    r.time_for_requested_epochs_is_estimate = false;
  } else if (r.steady_samples_per_s) {
    double eval_mean = r.epochs.empty() ? 0 : eval_time_total / static_cast<double>(r.epochs.size());
    r.time_for_requested_epochs_s =
        static_cast<double>(cfg.epochs) * (static_cast<double>(n) / *r.steady_samples_per_s + eval_mean);
    r.time_for_requested_epochs_is_estimate = true;
  }
  if (rss_reset) r.peak_rss_bytes = peak_rss_bytes();
  else {
    struct rusage ru {};
    if (getrusage(RUSAGE_SELF, &ru) == 0) r.peak_rss_bytes = static_cast<int64_t>(ru.ru_maxrss) * 1024;
    r.notes.push_back("peak_rss_bytes is the process-lifetime peak (/proc/self/clear_refs not writable)");
  }
  auto ms = device_memory_stats(dev);
  r.device_peak_allocated_bytes = ms.peak_allocated_bytes;
  r.device_peak_reserved_bytes = ms.peak_reserved_bytes;
  if (hooks.on_trained && r.status != RunStatus::kInterrupted) hooks.on_trained(*model, dev);
  if (!spec.checkpoint_path.empty() && r.status != RunStatus::kInterrupted) {
    model->to(torch::kCPU);
    model->save(spec.checkpoint_path);
  }
  r.end_ns = ns_since(spec.origin, Clock::now());
  if (r.status == RunStatus::kRunning) r.status = RunStatus::kOk;
  return r;
}

}  // namespace trainscope
