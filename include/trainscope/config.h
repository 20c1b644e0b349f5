// Plain configuration structs for trainscope runs. The CLI (or a TOML file) fills them;
// the library never sees argv (docs/design.md#the-library-never-sees-argv).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>


// The defaults below are the settings' defaults; each member's TOML key, flag, unit and valid
// range are in the settings table (trainscope/settings.h, docs/configuration.md).

namespace trainscope {

/// Where the training and test data come from.
struct DataConfig {
  /// "idx" (MNIST family), "cifar10" (binary version), "folder" (one sub-folder per class),
  /// "synthetic" (seeded random, for tests and smoke runs); language models: "text" (a UTF-8
  /// file or folder, byte tokens), "tokens" (nanoGPT's train.bin and val.bin, uint16 ids).
  std::string format = "idx";
  /// Folder holding the files. idx: train-images-idx3-ubyte[.gz], train-labels-idx1-ubyte[.gz],
  /// t10k-images-idx3-ubyte[.gz], t10k-labels-idx1-ubyte[.gz]. cifar10: data_batch_{1..5}.bin,
  /// test_batch.bin. folder: <class>/<image> or train/<class>/..., test/<class>/...
  std::string path = "/usr/share/datasets/fashion-mnist";
  int64_t image_size = 32;        // folder: images are resized to image_size x image_size
  int64_t image_channels = 3;     // folder: 1 (grey) or 3 (RGB)
  double test_fraction = 0.2;     // folder without train/ and test/: share held out for testing
  int64_t synthetic_train = 2048; // synthetic: number of training samples
  int64_t synthetic_test = 512;   // synthetic: number of test samples
  int64_t synthetic_channels = 1, synthetic_size = 28, synthetic_classes = 10;
  int64_t limit_train = 0;        // >0: use only the first N training samples
  int64_t limit_test = 0;         // >0: use only the first N test samples
  // Streaming input pipeline (folder format; docs/input-pipeline.md).
  std::string cache_data = "auto";    // "on": decode into memory; "off": stream; "auto": on when it fits the budget
  double cache_budget_gib = 4;        // auto: the decoded float32 train+test sets must fit in this many GiB
  int64_t data_workers = 0;           // streaming decode threads; 0 = cores left after the intra-op threads (>= 1)
  int64_t prefetch_batches = 0;       // finished + building batches at most; 0 = src/data/stream_defaults.h
  std::string augment = "auto";       // streamed training transform: auto | random-resized-crop | pad-crop | none
  std::string on_bad_image = "fail";  // a streamed image that cannot be read/decoded: "fail" the run or "skip" it
  // Language-model data (text, tokens; docs/language-models.md#data).
  int64_t seq_len = 256;              // tokens per training window (T)
  int64_t vocab_size = 0;             // 0 = from the data: 256 for text bytes, largest id + 1 (at least 50257) for tokens
  int64_t eval_windows = 64;          // validation windows evaluated (the first ones); 0 = all
  /// Sequence lengths as a matrix dimension (--seq-lens); [] = seq_len alone.
  std::vector<int64_t> seq_lens;
};

/// One training run's settings (a cell of the experiment matrix).
struct TrainConfig {
  std::string optimizer = "adam";      // "adam" | "sgd"
  double learning_rate = 1e-3;         // Adam default (Kingma & Ba 2015)
  double momentum = 0.9;               // SGD only
  std::string optimizer_impl = "auto"; // adam: "auto" (fused on CUDA), "fused", "loop" (torch::optim)
  int64_t epochs = 1;
  int64_t warmup_steps = 10;           // excluded from steady-state samples/s
  int64_t max_steps = 0;               // >0: stop after this many optimizer steps (estimate the rest)
  double time_budget_s = 0;            // >0: stop a run after this much training wall time
  double min_time_s = -1;              // minimum headline window, s: <0 auto, 0 off (train/min_time.h)
  int64_t eval_batch_size = 1024;      // batch size for test-set evaluation
  uint64_t seed = 42;
  int64_t threads = 0;                 // intra-op threads; 0 = every usable CPU (read_cpu_budget)
  bool malloc_tuning = true;           // glibc malloc's thresholds fixed for the process (set_host_malloc)
  int64_t nan_check_interval = 100;    // steps between NaN/Inf loss checks (one host sync each)
  int64_t inject_nan_at_step = -1;     // testing hook: make the loss NaN at this step (-1: off)
  // ---- variants (trainscope/variants.h, docs/variants.md)
  std::vector<std::string> variants;  // execution variants, a matrix dimension; [] = default_variants()
  double target_accuracy_pct = 0;      // >0: end a run when test accuracy first reaches this (%)
  int64_t eval_every_steps = 0;        // >0 with a target: evaluate every N steps (0 = each epoch)
  bool force_graph_capture = false;    // testing hook: attempt the graph capture on any device
  bool cudnn_benchmark = false;        // CUDA: cuDNN autotuning (at::globalContext().setBenchmarkCuDNN)
  // ---- end variants
  // ---- language models (docs/language-models.md): 0 = the built-in preset's value
  int64_t lm_layers = 0, lm_width = 0, lm_heads = 0;
  double weight_decay = 0;             // adam: decoupled weight decay (AdamW, Loshchilov & Hutter 2019); 0 = Adam
  double grad_clip = 0;                // >0: clip the global gradient norm to this before each step
  int64_t grad_accum = 1;              // micro-batches per optimizer step (each of the batch size)
  int64_t lr_warmup_steps = 0;         // linear learning-rate warm-up, optimizer steps (train/lr_schedule.h)
  int64_t lr_decay_steps = 0;          // >0: cosine decay to lr_min, reached at this optimizer step
  double lr_min = 0;                   // the learning rate the cosine decay ends at
  double target_loss = 0;              // >0: end a language-model run when its validation loss first reaches this
  std::string lm_loss = "auto";        // auto | fused | full: a built-in GPT's training loss (train/lm_task.h)
};

/// Hardware telemetry during runs (trainscope/telemetry.h).
struct TelemetryConfig {
  bool enabled = true;
  double interval_s = 0.1;                        // sampling period, s (10 Hz)
  double slow_interval_s = 1.0;                   // period of NVML's slow fields (energy, processes, GPM), s
  double pcie_interval_s = 10.0;                  // period of NVML's PCIe throughput (~21 ms per call), s
  std::string nvml_library = "libnvidia-ml.so.1"; // dlopen name or path
  std::string proc_root = "/proc", sys_root = "/sys";
};

/// Operator profiling window (trainscope/profile.h). Steps are counted from the run's first
/// step: skip_first, then cycles of wait / warmup / active steps, `repeat` times.
struct ProfileConfig {
  bool enabled = true;
  int64_t skip_first = -1;     // -1 = auto: the window ends at the run's planned last step (profile.h)
  int64_t wait = 0, warmup = 2, active = 5, repeat = 1;
  bool record_shapes = false;
  bool profile_memory = true;
  bool with_flops = false;     // needs every operator's inputs copied: +overhead (bench/RESULTS.md)
  int64_t trace_max_bytes = 64ll << 20;  // trace.json.gz size cap (uncompressed bytes)
  int64_t top_n = 5;           // operators shown on the console (after the answer)
};

/// Inference after training (trainscope/inference.h).
struct InferenceConfig {
  bool enabled = true;
  double single_stream_budget_s = 2.0;     // time budget for single-stream queries
  int64_t min_queries = 200;               // below this, percentiles are flagged as too few
  std::vector<int64_t> offline_batch_sizes = {1, 64, 256};
  double offline_budget_s = 1.0;           // per batch size
  double server_qps = 0;                   // >0: run the server scenario at this Poisson rate
  double server_target_p99_ms = 10;
  double server_budget_s = 2.0;            // queries = max(min_queries, server_qps x budget)
  // Token generation of a language model (`trainscope infer` on one; docs/generation.md).
  std::vector<int64_t> gen_pp = {512};     // llama-bench pp tests: prompt tokens (0 = none)
  std::vector<int64_t> gen_tg = {128};     // llama-bench tg tests: generated tokens (0 = none)
  int64_t gen_depth = 0;                   // tokens already in the cache before each test
  int64_t gen_repetitions = 5;             // timed repetitions of each test
  int64_t gen_prompt_len = 128;            // server requests: prompt tokens
  int64_t gen_output_len = 128;            // server requests: output tokens
  std::string gen_server_batching = "continuous";  // server: fcfs | continuous (docs/generation.md)
  int64_t gen_server_max_batch = 8;        // server, continuous: requests in the running batch
  std::string gen_server_lengths = "fixed";  // server: fixed | text (lengths from the validation text)
  double gen_slo_ttft_ms = 500;            // goodput: TTFT limit (MLPerf Llama-3.1-8B interactive)
  double gen_slo_tpot_ms = 30;             // goodput: TPOT limit (the same)
};

/// `--batch-sizes auto` (trainscope/batch_sweep.h): per device and model, the batch size doubles
/// from the smallest batch size of the matrix until throughput stops rising (or memory or the
/// data set runs out).
struct BatchSweepConfig {
  bool enabled = false;
  int64_t start = 16;          // samples; the batch sizes when `--batch-sizes auto` gives no number
  double min_gain_pct = 5;     // %; a doubling must raise samples/s by this much (BatchSweepRule's default too)
  int64_t max_batch = 65536;   // samples; never beyond
};

/// TensorBoard event files of every run (trainscope/tensorboard.h, docs/tensorboard.md).
struct TensorBoardConfig {
  bool enabled = true;
  std::string dir;  // "" = <run folder>/tensorboard; else <dir>/<run folder name>
};

/// Data-parallel training (docs/distributed.md; src/dist/). Every rank runs the same matrix.
struct DistConfig {
  int64_t nproc_per_node = 1;   // >1: `trainscope run` starts this many local ranks itself
  double timeout_s = 60;        // a rank that dies or makes no progress this long stops the others
  double bucket_mb = 25;        // gradient all-reduce bucket cap, MB (1e6 bytes), as PyTorch's DDP
  int64_t inject_fault_rank = -1;  // testing: this rank fails at inject_fault_step (-1: off)
  int64_t inject_fault_step = 2;
  std::string inject_fault = "exit";  // testing: "exit" (the process dies), "hang" (it sleeps), "sigterm-after-run"
};

/// The experiment matrix: devices x models x batch sizes x repeats.
struct MatrixConfig {
  std::vector<std::string> devices;    // empty = "cpu" plus every visible CUDA device
  std::vector<std::string> models = {"mlp", "cnn"};
  std::vector<int64_t> batch_sizes = {64, 128};
  int64_t repeats = 1;
  DataConfig data;
  TrainConfig train;
  std::string out_dir = "trainscope-runs";  // a run folder <out_dir>/<timestamp> is created
  std::string run_name;                     // optional: folder name instead of the timestamp
  std::string preset;                       // "", "quick", "paper"
  bool progress = true;                     // progress bar on a terminal (never when not a tty)
  std::string command_line;                 // for provenance
  TelemetryConfig telemetry;
  ProfileConfig profile;
  InferenceConfig inference;
  std::string history_db;                   // "" = <out_dir>/history.sqlite
  bool resume = false;                      // continue <out_dir>/<run_name>: skip runs already ok
  BatchSweepConfig batch_sweep;             // batch_sizes = the sweep's start when enabled
  TensorBoardConfig tensorboard;
  DistConfig dist;                          // data-parallel training (docs/distributed.md)
};

/// Applies a named preset ("quick", "paper") to `m`. Throws Error(kInvalidArgument) for an unknown name.
/// "paper" reproduces arXiv 2309.02521: Adam, 20 epochs, batch 64 and 128, a simple (mlp) and a
/// deep (resnet18) network.
void apply_preset(const std::string& name, MatrixConfig& m);

/// Loads a TOML configuration file into `m` (keys: docs/configuration-guide.md#configuration-file-toml).
/// Unknown keys, wrong types and out-of-range values throw Error(kInvalidConfig) naming the
/// file, the key and the fix. The file's `preset` is applied before its other keys; a
/// non-empty `preset_override` (the --preset flag) is applied in its place.
void load_toml_config(const std::string& path, MatrixConfig& m, const std::string& preset_override = "");

/// The matrix as JSON (written to <run folder>/matrix.json so `--resume` can rebuild it) and
/// back. Unknown keys in the JSON are ignored; missing keys keep their defaults.
std::string matrix_config_to_json(const MatrixConfig& m);
MatrixConfig matrix_config_from_json(const std::string& text, const std::string& source);

/// Validates a matrix before anything runs: every setting against its range in the settings
/// table (trainscope/settings.h), then the checks that involve several (non-empty and unique
/// lists, a server rate that can deliver min_queries). Throws Error(kInvalidArgument) naming the
/// flag and TOML key, the value and the valid range.
void validate(const MatrixConfig& m);

/// One line per setting given a non-default value that has no effect in `m` because the setting
/// applies only under another setting (Setting::applies), e.g. "--eval-every-steps (TOML
/// train.eval_every_steps) = 5 has no effect: it applies only when train.target_accuracy_pct > 0".
/// `trainscope run` prints them as notes before anything runs.
std::vector<std::string> ignored_settings(const MatrixConfig& m);

}  // namespace trainscope
