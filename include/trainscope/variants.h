// Execution variants: how one cell of the matrix executes its training step (docs/variants.md).
// A variant is a matrix dimension like the batch size: `--variants eager,bf16,graphs+bf16`
// (TOML train.variants) runs every cell once per variant and records the variant in the run
// record (`variant`, part of the run id except for eager).
//
// Names: "eager" (LibTorch's default: fp32, NCHW, one kernel launch per operator) or a '+'
// combination of the techniques below (order free; written in this canonical order):
//   graphs        the whole training step captured once as a CUDA graph and replayed (CUDA only)
//   bf16          autocast to bfloat16 for the forward pass (CPU and CUDA; no grad scaler)
//   tf32          TF32 tensor cores for fp32 matrix products and convolutions (CUDA only)
//   channels_last 4-D parameters and inputs in NHWC memory layout (models with convolutions)
//   threadsN      N intra-op CPU threads for this run instead of --threads (CPU only; N in 1..4096):
//                 every usable CPU is not always a CPU's fastest count (docs/variants.md#cpu-threads)
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace trainscope {

struct Variant {
  bool graphs = false, bf16 = false, tf32 = false, channels_last = false;
  int64_t threads = 0;  // threadsN: intra-op threads of a CPU run; 0 = the run's --threads

  /// The canonical name: "eager" when no technique is on, else the techniques joined by '+'
  /// in the order graphs, bf16, tf32, channels_last, threadsN ("graphs+bf16", "bf16+threads8").
  std::string name() const;
  bool eager() const { return !graphs && !bf16 && !tf32 && !channels_last && threads == 0; }
  /// Techniques that need a CUDA device (graphs, tf32).
  bool gpu_only() const { return graphs || tf32; }
  bool operator==(const Variant&) const = default;
};

/// The on/off technique names a variant may combine, in canonical order (threadsN, which takes
/// a number, comes after them).
const std::vector<std::string>& variant_techniques();
/// The largest N of threadsN (the settings table's range of --threads).
inline constexpr int64_t kMaxVariantThreads = 4096;

/// Parses "eager", "bf16", "graphs+bf16", ... (case-sensitive, no spaces). Throws
/// Error(kInvalidArgument) naming the value, `where` (e.g. "--variants; TOML key train.variants"),
/// the valid names and an example when a part is unknown, repeated, empty, or "eager" is
/// combined with a technique.
Variant parse_variant(const std::string& text, std::string_view where);

/// Why `v` does not apply to a run on `device` ("cpu", "cuda:0") of a model that has (or has
/// not) 4-D parameters (convolutions), e.g. "not applicable on cpu: graphs needs a CUDA device",
/// "not applicable on cuda:0: threads8 sets a CPU run's intra-op threads";
/// "" when it applies. In a data-parallel run (`data_parallel`: the process is a rank of a
/// c10d job, docs/distributed.md) graphs does not apply: the captured step would replay without
/// the gradient all-reduce that runs from autograd hooks on the host (src/dist/grad_sync.h).
std::string variant_not_applicable(const Variant& v, const std::string& device, bool model_has_4d_params,
                                   bool data_parallel = false);

/// Throws Error(kInvalidArgument) naming --variants when a GPU-only variant (graphs, tf32) is
/// asked for and every device of `devices` (resolved: "cpu", "cuda:N") is a CPU, unless the
/// device list is the default (`devices_given` false: cpu plus every GPU found), where those
/// cells are recorded as not applicable instead. Checked by the matrix and, before it starts
/// ranks, by the `--nproc-per-node` launcher.
void check_gpu_only_variants(const std::vector<std::string>& variants, const std::vector<std::string>& devices,
                             bool devices_given);

/// The variants of a matrix that names none (train.variants = [], the default): those a fair
/// CPU-vs-GPU verdict needs, i.e. eager everywhere and, when `devices` (resolved) hold a CUDA
/// device, the whole-step CUDA graph ("graphs"), which removes the per-kernel launch cost that
/// makes small models look faster on the CPU in eager (docs/variants.md#default-variants).
std::vector<std::string> default_variants(const std::vector<std::string>& devices);

/// The run id suffix of a variant: "" for eager, "-bf16", "-graphs+bf16" otherwise.
std::string variant_run_id_suffix(const std::string& variant);

/// How reports and compare name a workload with its variant: "cnn" (eager), "cnn [bf16]".
/// Cells of different variants are different workloads: never repeats of one another.
std::string model_with_variant(const std::string& model, const std::string& variant);
/// The inverse: {"cnn", "bf16"} from "cnn [bf16]", {"cnn", "eager"} from "cnn".
std::pair<std::string, std::string> split_model_variant(const std::string& label);

}  // namespace trainscope
