// Model names as the CLI takes them and as run ids and file names show them (torch-free).
#pragma once

#include <string>
#include <vector>

namespace trainscope {

/// True when `model` names a TorchScript file rather than a built-in model: it ends in .pt,
/// .pth or .ts, or contains a '/'.
bool is_torchscript_path(const std::string& model);

/// The model part of the run ids of a matrix, one per entry of `models`, in list order: a
/// built-in's name, a TorchScript file's stem ("/x/mlp.pt" -> "mlp"). An entry whose name an
/// earlier entry already has gets the first free suffix "-2", "-3", ... ("mlp,/x/mlp.pt" ->
/// "mlp", "mlp-2"), so no two models of a matrix share run ids, checkpoints or traces. It
/// depends on the list alone: --resume (the same list, from matrix.json) finds the same ids.
std::vector<std::string> run_id_model_names(const std::vector<std::string>& models);

}  // namespace trainscope
