#include <fmt/format.h>
#include <fmt/ranges.h>

#include <string_view>

#include "trainscope/error.h"
#include "workload/model.h"

namespace trainscope {

namespace {

// The last non-empty line of an error message: the TorchScript interpreter's message is its
// traceback followed by e.g. "RuntimeError: mat1 and mat2 shapes cannot be multiplied ...".
std::string last_line(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) text.remove_suffix(1);
  auto nl = text.rfind('\n');
  return std::string(nl == std::string_view::npos ? text : text.substr(nl + 1));
}

torch::Tensor forward_one(Model& model, const torch::Tensor& x, const std::string& what, const std::string& shape) {
  auto fail = [&](std::string_view raised) {
    throw_error(ErrorKind::kModel,
                fmt::format("{} cannot take the data's samples of shape {}: {}; give a model made for inputs of "
                            "N x {} (batch first), or the data it was made for (--data, --data-format)",
                            what, shape, last_line(raised), fmt::join(x.sizes().slice(1), " x ")));
  };
  try {
    torch::NoGradGuard ng;
    model.set_training(false);
    return model.forward(x.narrow(0, 0, 1));
  } catch (const Error&) {
    throw;
  } catch (const c10::Error& e) {
    fail(e.what_without_backtrace());
  } catch (const std::exception& e) {  // the interpreter rethrows operator errors as std::runtime_error
    fail(e.what());
  }
  return {};
}

}  // namespace

namespace {

// A language model's logits: [1, T, V] with V at least the data's vocabulary (a built-in pads it).
void check_lm_logits(const torch::Tensor& out, int64_t T, int64_t vocab, const std::string& what) {
  if (out.dim() == 3 && out.size(0) == 1 && out.size(1) == T && (vocab <= 0 || out.size(2) >= vocab)) return;
  throw_error(ErrorKind::kModel,
              fmt::format("{} returns shape {} for one window of {} tokens; a language model must return [1, {}, V] "
                          "logits (V >= the data's vocabulary of {}) for int64 token ids [1, {}]",
                          what, fmt::join(out.sizes().vec(), "x"), T, T, vocab, T));
}

}  // namespace

void check_model_fits(Model& model, const torch::Tensor& x, int64_t classes, bool need_trainable,
                      const std::string& what) {
  const bool tokens = x.dim() == 2 && x.scalar_type() == torch::kLong;
  TS_CHECK((x.dim() == 4 || tokens) && x.size(0) >= 1,
           "check_model_fits needs N x C x H x W inputs or N x T token ids with N >= 1");
  const std::string shape = fmt::format("{}", fmt::join(x.sizes().slice(1), "x"));
  if (need_trainable && model.parameter_count() == 0)
    throw_error(ErrorKind::kModel,
                fmt::format("{} has no trainable parameters (none requires a gradient), so there is nothing to "
                            "train; give a model with parameters (a module frozen by torch.jit.freeze has none: "
                            "save it without freezing)",
                            what));
  auto out = forward_one(model, x, what, shape);
  if (tokens) return check_lm_logits(out, x.size(1), classes, what);
  if (out.dim() != 2 || out.size(0) != 1 || (classes > 0 && out.size(1) != classes))
    throw_error(ErrorKind::kModel,
                fmt::format("{} returns shape {} for one sample of shape {}; expected [1, {}] logits{}", what,
                            fmt::join(out.sizes().vec(), "x"), shape, classes > 0 ? std::to_string(classes) : "classes",
                            classes > 0 ? fmt::format(" for the {} classes of the data", classes) : ""));
}

}  // namespace trainscope
