// Bad-input rows: TOML configuration files (load_toml_config, validate, apply_preset).
#include "reliability/bad_input_table.h"
#include "trainscope/config.h"

namespace trainscope::bad_inputs {

// Rows: TOML configuration files.
void add_toml_rows(std::vector<Row>& t) {
  auto toml_row = [&](std::string name, std::string text, std::string mention, ErrorKind kind, std::string also) {
    t.push_back({name, [mention](D) { return mention; },
                 [text, kind](D d, S) { return kind == ErrorKind::kInvalidConfig ? load_toml(d, text)
                                                                                 : load_toml_then_validate(d, text); },
                 kind, also});
  };
  toml_row("toml_unknown_top_level_key", "epochz = 3\n", "epochz", ErrorKind::kInvalidConfig, "bad.toml");
  toml_row("toml_unknown_train_key", "[train]\noptimiser = \"adam\"\n", "train.optimiser", ErrorKind::kInvalidConfig,
           "bad.toml");
  toml_row("toml_unknown_data_key", "[data]\nfromat = \"idx\"\n", "data.fromat", ErrorKind::kInvalidConfig, "bad.toml");
  toml_row("toml_wrong_type_string_for_int", "repeats = \"two\"\n", "repeats", ErrorKind::kInvalidConfig, "must be an integer, not a string");
  toml_row("toml_wrong_type_in_list", "batch_sizes = [64, \"128\"]\n", "batch_sizes", ErrorKind::kInvalidConfig,
           "must be an integer, not a string");
  toml_row("toml_wrong_type_float_for_int", "[train]\nepochs = 2.5\n", "train.epochs", ErrorKind::kInvalidConfig,
           "must be an integer, not a float");
  toml_row("toml_data_not_a_table", "data = 3\n", "data", ErrorKind::kInvalidConfig, "table");
  toml_row("toml_syntax_error_unclosed_array", "models = [\"mlp\", \n", "bad.toml", ErrorKind::kInvalidConfig,
           "syntax error");
  toml_row("toml_syntax_error_bare_word", "[train]\noptimizer = adam\n", "bad.toml", ErrorKind::kInvalidConfig,
           "syntax error");
  toml_row("toml_syntax_error_integer_overflow", "repeats = 99999999999999999999999\n", "bad.toml",
           ErrorKind::kInvalidConfig, "syntax error");
  toml_row("toml_unknown_preset", "preset = \"fastest\"\n", "fastest", ErrorKind::kInvalidConfig, "bad.toml");
  toml_row("toml_batch_size_zero", "batch_sizes = [0]\n", "batch size 0", ErrorKind::kInvalidArgument, "out of range");
  toml_row("toml_batch_size_negative", "batch_sizes = [64, -8]\n", "batch size -8", ErrorKind::kInvalidArgument,
           "out of range");
  toml_row("toml_unknown_optimizer", "[train]\noptimizer = \"adamw\"\n", "adamw", ErrorKind::kInvalidArgument,
           "adam or sgd");
  toml_row("toml_unknown_data_format", "[data]\nformat = \"hdf5\"\n", "hdf5", ErrorKind::kInvalidArgument,
           "idx, cifar10");
  toml_row("toml_learning_rate_zero", "[train]\nlearning_rate = 0.0\n", "learning rate 0", ErrorKind::kInvalidArgument,
           "out of range");
  toml_row("toml_epochs_zero", "[train]\nepochs = 0\n", "epochs 0", ErrorKind::kInvalidArgument, "out of range");
  toml_row("toml_repeats_too_many", "repeats = 5000\n", "repeats 5000", ErrorKind::kInvalidArgument, "1..1000");
  toml_row("toml_threads_negative", "[train]\nthreads = -1\n", "threads -1", ErrorKind::kInvalidArgument,
           "out of range");
  toml_row("toml_folder_channels_two", "[data]\nformat = \"folder\"\nimage_channels = 2\n", "image channels 2",
           ErrorKind::kInvalidArgument, "1 or 3");
  toml_row("toml_folder_test_fraction_one", "[data]\nformat = \"folder\"\ntest_fraction = 1.0\n", "test fraction 1",
           ErrorKind::kInvalidArgument, "(0, 1)");
  toml_row("toml_empty_models_list", "models = []\n", "model", ErrorKind::kInvalidArgument, "--models");
  // Range errors come from the settings table: they name the value, the flag, the TOML key and the range.
  toml_row("toml_profile_active_zero", "[profile]\nactive = 0\n", "profile.active 0", ErrorKind::kInvalidArgument,
           "use 1..1000000000 steps (--profile-steps; TOML key profile.active)");
  toml_row("toml_eval_batch_size_zero", "[train]\neval_batch_size = 0\n", "evaluation batch size 0",
           ErrorKind::kInvalidArgument, "use 1..1048576 samples (--eval-batch-size; TOML key train.eval_batch_size)");
  toml_row("toml_inference_budget_over_an_hour", "[inference]\noffline_budget_s = 7200\n",
           "inference.offline_budget_s 7200", ErrorKind::kInvalidArgument, "use (0, 3600] s");
  // run_name (--name) is one folder under out_dir: never a path that leaves it.
  toml_row("toml_run_name_parent", "run_name = \"../escaped\"\n", "'../escaped'", ErrorKind::kInvalidArgument,
           "is not one safe folder name");
  toml_row("toml_run_name_absolute", "run_name = \"/abs/path\"\n", "'/abs/path'", ErrorKind::kInvalidArgument,
           "is not one safe folder name");
  toml_row("toml_run_name_dot", "run_name = \".\"\n", "'.'", ErrorKind::kInvalidArgument, "is not one safe folder name");
  toml_row("toml_run_name_two_parts", "run_name = \"a/b\"\n", "'a/b'", ErrorKind::kInvalidArgument,
           "is not one safe folder name");
  toml_row("toml_run_name_leading_dash", "run_name = \"-rf\"\n", "'-rf'", ErrorKind::kInvalidArgument, "--name");
  t.push_back({"toml_missing_file", [](D d) { return (d / "nowhere.toml").string(); },
               [](D, S in) {
                 MatrixConfig m;
                 load_toml_config(in, m);
                 return std::string();
               },
               K(ErrorKind::kIo), ""});
  t.push_back({"preset_unknown_name", [](D) { return std::string("turbo"); },
               [](D, S in) {
                 MatrixConfig m;
                 apply_preset(in, m);
                 return std::string();
               },
               K(ErrorKind::kInvalidArgument), "paper, quick"});
}

}  // namespace trainscope::bad_inputs
