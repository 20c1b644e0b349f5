#include "trainscope/config.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstring>
#include <set>
#include <string_view>
#include <nlohmann/json.hpp>
#include "toml_patched.h"

#include "trainscope/error.h"
#include "trainscope/fs.h"

namespace trainscope {

void apply_preset(const std::string& name, MatrixConfig& m) {
  if (name.empty()) return;
  if (name == "paper") {
    // arXiv 2309.02521 section III: Adam, cross-entropy, 20 epochs, batch sizes 64 and 128.
    m.models = {"mlp", "resnet18"};
    m.batch_sizes = {64, 128};
    m.train.optimizer = "adam";
    m.train.learning_rate = 1e-3;
    m.train.epochs = 20;
  } else if (name == "quick") {
    // Smoke run: a few hundred steps per cell, enough for a stable samples/s.
    m.train.epochs = 1;
    m.train.max_steps = 200;
  } else {
    throw_error(ErrorKind::kInvalidArgument,
                fmt::format("unknown preset '{}'; use one of: paper, quick", name));
  }
  m.preset = name;
}

namespace {

template <typename T>
T get_as(const toml::node& node, const std::string& file, const std::string& key) {
  if (auto v = node.value<T>()) return *v;
  throw_error(ErrorKind::kInvalidConfig,
              fmt::format("{}: key '{}' has the wrong type ({}); see README 'Configuration file'", file, key,
                          node.type() == toml::node_type::string ? "string" : "not the expected type"));
}

template <typename T>
std::vector<T> get_list(const toml::node& node, const std::string& file, const std::string& key) {
  std::vector<T> out;
  if (auto* arr = node.as_array()) {
    for (auto& el : *arr) out.push_back(get_as<T>(el, file, key));
  } else {
    out.push_back(get_as<T>(node, file, key));
  }
  return out;
}

// TOML 1.0 allows non-ASCII characters only inside strings and comments. Debian's toml++ 3.3
// reaches undefined behaviour on some non-ASCII code points in bare keys (found by fuzzing,
// tests/fuzz), so they are rejected here first, with the line number.
void reject_non_ascii_outside_strings(std::string_view text, const std::string& name) {
  enum { kCode, kComment, kBasic, kLiteral, kMlBasic, kMlLiteral } st = kCode;
  // toml++ also reaches undefined behaviour on a backslash followed by a non-ASCII character
  // inside a string (found by fuzzing); TOML allows only ASCII escape letters there anyway.
  auto bad_escape = [&](int at_line) {
    throw_error(ErrorKind::kInvalidConfig,
                fmt::format("{}:{}: invalid escape sequence in a string: a backslash must be followed by one of "
                            "b t n f r \" \\ u U (write \\\\ for a backslash)",
                            name, at_line));
  };
  int line = 1;
  // TOML files are UTF-8 and may not contain control characters other than tab, LF and CR
  // (TOML 1.0 spec). Checked here because toml++'s own error path for them reaches undefined
  // behaviour on some inputs (found by fuzzing).
  {
    int ln = 1;
    for (size_t i = 0; i < text.size(); ++i) {
      auto u = static_cast<unsigned char>(text[i]);
      if (u == '\n') ++ln;
      if ((u < 0x20 && u != '\t' && u != '\n' && u != '\r') || u == 0x7F)
        throw_error(ErrorKind::kInvalidConfig,
                    fmt::format("{}:{}: control character 0x{:02X}; TOML files may not contain control characters "
                                "other than tab and newline",
                                name, ln, u));
      if (u >= 0x80) {  // a well-formed UTF-8 sequence (RFC 3629), no overlongs or surrogates
        int n = u >= 0xF0 && u <= 0xF4 ? 3 : u >= 0xE0 && u <= 0xEF ? 2 : u >= 0xC2 && u <= 0xDF ? 1 : -1;
        bool ok = n > 0 && i + static_cast<size_t>(n) < text.size();
        for (int k = 1; ok && k <= n; ++k) ok = (static_cast<unsigned char>(text[i + static_cast<size_t>(k)]) & 0xC0) == 0x80;
        if (ok && n == 2) {
          auto b1 = static_cast<unsigned char>(text[i + 1]);
          ok = !(u == 0xE0 && b1 < 0xA0) && !(u == 0xED && b1 >= 0xA0);
        }
        if (ok && n == 3) {
          auto b1 = static_cast<unsigned char>(text[i + 1]);
          ok = !(u == 0xF0 && b1 < 0x90) && !(u == 0xF4 && b1 >= 0x90);
        }
        if (!ok)
          throw_error(ErrorKind::kInvalidConfig,
                      fmt::format("{}:{}: invalid UTF-8 byte 0x{:02X}; save the file as UTF-8", name, ln, u));
        i += static_cast<size_t>(n);
      }
    }
  }
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    auto starts = [&](std::string_view s) { return text.substr(i, s.size()) == s; };
    if (c == '\n') ++line;
    switch (st) {
      case kCode:
        if (static_cast<unsigned char>(c) >= 0x80)
          throw_error(ErrorKind::kInvalidConfig,
                      fmt::format("{}:{}: non-ASCII character outside a string or comment; in TOML only strings "
                                  "and comments may hold them (quote the key: \"...\")",
                                  name, line));
        if (c == '#') st = kComment;
        else if (starts(R"(""")")) st = kMlBasic, i += 2;
        else if (starts("'''")) st = kMlLiteral, i += 2;
        else if (c == '"') st = kBasic;
        else if (c == '\'') st = kLiteral;
        break;
      case kComment:
        if (c == '\n') st = kCode;
        break;
      case kBasic:
        if (c == '\\') {
          if (i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) >= 0x80) bad_escape(line);
          ++i;
        }
        else if (c == '"' || c == '\n') st = kCode;
        break;
      case kLiteral:
        if (c == '\'' || c == '\n') st = kCode;
        break;
      case kMlBasic:
        if (c == '\\') {
          if (i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) >= 0x80) bad_escape(line);
          ++i;
        }
        else if (starts(R"(""")")) st = kCode, i += 2;
        break;
      case kMlLiteral:
        if (starts("'''")) st = kCode, i += 2;
        break;
    }
  }
}

}  // namespace

void apply_preset_in_file(const std::string& name, MatrixConfig& m, const std::string& path) {
  try {
    apply_preset(name, m);
  } catch (const Error& e) {  // name the file: the user fixes it there, not on the command line
    if (e.kind() != ErrorKind::kInvalidArgument) throw;
    throw_error(ErrorKind::kInvalidConfig, fmt::format("{}: key 'preset': {}", path, e.what()));
  }
}

void load_toml_config(const std::string& path, MatrixConfig& m) {
  // toml++ reports a missing file as a syntax error; say what it is (a kIo problem).
  if (!file_exists(path))
    throw_error(ErrorKind::kIo, fmt::format("cannot open configuration file '{}': no such file (or not a regular "
                                            "file); check the --config path", path));
  auto bytes = read_file_bytes(path, uint64_t{16} << 20);
  std::string text(bytes.begin(), bytes.end());
  reject_non_ascii_outside_strings(text, path);
  toml::table tbl;
  try {
    tbl = toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    const auto& src = e.source();
    throw_error(ErrorKind::kInvalidConfig,
                fmt::format("{}:{}:{}: TOML syntax error: {}", path, src.begin.line, src.begin.column,
                            e.description()));
  }
  // A preset is applied first wherever it stands (toml++ iterates keys in sorted order, not in
  // file order), so every other key of the file overrides it.
  if (auto* p = tbl.get("preset")) apply_preset_in_file(get_as<std::string>(*p, path, "preset"), m, path);
  // Top-level keys and [data], [train] tables. Anything else is a typo we report.
  for (auto&& [k, node] : tbl) {
    std::string key(k.str());
    if (key == "devices") m.devices = get_list<std::string>(node, path, key);
    else if (key == "models") m.models = get_list<std::string>(node, path, key);
    else if (key == "batch_sizes") m.batch_sizes = get_list<int64_t>(node, path, key);
    else if (key == "repeats") m.repeats = get_as<int64_t>(node, path, key);
    else if (key == "out_dir") m.out_dir = get_as<std::string>(node, path, key);
    else if (key == "run_name") m.run_name = get_as<std::string>(node, path, key);
    else if (key == "preset") {
      // applied above, before the other keys
    }
    else if (key == "progress") m.progress = get_as<bool>(node, path, key);
    else if (key == "history_db") m.history_db = get_as<std::string>(node, path, key);
    else if (key == "data") {
      auto* t = node.as_table();
      if (!t) throw_error(ErrorKind::kInvalidConfig, fmt::format("{}: 'data' must be a table ([data])", path));
      for (auto&& [dk, dn] : *t) {
        std::string d(dk.str());
        auto& D = m.data;
        if (d == "format") D.format = get_as<std::string>(dn, path, "data." + d);
        else if (d == "path") D.path = get_as<std::string>(dn, path, "data." + d);
        else if (d == "image_size") D.image_size = get_as<int64_t>(dn, path, "data." + d);
        else if (d == "image_channels") D.image_channels = get_as<int64_t>(dn, path, "data." + d);
        else if (d == "test_fraction") D.test_fraction = get_as<double>(dn, path, "data." + d);
        else if (d == "synthetic_train") D.synthetic_train = get_as<int64_t>(dn, path, "data." + d);
        else if (d == "synthetic_test") D.synthetic_test = get_as<int64_t>(dn, path, "data." + d);
        else if (d == "limit_train") D.limit_train = get_as<int64_t>(dn, path, "data." + d);
        else if (d == "limit_test") D.limit_test = get_as<int64_t>(dn, path, "data." + d);
        else
          throw_error(ErrorKind::kInvalidConfig,
                      fmt::format("{}: unknown key 'data.{}'; known: format, path, image_size, image_channels, "
                                  "test_fraction, synthetic_train, synthetic_test, limit_train, limit_test",
                                  path, d));
      }
    } else if (key == "train") {
      auto* t = node.as_table();
      if (!t) throw_error(ErrorKind::kInvalidConfig, fmt::format("{}: 'train' must be a table ([train])", path));
      for (auto&& [tk, tn] : *t) {
        std::string d(tk.str());
        auto& T = m.train;
        std::string full = "train." + d;
        if (d == "optimizer") T.optimizer = get_as<std::string>(tn, path, full);
        else if (d == "learning_rate") T.learning_rate = get_as<double>(tn, path, full);
        else if (d == "momentum") T.momentum = get_as<double>(tn, path, full);
        else if (d == "optimizer_impl") T.optimizer_impl = get_as<std::string>(tn, path, full);
        else if (d == "epochs") T.epochs = get_as<int64_t>(tn, path, full);
        else if (d == "warmup_steps") T.warmup_steps = get_as<int64_t>(tn, path, full);
        else if (d == "max_steps") T.max_steps = get_as<int64_t>(tn, path, full);
        else if (d == "time_budget_s") T.time_budget_s = get_as<double>(tn, path, full);
        else if (d == "eval_batch_size") T.eval_batch_size = get_as<int64_t>(tn, path, full);
        else if (d == "seed") T.seed = static_cast<uint64_t>(get_as<int64_t>(tn, path, full));
        else if (d == "threads") T.threads = get_as<int64_t>(tn, path, full);
        else
          throw_error(ErrorKind::kInvalidConfig,
                      fmt::format("{}: unknown key 'train.{}'; known: optimizer, learning_rate, momentum, epochs, "
                                  "warmup_steps, max_steps, time_budget_s, eval_batch_size, seed, threads, optimizer_impl",
                                  path, d));
      }
    } else {
      throw_error(ErrorKind::kInvalidConfig,
                  fmt::format("{}: unknown key '{}'; known top-level keys: devices, models, batch_sizes, repeats, "
                              "out_dir, run_name, preset, progress, history_db, [data], [train]",
                              path, key));
    }
  }
}

void validate(const MatrixConfig& m) {
  auto bad = [](const std::string& msg) { throw_error(ErrorKind::kInvalidArgument, msg); };
  if (m.models.empty()) bad("no model given; use --models mlp,cnn (or resnet18, vgg11, path/to/model.pt)");
  if (m.batch_sizes.empty()) bad("no batch size given; use --batch-sizes 64,128");
  for (auto b : m.batch_sizes)
    if (b <= 0 || b > (1 << 20))
      bad(fmt::format("batch size {} is out of range; use a value from 1 to 1048576, e.g. --batch-sizes 64,128", b));
  auto no_duplicates = [&](const auto& v, const char* what) {
    for (size_t i = 0; i < v.size(); ++i)
      for (size_t j = i + 1; j < v.size(); ++j)
        if (v[i] == v[j])
          bad(fmt::format("{} '{}' is listed twice; each cell of the matrix must be unique (use --repeats to "
                          "measure a cell several times)",
                          what, fmt::format("{}", v[i])));
  };
  no_duplicates(m.models, "model");
  no_duplicates(m.batch_sizes, "batch size");
  no_duplicates(m.devices, "device");
  if (m.telemetry.enabled && !(m.telemetry.interval_s >= 0.001 && m.telemetry.interval_s <= 1.0))
    bad(fmt::format("telemetry interval {} s is out of range; use 0.001 .. 1 s (1000 .. 1 Hz), e.g. "
                    "--telemetry-interval 0.1",
                    m.telemetry.interval_s));
  const auto& pc = m.profile;
  if (pc.enabled && (pc.skip_first < 0 || pc.wait < 0 || pc.warmup < 0 || pc.active < 1 || pc.repeat < 0 ||
                     pc.top_n < 0 || pc.trace_max_bytes < 1024))
    bad("profiling schedule out of range: --profile-skip must be >= 0, --profile-steps >= 1, --profile-top >= 0");
  if (m.repeats < 1 || m.repeats > 1000) bad(fmt::format("repeats {} is out of range; use 1..1000", m.repeats));
  const auto& t = m.train;
  if (t.optimizer_impl != "auto" && t.optimizer_impl != "fused" && t.optimizer_impl != "loop")
    bad(fmt::format("unknown optimizer implementation '{}'; use auto, fused or loop", t.optimizer_impl));
  if (t.optimizer != "adam" && t.optimizer != "sgd")
    bad(fmt::format("unknown optimizer '{}'; use adam or sgd", t.optimizer));
  if (!(t.learning_rate > 0) || t.learning_rate > 10)
    bad(fmt::format("learning rate {} is out of range; use a value in (0, 10], e.g. 0.001", t.learning_rate));
  if (t.epochs < 1 || t.epochs > 100000) bad(fmt::format("epochs {} is out of range; use 1..100000", t.epochs));
  if (t.warmup_steps < 0) bad(fmt::format("warm-up steps {} must be >= 0", t.warmup_steps));
  if (t.max_steps < 0) bad(fmt::format("max steps {} must be >= 0 (0 = no limit)", t.max_steps));
  if (!(t.momentum >= 0 && t.momentum < 1)) bad(fmt::format("momentum {} must be in [0, 1)", t.momentum));
  if (!(t.time_budget_s >= 0)) bad(fmt::format("time budget {} s must be >= 0 (0 = no limit)", t.time_budget_s));
  if (t.eval_batch_size < 1) bad(fmt::format("evaluation batch size {} must be >= 1", t.eval_batch_size));
  if (t.threads < 0 || t.threads > 4096) bad(fmt::format("threads {} is out of range; use 0 (all CPUs) .. 4096", t.threads));
  if (t.nan_check_interval < 1) bad("nan_check_interval must be >= 1");
  const auto& d = m.data;
  static const std::set<std::string> kFormats = {"idx", "cifar10", "folder", "synthetic"};
  if (!kFormats.count(d.format))
    bad(fmt::format("unknown data format '{}'; use idx, cifar10, folder or synthetic", d.format));
  if (d.format == "folder") {
    if (d.image_size < 4 || d.image_size > 1024) bad(fmt::format("image size {} is out of range; use 4..1024", d.image_size));
    if (d.image_channels != 1 && d.image_channels != 3) bad(fmt::format("image channels {} must be 1 or 3", d.image_channels));
    if (!(d.test_fraction > 0 && d.test_fraction < 1)) bad(fmt::format("test fraction {} must be in (0, 1)", d.test_fraction));
  }
  if (d.format == "synthetic") {
    if (d.synthetic_train < 1 || d.synthetic_test < 1 || d.synthetic_train > 10'000'000 || d.synthetic_test > 10'000'000)
      bad("synthetic data set sizes must be 1..10000000");
    if (d.synthetic_classes < 2 || d.synthetic_classes > 1000) bad("synthetic classes must be 2..1000");
    if (d.synthetic_channels < 1 || d.synthetic_channels > 4) bad("synthetic channels must be 1..4");
    if (d.synthetic_size < 4 || d.synthetic_size > 256) bad("synthetic image size must be 4..256");
  }
  if (d.limit_train < 0 || d.limit_test < 0) bad("data limits must be >= 0 (0 = all)");
}

std::string matrix_config_to_json(const MatrixConfig& m) {
  using nlohmann::json;
  const auto& d = m.data;
  const auto& t = m.train;
  json j = {{"devices", m.devices}, {"models", m.models}, {"batch_sizes", m.batch_sizes}, {"repeats", m.repeats},
            {"out_dir", m.out_dir}, {"run_name", m.run_name}, {"preset", m.preset},
            {"data", {{"format", d.format}, {"path", d.path}, {"image_size", d.image_size},
                      {"image_channels", d.image_channels}, {"test_fraction", d.test_fraction},
                      {"synthetic_train", d.synthetic_train}, {"synthetic_test", d.synthetic_test},
                      {"synthetic_channels", d.synthetic_channels}, {"synthetic_size", d.synthetic_size},
                      {"synthetic_classes", d.synthetic_classes}, {"limit_train", d.limit_train},
                      {"limit_test", d.limit_test}}},
            {"train", {{"optimizer", t.optimizer}, {"optimizer_impl", t.optimizer_impl},
                       {"learning_rate", t.learning_rate}, {"momentum", t.momentum}, {"epochs", t.epochs},
                       {"warmup_steps", t.warmup_steps}, {"max_steps", t.max_steps},
                       {"time_budget_s", t.time_budget_s}, {"eval_batch_size", t.eval_batch_size},
                       {"seed", t.seed}, {"threads", t.threads}, {"nan_check_interval", t.nan_check_interval},
                       {"inject_nan_at_step", t.inject_nan_at_step}}},
            {"telemetry", {{"enabled", m.telemetry.enabled}, {"interval_s", m.telemetry.interval_s},
                           {"nvml_library", m.telemetry.nvml_library}}},
            {"profile", {{"enabled", m.profile.enabled}}},
            {"inference", {{"enabled", m.inference.enabled}}},
            {"history_db", m.history_db}};
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

MatrixConfig matrix_config_from_json(const std::string& text, const std::string& source) {
  using nlohmann::json;
  MatrixConfig m;
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw_error(ErrorKind::kInvalidConfig, fmt::format("{}: not valid JSON ({}); it should be the matrix.json that "
                                                       "`trainscope run` wrote into the run folder",
                                                       source, e.what()));
  }
  try {
    m.devices = j.value("devices", m.devices);
    m.models = j.value("models", m.models);
    m.batch_sizes = j.value("batch_sizes", m.batch_sizes);
    m.repeats = j.value("repeats", m.repeats);
    m.out_dir = j.value("out_dir", m.out_dir);
    m.run_name = j.value("run_name", m.run_name);
    m.preset = j.value("preset", m.preset);
    m.history_db = j.value("history_db", m.history_db);
    if (j.contains("data")) {
      const auto& d = j["data"];
      auto& D = m.data;
      D.format = d.value("format", D.format);
      D.path = d.value("path", D.path);
      D.image_size = d.value("image_size", D.image_size);
      D.image_channels = d.value("image_channels", D.image_channels);
      D.test_fraction = d.value("test_fraction", D.test_fraction);
      D.synthetic_train = d.value("synthetic_train", D.synthetic_train);
      D.synthetic_test = d.value("synthetic_test", D.synthetic_test);
      D.synthetic_channels = d.value("synthetic_channels", D.synthetic_channels);
      D.synthetic_size = d.value("synthetic_size", D.synthetic_size);
      D.synthetic_classes = d.value("synthetic_classes", D.synthetic_classes);
      D.limit_train = d.value("limit_train", D.limit_train);
      D.limit_test = d.value("limit_test", D.limit_test);
    }
    if (j.contains("train")) {
      const auto& t = j["train"];
      auto& T = m.train;
      T.optimizer = t.value("optimizer", T.optimizer);
      T.optimizer_impl = t.value("optimizer_impl", T.optimizer_impl);
      T.learning_rate = t.value("learning_rate", T.learning_rate);
      T.momentum = t.value("momentum", T.momentum);
      T.epochs = t.value("epochs", T.epochs);
      T.warmup_steps = t.value("warmup_steps", T.warmup_steps);
      T.max_steps = t.value("max_steps", T.max_steps);
      T.time_budget_s = t.value("time_budget_s", T.time_budget_s);
      T.eval_batch_size = t.value("eval_batch_size", T.eval_batch_size);
      T.seed = t.value("seed", T.seed);
      T.threads = t.value("threads", T.threads);
      T.nan_check_interval = t.value("nan_check_interval", T.nan_check_interval);
      T.inject_nan_at_step = t.value("inject_nan_at_step", T.inject_nan_at_step);
    }
    if (j.contains("telemetry")) {
      m.telemetry.enabled = j["telemetry"].value("enabled", m.telemetry.enabled);
      m.telemetry.interval_s = j["telemetry"].value("interval_s", m.telemetry.interval_s);
      m.telemetry.nvml_library = j["telemetry"].value("nvml_library", m.telemetry.nvml_library);
    }
    if (j.contains("profile")) m.profile.enabled = j["profile"].value("enabled", m.profile.enabled);
    if (j.contains("inference")) m.inference.enabled = j["inference"].value("enabled", m.inference.enabled);
  } catch (const json::exception& e) {
    throw_error(ErrorKind::kInvalidConfig, fmt::format("{}: a field has the wrong type ({})", source, e.what()));
  }
  return m;
}

}  // namespace trainscope
