// The rows of the settings table (trainscope/settings.h), one per setting: TOML key, flag, help,
// unit, range and when it is checked. The machinery that reads them (ranges, checks, values) is
// src/config/settings.cpp; their documentation, src/config/settings_docs.cpp.
#include "config/settings_rows.h"

#include "trainscope/variants.h"

namespace trainscope {

namespace {

// The member a row reads and writes: TS_FIELD(train.epochs) is &m.train.epochs.
#define TS_FIELD(member) [](MatrixConfig& m) -> SettingField { return &m.member; }

bool when_not_resumed(const MatrixConfig& m) { return !m.resume; }
bool when_folder(const MatrixConfig& m) { return m.data.format == "folder"; }
bool when_synthetic(const MatrixConfig& m) { return m.data.format == "synthetic"; }
bool when_lm_data(const MatrixConfig& m) { return m.data.format == "text" || m.data.format == "tokens"; }
bool when_split(const MatrixConfig& m) { return m.data.format == "folder" || m.data.format == "text"; }
bool when_telemetry(const MatrixConfig& m) { return m.telemetry.enabled; }
bool when_target(const MatrixConfig& m) { return m.train.target_accuracy_pct > 0 || m.train.target_loss > 0; }
bool when_lr_decay(const MatrixConfig& m) { return m.train.lr_decay_steps > 0; }
bool when_profile(const MatrixConfig& m) { return m.profile.enabled; }
bool when_inference(const MatrixConfig& m) { return m.inference.enabled; }

constexpr double kMaxBatch = 1 << 20;   // 1048576 samples
constexpr double kMaxSteps = 1e9;       // step counts beyond a billion are typos (and sums would overflow)
constexpr double kMaxBudgetS = 3600;    // one hour per inference scenario

void add_top_level(std::vector<Setting>& t) {
  t.push_back({.key = "devices", .flag = "-d,--devices", .help = "devices to compare: cpu, cuda (every GPU), cuda:N",
               .note = "[] = cpu and every visible GPU", .field = TS_FIELD(devices)});
  t.push_back({.key = "models", .flag = "-m,--models", .noun = "model",
               .help = "models: mlp, cnn, resnet18, vgg11, vit-s, vit-ti; language models gpt-mini, gpt2, gpt2-medium; or a TorchScript "
                       "file (.pt)", .field = TS_FIELD(models)});
  t.push_back({.key = "batch_sizes", .flag = "-b,--batch-sizes", .noun = "batch size",
               .help = "training batch sizes; auto (or 32,auto): the batch sweep (batch_sweep.*)",
               .unit = "samples", .range = {.min = 1, .max = kMaxBatch}, .field = TS_FIELD(batch_sizes)});
  t.push_back({.key = "repeats", .flag = "--repeats", .noun = "repeats",
               .help = "repeats of every cell (median and spread are reported)", .range = {.min = 1, .max = 1000},
               .field = TS_FIELD(repeats)});
  t.push_back({.key = "out_dir", .flag = "-o,--out", .help = "folder that holds the run folders",
               .field = TS_FIELD(out_dir)});
  t.push_back({.key = "run_name", .flag = "--name", .noun = "run folder name",
               .help = "name of the run folder under out_dir", .range = {.folder_name = true},
               .note = "\"\" = UTC timestamp", .field = TS_FIELD(run_name), .applies = when_not_resumed,
               .applies_text = "the run is not resumed"});
  t.push_back({.key = "preset", .flag = "--preset", .noun = "preset",
               .help = "paper: the study's setup (Adam, 20 epochs, batch 64/128, mlp + resnet18); quick: 200 steps "
                       "per run. Applied first: every other key and flag overrides it",
               .range = {.choices = {"", "paper", "quick"}}, .field = TS_FIELD(preset)});
  t.push_back({.key = "progress", .off_flag = "--no-progress",
               .help = "progress bar on a terminal (never when not a tty)", .field = TS_FIELD(progress),
               .in_json = false});
  t.push_back({.key = "history_db", .help = "history database every run is recorded in",
               .note = "\"\" = <out_dir>/history.sqlite", .field = TS_FIELD(history_db)});
  t.push_back({.key = "command_line", .help = "command line of the first session (provenance, for --resume)",
               .field = TS_FIELD(command_line), .in_file = false, .hidden = true});
}

// The learning-rate schedule (train/lr_schedule.h): linear warm-up, then cosine decay to lr_min.
void add_lr_schedule(std::vector<Setting>& t) {
  t.push_back({.key = "train.lr_warmup_steps", .flag = "--lr-warmup-steps", .noun = "learning-rate warm-up",
               .help = "raise the learning rate linearly over the first N optimizer steps", .unit = "steps",
               .range = {.min = 0, .max = kMaxSteps}, .note = "0 = no warm-up", .field = TS_FIELD(train.lr_warmup_steps)});
  t.push_back({.key = "train.lr_decay_steps", .flag = "--lr-decay-steps", .noun = "learning-rate decay",
               .help = "cosine decay of the learning rate after the warm-up, reaching lr_min at this optimizer step "
                       "(nanoGPT's lr_decay_iters)",
               .unit = "steps", .range = {.min = 0, .max = kMaxSteps}, .note = "0 = no decay",
               .field = TS_FIELD(train.lr_decay_steps)});
  t.push_back({.key = "train.lr_min", .flag = "--lr-min", .noun = "minimum learning rate",
               .help = "the learning rate the cosine decay ends at (nanoGPT's min_lr)", .range = {.min = 0},
               .field = TS_FIELD(train.lr_min), .applies = when_lr_decay,
               .applies_text = "train.lr_decay_steps > 0"});
}

void add_language_model(std::vector<Setting>& t) {
  auto shape = [&](const char* key, const char* flag, const char* noun, const char* help, double hi,
                   SettingField (*field)(MatrixConfig&)) {
    t.push_back({.key = key, .flag = flag, .noun = noun, .help = help, .range = {.min = 0, .max = hi},
                 .note = "0 = the model's preset", .field = field, .applies = when_lm_data,
                 .applies_text = "data.format = text or tokens"});
  };
  shape("train.lm_layers", "--lm-layers", "transformer layers", "language models: transformer blocks", 256,
        TS_FIELD(train.lm_layers));
  shape("train.lm_width", "--lm-width", "model width", "language models: width d (a multiple of the heads)", 65536,
        TS_FIELD(train.lm_width));
  shape("train.lm_heads", "--lm-heads", "attention heads", "language models: attention heads", 1024,
        TS_FIELD(train.lm_heads));
  t.push_back({.key = "train.weight_decay", .flag = "--weight-decay", .noun = "weight decay",
               .help = "adam: decoupled weight decay on matrices (AdamW); 0 = Adam", .range = {.min = 0, .max = 10},
               .field = TS_FIELD(train.weight_decay)});
  t.push_back({.key = "train.grad_clip", .flag = "--grad-clip", .noun = "gradient clip",
               .help = "clip the global gradient L2 norm to this before each optimizer step", .range = {.min = 0},
               .note = "0 = off", .field = TS_FIELD(train.grad_clip)});
  t.push_back({.key = "train.grad_accum", .flag = "--grad-accum", .noun = "gradient accumulation",
               .help = "micro-batches (each of the batch size) whose gradients are summed before one optimizer step",
               .unit = "micro-batches", .range = {.min = 1, .max = 65536}, .note = "1 = off",
               .field = TS_FIELD(train.grad_accum)});
  add_lr_schedule(t);
  t.push_back({.key = "train.lm_loss", .flag = "--lm-loss", .noun = "language-model loss",
               .help = "built-in language models' training loss: fused (the output projection and cross-entropy in "
                       "chunks of rows, gradients in the same pass, no [tokens x vocabulary] logits; Liger Kernel, "
                       "llm.c) or full (logits, then cross-entropy); auto = full on CUDA (faster there), fused on "
                       "the CPU; evaluation always computes the full logits",
               .range = {.choices = {"auto", "fused", "full"}}, .field = TS_FIELD(train.lm_loss), .applies = when_lm_data,
               .applies_text = "data.format = text or tokens"});
  t.push_back({.key = "train.target_loss", .flag = "--target-loss", .noun = "target validation loss",
               .help = "language models: end each run when its validation loss first reaches this; time, tokens and "
                       "energy to it are recorded",
               .unit = "nats/token", .range = {.min = 0}, .note = "0 = no target", .field = TS_FIELD(train.target_loss),
               .applies = when_lm_data, .applies_text = "data.format = text or tokens"});
}

void add_data(std::vector<Setting>& t) {
  t.push_back({.key = "data.format", .flag = "--data-format", .noun = "data format",
               .help = "idx (MNIST family), cifar10 (binary version), folder (one sub-folder per class), synthetic "
                       "(seeded random); language models: text (UTF-8 file or folder, byte tokens), tokens "
                       "(nanoGPT's train.bin and val.bin)",
               .range = {.choices = {"idx", "cifar10", "folder", "synthetic", "text", "tokens"}},
               .field = TS_FIELD(data.format)});
  t.push_back({.key = "data.path", .flag = "--data", .help = "data folder (text: a file or folder)",
               .note = "text: the default stands for Debian's python3-doc corpus", .field = TS_FIELD(data.path)});
  t.push_back({.key = "data.seq_len", .flag = "--seq-len", .noun = "sequence length",
               .help = "language models: tokens per training window", .unit = "tokens",
               .range = {.min = 2, .max = 65536}, .field = TS_FIELD(data.seq_len), .applies = when_lm_data,
               .applies_text = "data.format = text or tokens"});
  t.push_back({.key = "data.seq_lens", .flag = "--seq-lens", .noun = "sequence length",
               .help = "language models: sequence lengths as a matrix dimension beside the batch sizes (one cell each)",
               .unit = "tokens", .range = {.min = 2, .max = 65536}, .note = "[] = seq_len alone",
               .field = TS_FIELD(data.seq_lens), .applies = when_lm_data,
               .applies_text = "data.format = text or tokens"});
  t.push_back({.key = "data.vocab_size", .flag = "--vocab-size", .noun = "vocabulary size",
               .help = "language models: token ids must be below it", .unit = "tokens",
               .range = {.min = 0, .max = 1 << 24},
               .note = "0 = from the data (text 256, tokens the largest id + 1, at least 50257)",
               .field = TS_FIELD(data.vocab_size), .applies = when_lm_data,
               .applies_text = "data.format = text or tokens"});
  t.push_back({.key = "data.eval_windows", .flag = "--eval-windows", .noun = "validation windows",
               .help = "language models: validation windows evaluated after each epoch (the first ones of the split)",
               .unit = "windows", .range = {.min = 0}, .note = "0 = all", .field = TS_FIELD(data.eval_windows),
               .applies = when_lm_data, .applies_text = "data.format = text or tokens"});
  t.push_back({.key = "data.image_size", .flag = "--image-size", .noun = "image size",
               .help = "folder: images are resized to N x N", .unit = "pixels", .range = {.min = 4, .max = 1024},
               .field = TS_FIELD(data.image_size), .applies = when_folder, .applies_text = "data.format = folder"});
  t.push_back({.key = "data.image_channels", .flag = "--image-channels", .noun = "image channels",
               .help = "folder: 1 (grey) or 3 (RGB) channels", .range = {.choices = {"1", "3"}},
               .field = TS_FIELD(data.image_channels), .applies = when_folder, .applies_text = "data.format = folder"});
  t.push_back({.key = "data.test_fraction", .noun = "test fraction",
               .help = "folder without train/ and test/, or text: share held out for testing (text: by whole files, "
                       "or one contiguous range of a single file)",
               .range = {.min = 0, .max = 1, .min_open = true, .max_open = true}, .field = TS_FIELD(data.test_fraction),
               .applies = when_split, .applies_text = "data.format = folder or text"});
  auto synthetic = [&](const char* key, const char* noun, const char* help, const char* unit, double lo, double hi,
                       SettingField (*field)(MatrixConfig&)) {
    t.push_back({.key = key, .noun = noun, .help = help, .unit = unit, .range = {.min = lo, .max = hi},
                 .field = field, .applies = when_synthetic, .applies_text = "data.format = synthetic"});
  };
  synthetic("data.synthetic_train", "synthetic training set size", "synthetic: training samples", "samples", 1, 1e7,
            TS_FIELD(data.synthetic_train));
  synthetic("data.synthetic_test", "synthetic test set size", "synthetic: test samples", "samples", 1, 1e7,
            TS_FIELD(data.synthetic_test));
  synthetic("data.synthetic_channels", "synthetic channels", "synthetic: image channels", "", 1, 4,
            TS_FIELD(data.synthetic_channels));
  synthetic("data.synthetic_size", "synthetic image size", "synthetic: images are N x N", "pixels", 4, 256,
            TS_FIELD(data.synthetic_size));
  synthetic("data.synthetic_classes", "synthetic classes", "synthetic: number of classes", "", 2, 1000,
            TS_FIELD(data.synthetic_classes));
  t.push_back({.key = "data.limit_train", .flag = "--limit-train", .noun = "training sample limit",
               .help = "use only the first N training samples", .unit = "samples", .range = {.min = 0},
               .note = "0 = all", .field = TS_FIELD(data.limit_train)});
  t.push_back({.key = "data.limit_test", .flag = "--limit-test", .noun = "test sample limit",
               .help = "use only the first N test samples", .unit = "samples", .range = {.min = 0},
               .note = "0 = all", .field = TS_FIELD(data.limit_test)});
  // Streaming input pipeline (docs/input-pipeline.md).
  auto folder = [&](Setting s) {
    s.applies = when_folder;
    s.applies_text = "data.format = folder";
    t.push_back(std::move(s));
  };
  folder({.key = "data.cache_data", .flag = "--cache-data", .noun = "cache mode",
          .help = "folder: on = decode every image into memory before training; off = stream the training set "
                  "through worker threads each epoch; auto = on when the decoded sets fit data.cache_budget_gib",
          .range = {.choices = {"auto", "on", "off"}}, .field = TS_FIELD(data.cache_data)});
  folder({.key = "data.cache_budget_gib", .flag = "--cache-budget", .noun = "cache budget",
          .help = "folder, cache_data auto: the most the decoded float32 train + test sets may take in memory",
          .unit = "GiB", .range = {.min = 0, .max = 1e6}, .field = TS_FIELD(data.cache_budget_gib)});
  folder({.key = "data.data_workers", .flag = "--data-workers", .noun = "data workers",
          .help = "streaming: threads that read, decode and transform images", .unit = "threads",
          .range = {.min = 0, .max = 1024}, .note = "0 = the usable CPUs left after the intra-op threads (at least 1)",
          .field = TS_FIELD(data.data_workers)});
  folder({.key = "data.prefetch_batches", .flag = "--prefetch-batches", .noun = "prefetch batches",
          .help = "streaming: finished batches the queue holds at most ahead of the trainer", .unit = "batches",
          .range = {.min = 0, .max = 4096}, .note = "0 = max(2, 2 x workers x 8 / batch)", .field = TS_FIELD(data.prefetch_batches)});
  folder({.key = "data.augment", .flag = "--augment", .noun = "augmentation",
          .help = "streaming: training transform (random-resized-crop, pad-crop: pad 4 and crop; both flip; none); "
                  "the test set is only resized and centre-cropped",
          .range = {.choices = {"auto", "random-resized-crop", "pad-crop", "none"}},
          .note = "auto = random-resized-crop from image_size 128, else pad-crop", .field = TS_FIELD(data.augment)});
  folder({.key = "data.on_bad_image", .flag = "--on-bad-image", .noun = "bad-image policy",
          .help = "streaming: an image that cannot be read or decoded fails the run, or is skipped and counted",
          .range = {.choices = {"fail", "skip"}}, .field = TS_FIELD(data.on_bad_image)});
}

void add_train(std::vector<Setting>& t) {
  t.push_back({.key = "train.optimizer", .flag = "--optimizer", .noun = "optimizer", .help = "optimizer",
               .range = {.choices = {"adam", "sgd"}}, .field = TS_FIELD(train.optimizer)});
  t.push_back({.key = "train.optimizer_impl", .flag = "--optimizer-impl", .noun = "optimizer implementation",
               .help = "adam implementation: auto (fused kernel on CUDA), fused, loop (torch::optim)",
               .range = {.choices = {"auto", "fused", "loop"}}, .field = TS_FIELD(train.optimizer_impl)});
  t.push_back({.key = "train.learning_rate", .flag = "--lr", .noun = "learning rate", .help = "learning rate",
               .range = {.min = 0, .max = 10, .min_open = true}, .field = TS_FIELD(train.learning_rate)});
  t.push_back({.key = "train.momentum", .noun = "momentum", .help = "SGD momentum",
               .range = {.min = 0, .max = 1, .max_open = true}, .field = TS_FIELD(train.momentum)});
  t.push_back({.key = "train.epochs", .flag = "-e,--epochs", .noun = "epochs", .help = "epochs per run",
               .range = {.min = 1, .max = 100000}, .field = TS_FIELD(train.epochs)});
  t.push_back({.key = "train.warmup_steps", .flag = "--warmup-steps", .noun = "warm-up steps",
               .help = "steps excluded from steady-state samples/s", .unit = "steps", .range = {.min = 0, .max = kMaxSteps},
               .field = TS_FIELD(train.warmup_steps)});
  t.push_back({.key = "train.max_steps", .flag = "--max-steps", .noun = "max steps",
               .help = "stop each run after N optimizer steps and estimate the full time", .unit = "steps",
               .range = {.min = 0}, .note = "0 = no limit", .field = TS_FIELD(train.max_steps)});
  t.push_back({.key = "train.time_budget_s", .flag = "--time-budget", .noun = "time budget",
               .help = "stop each run after this much training time", .unit = "s", .range = {.min = 0},
               .note = "0 = no limit", .field = TS_FIELD(train.time_budget_s)});
  t.push_back({.key = "train.min_time_s", .flag = "--min-time", .noun = "minimum measured time",
               .help = "each cell's headline window lasts at least this long: a cell whose requested epochs are "
                       "shorter trains more epochs, chosen by a short calibration pass, and its record keeps the "
                       "requested epochs' accuracy and time (docs/profiling.md#minimum-measured-time)",
               .unit = "s", .range = {.min = -1, .max = 86400},
               .note = "-1 = auto: 6 x the slowest telemetry interval, enough readings of every field; 0 = off; "
                       "not with --max-steps, --time-budget, --target-accuracy or --target-loss",
               .field = TS_FIELD(train.min_time_s)});
  t.push_back({.key = "train.eval_batch_size", .flag = "--eval-batch-size", .noun = "evaluation batch size",
               .help = "test-set evaluation batch size", .unit = "samples", .range = {.min = 1, .max = kMaxBatch},
               .field = TS_FIELD(train.eval_batch_size)});
  t.push_back({.key = "train.seed", .flag = "--seed", .noun = "seed", .help = "random seed for weights and shuffling",
               .range = {.min = 0}, .field = TS_FIELD(train.seed)});
  t.push_back({.key = "train.threads", .flag = "--threads", .noun = "threads",
               .help = "intra-op CPU threads (more than the usable CPUs is warned about: they oversubscribe the cores)",
               .range = {.min = 0, .max = 4096},
               .note = "0 = every CPU this process may use: its affinity mask (taskset, Slurm, cpuset), capped by a cgroup CPU quota", .field = TS_FIELD(train.threads)});
  t.push_back({.key = "train.malloc_tuning", .off_flag = "--no-malloc-tuning",
               .help = "fixing glibc malloc's thresholds (mmap 1 GiB, no trimming of the main heap): host blocks "
                       "are reused from the heap rather than mapped and faulted in again each step, and glibc stops "
                       "moving the thresholds as blocks are freed; a preloaded tcmalloc or jemalloc, or thresholds "
                       "set by MALLOC_*_ or GLIBC_TUNABLES, are left as they are "
                       "(docs/configuration.md#host-memory-allocator)",
               .field = TS_FIELD(train.malloc_tuning)});
  t.push_back({.key = "train.nan_check_interval", .noun = "NaN check interval",
               .help = "steps between NaN/Inf loss checks (one host sync each)", .unit = "steps",
               .range = {.min = 1, .max = kMaxSteps}, .field = TS_FIELD(train.nan_check_interval)});
  t.push_back({.key = "train.inject_nan_at_step", .flag = "--inject-nan-at-step", .noun = "NaN injection step",
               .help = "testing: make the loss NaN at this step", .range = {.min = -1}, .note = "-1 = off",
               .field = TS_FIELD(train.inject_nan_at_step), .in_file = false, .hidden = true});
  // ---- variants (trainscope/variants.h)
  t.push_back({.key = "train.variants", .flag = "--variants", .noun = "variant",
               .help = "execution variants, a matrix dimension: eager, or a '+' combination of graphs, bf16, tf32, "
                       "channels_last, threadsN (e.g. eager,bf16,graphs+bf16,threads8; docs/variants.md)",
               .note = "[] = eager, plus graphs on the GPUs when the matrix has one (docs/variants.md#default-variants)",
               .field = TS_FIELD(train.variants),
               .check_item = [](const std::string& v, std::string_view where) { (void)parse_variant(v, where); }});
  t.push_back({.key = "train.target_accuracy_pct", .flag = "--target-accuracy", .noun = "target accuracy",
               .help = "end each run when its test accuracy first reaches this; time, samples and energy to it are "
                       "recorded",
               .unit = "%", .range = {.min = 0, .max = 100}, .note = "0 = no target",
               .field = TS_FIELD(train.target_accuracy_pct)});
  t.push_back({.key = "train.eval_every_steps", .flag = "--eval-every-steps", .noun = "evaluation interval",
               .help = "with a target accuracy or target loss: evaluate the test set every N steps", .unit = "steps",
               .range = {.min = 0, .max = kMaxSteps}, .note = "0 = after each epoch",
               .field = TS_FIELD(train.eval_every_steps), .applies = when_target,
               .applies_text = "train.target_accuracy_pct > 0 or train.target_loss > 0"});
  t.push_back({.key = "train.force_graph_capture", .flag = "--force-graph-capture",
               .help = "testing: attempt the CUDA-graph capture of a graphs variant on any device",
               .field = TS_FIELD(train.force_graph_capture), .in_file = false, .hidden = true});
  t.push_back({.key = "train.cudnn_benchmark", .flag = "--cudnn-benchmark",
               .help = "CUDA: let cuDNN time its convolution algorithms on the first batch of each shape and keep the "
                       "fastest (PyTorch's torch.backends.cudnn.benchmark; docs/variants.md#cudnn-autotuning)",
               .note = "off = cuDNN's heuristics, PyTorch's default", .field = TS_FIELD(train.cudnn_benchmark)});
  // ---- end variants
}

void add_telemetry(std::vector<Setting>& t) {
  t.push_back({.key = "telemetry.enabled", .off_flag = "--no-telemetry",
               .help = "hardware telemetry sampling (utilisation, memory, power, energy, temperature)",
               .field = TS_FIELD(telemetry.enabled)});
  t.push_back({.key = "telemetry.interval_s", .flag = "--telemetry-interval", .noun = "telemetry interval",
               .help = "telemetry sampling period", .unit = "s", .range = {.min = 0.001, .max = 1},
               .note = "1 .. 1000 Hz", .field = TS_FIELD(telemetry.interval_s), .applies = when_telemetry,
               .applies_text = "telemetry.enabled"});
  t.push_back({.key = "telemetry.slow_interval_s", .flag = "--telemetry-slow-interval",
               .noun = "telemetry slow-field interval",
               .help = "period of the slow fields: NVML's energy counter (~4 ms per call), process list and GPM SM "
                       "activity, and the CPU frequency; PCIe has its own (--telemetry-pcie-interval; docs/telemetry.md)",
               .unit = "s", .range = {.min = 0.001, .max = 3600}, .note = "raised to the sampling period when below it",
               .field = TS_FIELD(telemetry.slow_interval_s), .applies = when_telemetry, .applies_text = "telemetry.enabled"});
  t.push_back({.key = "telemetry.pcie_interval_s", .flag = "--telemetry-pcie-interval",
               .noun = "telemetry PCIe interval",
               .help = "period of NVML's PCIe throughput (two ~21 ms calls that wait in the driver; each reading is a "
                       "~20 ms snapshot of the link; docs/telemetry.md#fields-and-units)",
               .unit = "s", .range = {.min = 0.001, .max = 3600}, .note = "raised to the slow-field interval when below it",
               .field = TS_FIELD(telemetry.pcie_interval_s), .applies = when_telemetry, .applies_text = "telemetry.enabled"});
  t.push_back({.key = "telemetry.nvml_library", .flag = "--nvml-library", .help = "NVML library to dlopen (name or path)",
               .note = "\"\" disables NVML", .field = TS_FIELD(telemetry.nvml_library)});
  t.push_back({.key = "telemetry.proc_root", .flag = "--proc-root",
               .help = "procfs root (containers that mount the host's /proc elsewhere)",
               .field = TS_FIELD(telemetry.proc_root)});
  t.push_back({.key = "telemetry.sys_root", .flag = "--sys-root",
               .help = "sysfs root (containers that mount the host's /sys elsewhere)", .field = TS_FIELD(telemetry.sys_root)});
}

void add_profile(std::vector<Setting>& t) {
  t.push_back({.key = "profile.enabled", .flag = "--profile", .off_flag = "--no-profile",
               .help = "an operator-profiling window per run, its trace and op table", .field = TS_FIELD(profile.enabled)});
  auto steps = [&](const char* key, const char* flag, const char* help, double lo, const char* note,
                   SettingField (*field)(MatrixConfig&), const char* unit = "steps") {
    t.push_back({.key = key, .flag = flag, .help = help, .unit = unit, .range = {.min = lo, .max = kMaxSteps},
                 .note = note, .field = field, .applies = when_profile, .applies_text = "profile.enabled"});
  };
  steps("profile.skip_first", "--profile-skip", "steps before the profiler's first warm-up", -1,
        "-1 = auto: at the end of the run's planned steps, after the headline window",
        TS_FIELD(profile.skip_first));
  steps("profile.wait", "", "steps waited at the start of each cycle", 0, "", TS_FIELD(profile.wait));
  steps("profile.warmup", "", "profiler warm-up steps per cycle (not recorded)", 0, "", TS_FIELD(profile.warmup));
  steps("profile.active", "--profile-steps", "profiled (active) steps per cycle", 1, "", TS_FIELD(profile.active));
  steps("profile.repeat", "", "profiling cycles", 0, "0 = until the run ends", TS_FIELD(profile.repeat), "cycles");
  t.push_back({.key = "profile.record_shapes", .flag = "--profile-shapes", .help = "operator input shapes in the profile",
               .field = TS_FIELD(profile.record_shapes)});
  t.push_back({.key = "profile.profile_memory", .off_flag = "--profile-no-memory",
               .help = "allocator events in the profiling window", .field = TS_FIELD(profile.profile_memory)});
  t.push_back({.key = "profile.with_flops", .flag = "--profile-flops",
               .help = "FLOPs per operator in the op table (records input shapes: more overhead)",
               .field = TS_FIELD(profile.with_flops)});
  t.push_back({.key = "profile.trace_max_bytes", .help = "trace.json.gz size cap (uncompressed)", .unit = "bytes",
               .range = {.min = 1024}, .field = TS_FIELD(profile.trace_max_bytes), .applies = when_profile,
               .applies_text = "profile.enabled"});
  t.push_back({.key = "profile.top_n", .flag = "--profile-top", .help = "operators shown per run on the console",
               .range = {.min = 0, .max = 1e6}, .note = "0 = none", .field = TS_FIELD(profile.top_n),
               .applies = when_profile, .applies_text = "profile.enabled"});
}

// Token generation of a language model (`trainscope infer`; docs/generation.md): flags of infer only.
void add_generation(std::vector<Setting>& t) {
  auto tokens = [&](const char* key, const char* noun, const char* help, SettingField (*field)(MatrixConfig&),
                    double min, const char* note) {
    t.push_back({.key = key, .noun = noun, .help = help, .unit = "tokens", .range = {.min = min, .max = 1 << 20},
                 .note = note, .field = field});
  };
  tokens("inference.gen_pp", "pp test", "language models: llama-bench pp tests, prompt tokens processed in one pass",
         TS_FIELD(inference.gen_pp), 0, "0 = none; default shortened to the context");
  tokens("inference.gen_tg", "tg test", "language models: llama-bench tg tests, tokens generated one pass each",
         TS_FIELD(inference.gen_tg), 0, "0 = none; default shortened to the context");
  tokens("inference.gen_depth", "depth", "language models: tokens in the key/value cache before each pp/tg test "
         "(llama-bench's @ dN)", TS_FIELD(inference.gen_depth), 0, "");
  t.push_back({.key = "inference.gen_repetitions", .noun = "repetitions",
               .help = "language models: timed repetitions of each pp/tg test (mean ± stddev)",
               .range = {.min = 1, .max = 1e6}, .field = TS_FIELD(inference.gen_repetitions)});
  tokens("inference.gen_prompt_len", "prompt length", "language models, server scenario: prompt tokens per request",
         TS_FIELD(inference.gen_prompt_len), 1, "default shortened to half the context");
  tokens("inference.gen_output_len", "output length", "language models, server scenario: output tokens per request",
         TS_FIELD(inference.gen_output_len), 1, "default shortened to the context left");
  t.push_back({.key = "inference.gen_server_batching", .noun = "server batching",
               .help = "language models, server scenario: fcfs (one request at a time, batch 1) or continuous "
                       "(iteration-level batching of up to gen_server_max_batch requests)",
               .range = {.choices = {"fcfs", "continuous"}}, .note = "a TorchScript LM is served fcfs",
               .field = TS_FIELD(inference.gen_server_batching)});
  t.push_back({.key = "inference.gen_server_max_batch", .noun = "server max batch",
               .help = "language models, server scenario, continuous batching: requests decoded together at most",
               .unit = "requests", .range = {.min = 1, .max = 4096}, .field = TS_FIELD(inference.gen_server_max_batch)});
  t.push_back({.key = "inference.gen_server_lengths", .noun = "server lengths",
               .help = "language models, server scenario: fixed (gen_prompt_len, gen_output_len) or text (a paragraph "
                       "of the validation text as prompt, the next one's length as output; those two as bounds)",
               .range = {.choices = {"fixed", "text"}}, .note = "text needs byte text: --data-format text",
               .field = TS_FIELD(inference.gen_server_lengths)});
  t.push_back({.key = "inference.gen_slo_ttft_ms", .noun = "TTFT SLO",
               .help = "language models, server scenario: goodput's time-to-first-token limit", .unit = "ms",
               .range = {.min = 0, .max = 3.6e6, .min_open = true}, .field = TS_FIELD(inference.gen_slo_ttft_ms)});
  t.push_back({.key = "inference.gen_slo_tpot_ms", .noun = "TPOT SLO",
               .help = "language models, server scenario: goodput's time-per-output-token limit", .unit = "ms",
               .range = {.min = 0, .max = 3.6e6, .min_open = true}, .field = TS_FIELD(inference.gen_slo_tpot_ms)});
}

void add_inference(std::vector<Setting>& t) {
  t.push_back({.key = "inference.enabled", .off_flag = "--no-inference",
               .help = "inference scenarios (single-stream, offline) after each run", .field = TS_FIELD(inference.enabled)});
  auto budget = [&](const char* key, const char* help, SettingField (*field)(MatrixConfig&)) {
    t.push_back({.key = key, .help = help, .unit = "s", .range = {.min = 0, .max = kMaxBudgetS, .min_open = true},
                 .field = field, .applies = when_inference, .applies_text = "inference.enabled"});
  };
  budget("inference.single_stream_budget_s", "time budget of the single-stream scenario (hard stop at 5x)",
         TS_FIELD(inference.single_stream_budget_s));
  t.push_back({.key = "inference.min_queries", .help = "fewer timed queries flag the percentiles as too few",
               .unit = "queries", .range = {.min = 1, .max = 1e7}, .field = TS_FIELD(inference.min_queries),
               .applies = when_inference, .applies_text = "inference.enabled"});
  t.push_back({.key = "inference.offline_batch_sizes", .noun = "inference offline batch size",
               .help = "batch sizes of the offline scenario", .unit = "samples", .range = {.min = 1, .max = kMaxBatch},
               .field = TS_FIELD(inference.offline_batch_sizes), .applies = when_inference,
               .applies_text = "inference.enabled"});
  budget("inference.offline_budget_s", "time budget of the offline scenario, per batch size",
         TS_FIELD(inference.offline_budget_s));
  t.push_back({.key = "inference.server_qps", .help = "server scenario: Poisson arrival rate", .unit = "queries/s",
               .range = {.min = 0, .max = 1e6}, .note = "0 = no server scenario", .field = TS_FIELD(inference.server_qps),
               .applies = when_inference, .applies_text = "inference.enabled"});
  t.push_back({.key = "inference.server_target_p99_ms", .help = "server scenario: p99 latency target (queueing included)",
               .unit = "ms", .range = {.min = 0, .max = 3.6e6, .min_open = true},
               .field = TS_FIELD(inference.server_target_p99_ms), .applies = when_inference,
               .applies_text = "inference.enabled"});
  budget("inference.server_budget_s", "server scenario: time per rate; queries = max(min_queries, qps x budget)",
         TS_FIELD(inference.server_budget_s));
  add_generation(t);
}

bool when_sweep(const MatrixConfig& m) { return m.batch_sweep.enabled; }

// --batch-sizes auto (trainscope/batch_sweep.h); `--batch-sizes auto` sets batch_sweep.enabled
// (tools/trainscope/cmd_run.cpp).
void add_batch_sweep(std::vector<Setting>& t) {
  t.push_back({.key = "batch_sweep.enabled", .flag = "--batch-sweep",
               .help = "sweep the batch size: double it from the smallest batch size until steady samples/s rises "
                       "by less than batch_sweep.min_gain_pct, memory or the data set runs out (same as "
                       "--batch-sizes auto)",
               .field = TS_FIELD(batch_sweep.enabled)});
  t.push_back({.key = "batch_sweep.start", .noun = "batch sweep start",
               .help = "first batch size of `--batch-sizes auto` when no number is given with it", .unit = "samples",
               .range = {.min = 1, .max = kMaxBatch}, .field = TS_FIELD(batch_sweep.start), .applies = when_sweep,
               .applies_text = "batch_sweep.enabled"});
  t.push_back({.key = "batch_sweep.min_gain_pct", .flag = "--batch-sweep-min-gain", .noun = "batch sweep minimum gain",
               .help = "a doubling of the batch must raise steady samples/s by at least this much, else the sweep stops",
               .unit = "%", .range = {.min = 0, .max = 1000}, .field = TS_FIELD(batch_sweep.min_gain_pct),
               .applies = when_sweep, .applies_text = "batch_sweep.enabled"});
  t.push_back({.key = "batch_sweep.max_batch", .noun = "batch sweep maximum", .help = "largest batch size the sweep tries",
               .unit = "samples", .range = {.min = 1, .max = kMaxBatch}, .field = TS_FIELD(batch_sweep.max_batch),
               .applies = when_sweep, .applies_text = "batch_sweep.enabled"});
}

void add_tensorboard(std::vector<Setting>& t) {
  t.push_back({.key = "tensorboard.enabled", .off_flag = "--no-tensorboard",
               .help = "TensorBoard event files of every run (docs/tensorboard.md)", .field = TS_FIELD(tensorboard.enabled)});
  t.push_back({.key = "tensorboard.dir", .flag = "--tensorboard", .noun = "TensorBoard folder",
               .help = "folder for the TensorBoard event files: <dir>/<run folder name>/<run_id>/",
               .note = "\"\" = <run folder>/tensorboard", .field = TS_FIELD(tensorboard.dir)});
}

// ---- dist: data-parallel training (docs/distributed.md)
void add_dist(std::vector<Setting>& t) {
  t.push_back({.key = "dist.nproc_per_node", .flag = "--nproc-per-node", .noun = "ranks per node",
               .help = "data-parallel ranks `trainscope run` starts on this machine (one GPU each on GPU runs, the "
                       "CPU threads split between them on CPU runs); torchrun and Slurm start ranks themselves",
               .unit = "processes", .range = {.min = 1, .max = 1024}, .note = "1 = one process (no data parallelism)",
               .field = TS_FIELD(dist.nproc_per_node)});
  t.push_back({.key = "dist.timeout_s", .flag = "--dist-timeout", .noun = "distributed timeout",
               .help = "a rank that died or made no progress for this long stops the other ranks with an error "
                       "naming it",
               .unit = "s", .range = {.min = 1, .max = 3600}, .field = TS_FIELD(dist.timeout_s)});
  t.push_back({.key = "dist.bucket_mb", .flag = "--bucket-mb", .noun = "gradient bucket size",
               .help = "cap of one gradient all-reduce bucket (PyTorch DDP's bucket_cap_mb)", .unit = "MB",
               .range = {.min = 0, .max = 4096, .min_open = true}, .field = TS_FIELD(dist.bucket_mb)});
  t.push_back({.key = "dist.inject_fault_rank", .flag = "--inject-fault-rank", .noun = "fault injection rank",
               .help = "testing: this rank fails at --inject-fault-step", .range = {.min = -1, .max = 1024},
               .field = TS_FIELD(dist.inject_fault_rank), .in_file = false, .hidden = true});
  t.push_back({.key = "dist.inject_fault_step", .flag = "--inject-fault-step", .noun = "fault injection step",
               .help = "testing: the step the injected fault happens at", .range = {.min = 0, .max = 1e9},
               .field = TS_FIELD(dist.inject_fault_step), .in_file = false, .hidden = true});
  t.push_back({.key = "dist.inject_fault", .flag = "--inject-fault", .noun = "fault injection kind",
               .help = "testing: exit or hang (at the step), or sigterm-after-run (SIGTERM to itself when its run ends)",
               .range = {.choices = {"exit", "hang", "sigterm-after-run"}},
               .field = TS_FIELD(dist.inject_fault), .in_file = false, .hidden = true});
}
// ---- end dist

#undef TS_FIELD

}  // namespace

std::vector<Setting> setting_rows() {
  std::vector<Setting> t;
  add_top_level(t);
  add_data(t);
  add_language_model(t);
  add_train(t);
  add_telemetry(t);
  add_profile(t);
  add_inference(t);
  add_batch_sweep(t);
  add_tensorboard(t);
  add_dist(t);
  return t;
}

}  // namespace trainscope
