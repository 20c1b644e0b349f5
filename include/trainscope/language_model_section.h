// The language-model section of a run record (docs/language-models.md): present exactly when the
// run's task is causal language modelling. Definitions:
//   tokens/s          = steady samples/s x seq_len (every position of a window is one predicted
//                       token; nanoGPT and llm.c count training throughput the same way);
//   loss              = mean next-token cross-entropy, nats per token;
//   perplexity        = exp(loss) (Jelinek et al. 1977; the usual LM definition);
//   bits per byte     = loss / ln 2 when every token is one byte (text data: byte tokens), the
//                       measure of enwik8 / text8 results;
//   time to target    = --target-loss X: the training time, tokens and device energy until a
//                       validation loss first at or below X (evaluation time excluded), the LM
//                       form of time-to-accuracy (docs/variants.md#time-to-accuracy);
//   training FLOPs    = 6 N + 12 L d T per token (PaLM, Chowdhery et al. 2022, appendix B; N
//                       without the position embedding), so MFU is nanoGPT's estimate_mfu.
#pragma once

#include <optional>
#include <string>

#include "trainscope/fields.h"

namespace trainscope {

struct LanguageModelSection {
  int64_t seq_len = 0;                     // tokens per window (T), the sample of this task
  int64_t vocab_size = 0;                  // the data's vocabulary
  int64_t model_vocab_size = 0;            // the model's output width (padded; workload/model.h)
  std::string tokenizer;                   // "bytes" (text) | "uint16 token ids" (tokens)
  std::string attention;                   // the attention implementation that ran (workload/gpt.h)
  std::string loss;                        // the training loss: "fused" (no logits) | "full" (train.lm_loss)
  std::optional<int64_t> layers, d_model, heads, context;  // built-in models' shape
  std::optional<double> train_flops_per_token;  // 6 N + 12 L d T
  std::optional<double> steady_tokens_per_s;    // headline window
  std::optional<double> train_loss;             // last epoch's mean, nats per token
  std::optional<double> val_loss;               // last evaluation, nats per token
  std::optional<double> val_perplexity;         // exp(val_loss)
  std::optional<double> val_bits_per_byte;      // byte tokens only: val_loss / ln 2
  std::optional<double> val_token_accuracy_pct; // next tokens predicted exactly (argmax), %
  // --target-loss (absent without one)
  std::optional<double> target_loss;            // the requested validation loss, nats per token
  std::optional<bool> target_loss_reached;
  std::optional<double> time_to_target_loss_s;  // training time until the evaluation that reached it
  std::optional<int64_t> tokens_to_target_loss; // training tokens until then
  std::optional<int64_t> steps_to_target_loss;  // optimizer steps until then
  std::optional<double> energy_to_target_loss_j;  // the run's device over that time, from telemetry
  std::optional<double> best_val_loss;          // lowest validation loss seen (reached or the best miss)
  std::optional<int64_t> target_loss_end_ns;    // matrix clock when the training that reached it ended
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v("seq_len", s.seq_len, Better::kNone);
    v("vocab_size", s.vocab_size, Better::kNone);
    v("model_vocab_size", s.model_vocab_size, Better::kNone);
    v("tokenizer", s.tokenizer, Better::kNone, kLiteral);
    v("attention", s.attention, Better::kNone, kLiteral);
    v("loss", s.loss, Better::kNone, kLiteral);
    v("layers", s.layers, Better::kNone);
    v("d_model", s.d_model, Better::kNone);
    v("heads", s.heads, Better::kNone);
    v("context", s.context, Better::kNone);
    v("train_flops_per_token", s.train_flops_per_token, Better::kNone);
    v("steady_tokens_per_s", s.steady_tokens_per_s, Better::kHigher);
    v("train_loss", s.train_loss, Better::kLower);
    v("val_loss", s.val_loss, Better::kLower);
    v("val_perplexity", s.val_perplexity, Better::kLower);
    v("val_bits_per_byte", s.val_bits_per_byte, Better::kLower);
    v("val_token_accuracy_pct", s.val_token_accuracy_pct, Better::kHigher);
    v("target_loss", s.target_loss, Better::kNone);
    v("target_loss_reached", s.target_loss_reached, Better::kNone);
    v("time_to_target_loss_s", s.time_to_target_loss_s, Better::kLower);
    v("tokens_to_target_loss", s.tokens_to_target_loss, Better::kLower);
    v("steps_to_target_loss", s.steps_to_target_loss, Better::kLower);
    v("energy_to_target_loss_j", s.energy_to_target_loss_j, Better::kLower);
    v("best_val_loss", s.best_val_loss, Better::kLower);
    v("target_loss_end_ns", s.target_loss_end_ns, Better::kNone);
  }
};

}  // namespace trainscope
