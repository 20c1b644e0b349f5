#include "trainscope/config.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <limits>
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

// Every configuration key, once: the TOML loader, matrix.json (--resume) and the unknown-key
// messages all come from this list. `v(section, key, member)`; section "" is the top level.
// Keys for which not_in_file() holds are written to matrix.json but are not TOML settings;
// not_in_json() keys are TOML settings that matrix.json leaves out.
template <typename M, typename V>
void for_each_field(M& m, V&& v) {
  v("", "devices", m.devices);
  v("", "models", m.models);
  v("", "batch_sizes", m.batch_sizes);
  v("", "repeats", m.repeats);
  v("", "out_dir", m.out_dir);
  v("", "run_name", m.run_name);
  v("", "preset", m.preset);
  v("", "progress", m.progress);
  v("", "history_db", m.history_db);
  auto& d = m.data;
  v("data", "format", d.format);
  v("data", "path", d.path);
  v("data", "image_size", d.image_size);
  v("data", "image_channels", d.image_channels);
  v("data", "test_fraction", d.test_fraction);
  v("data", "synthetic_train", d.synthetic_train);
  v("data", "synthetic_test", d.synthetic_test);
  v("data", "synthetic_channels", d.synthetic_channels);
  v("data", "synthetic_size", d.synthetic_size);
  v("data", "synthetic_classes", d.synthetic_classes);
  v("data", "limit_train", d.limit_train);
  v("data", "limit_test", d.limit_test);
  auto& t = m.train;
  v("train", "optimizer", t.optimizer);
  v("train", "optimizer_impl", t.optimizer_impl);
  v("train", "learning_rate", t.learning_rate);
  v("train", "momentum", t.momentum);
  v("train", "epochs", t.epochs);
  v("train", "warmup_steps", t.warmup_steps);
  v("train", "max_steps", t.max_steps);
  v("train", "time_budget_s", t.time_budget_s);
  v("train", "eval_batch_size", t.eval_batch_size);
  v("train", "seed", t.seed);
  v("train", "threads", t.threads);
  v("train", "nan_check_interval", t.nan_check_interval);
  v("train", "inject_nan_at_step", t.inject_nan_at_step);
  auto& te = m.telemetry;
  v("telemetry", "enabled", te.enabled);
  v("telemetry", "interval_s", te.interval_s);
  v("telemetry", "nvml_library", te.nvml_library);
  v("telemetry", "proc_root", te.proc_root);
  v("telemetry", "sys_root", te.sys_root);
  auto& p = m.profile;
  v("profile", "enabled", p.enabled);
  v("profile", "skip_first", p.skip_first);
  v("profile", "wait", p.wait);
  v("profile", "warmup", p.warmup);
  v("profile", "active", p.active);
  v("profile", "repeat", p.repeat);
  v("profile", "record_shapes", p.record_shapes);
  v("profile", "profile_memory", p.profile_memory);
  v("profile", "with_flops", p.with_flops);
  v("profile", "trace_max_bytes", p.trace_max_bytes);
  v("profile", "top_n", p.top_n);
  auto& i = m.inference;
  v("inference", "enabled", i.enabled);
  v("inference", "single_stream_budget_s", i.single_stream_budget_s);
  v("inference", "min_queries", i.min_queries);
  v("inference", "offline_batch_sizes", i.offline_batch_sizes);
  v("inference", "offline_budget_s", i.offline_budget_s);
  v("inference", "server_qps", i.server_qps);
  v("inference", "server_target_p99_ms", i.server_target_p99_ms);
  v("inference", "server_budget_s", i.server_budget_s);
  v("", "command_line", m.command_line);  // provenance of the first session, for --resume
}

// Kept in matrix.json so a resumed matrix behaves the same, but not TOML keys: the testing hook
// inject_nan_at_step, and the command line of the first session (provenance).
bool not_in_file(std::string_view section, std::string_view key) {
  return (section == "train" && key == "inject_nan_at_step") || (section.empty() && key == "command_line");
}

// Display settings of one invocation, not of the matrix: not written to matrix.json, so a
// resumed matrix shows a progress bar when the terminal it runs on has one.
bool not_in_json(std::string_view section, std::string_view key) { return section.empty() && key == "progress"; }

std::string full_key(std::string_view section, std::string_view key) {
  return section.empty() ? std::string(key) : fmt::format("{}.{}", section, key);
}

template <typename T>
constexpr const char* toml_type_name() {
  if constexpr (std::is_same_v<T, std::string>) return "a string";
  else if constexpr (std::is_same_v<T, bool>) return "true or false";
  else if constexpr (std::is_same_v<T, double>) return "a number";
  else if constexpr (std::is_integral_v<T>) return "an integer";
  else return "a value";
}

const char* toml_node_name(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a float";
    case toml::node_type::boolean: return "a boolean";
    case toml::node_type::array: return "an array";
    case toml::node_type::table: return "a table";
    default: return "a date or time";
  }
}

template <typename T>
T get_as(const toml::node& node, const std::string& file, const std::string& key) {
  if constexpr (std::is_same_v<T, uint64_t>) {  // seeds: toml++ integers are int64
    auto v = node.value_exact<int64_t>();
    if (v && *v >= 0) return static_cast<uint64_t>(*v);
  } else if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, bool> || std::is_same_v<T, std::string>) {
    if (auto v = node.value_exact<T>()) return *v;
  } else {
    if (auto v = node.value<T>()) return *v;  // double: an integer is accepted too (lr = 1)
  }
  throw_error(ErrorKind::kInvalidConfig,
              fmt::format("{}: key '{}' must be {}{}, not {}; see README 'Configuration file'", file, key,
                          toml_type_name<T>(), std::is_same_v<T, uint64_t> ? " >= 0" : "",
                          std::is_same_v<T, uint64_t> && node.is_integer() ? "a negative one" : toml_node_name(node)));
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

template <typename T>
struct is_vector : std::false_type {};
template <typename T>
struct is_vector<std::vector<T>> : std::true_type {};

// Sets the member named section.key from a TOML node; false when no such key exists.
bool set_from_toml(MatrixConfig& m, std::string_view section, std::string_view key, const toml::node& node,
                   const std::string& file) {
  if (not_in_file(section, key)) return false;
  bool found = false;
  for_each_field(m, [&](std::string_view s, std::string_view k, auto& member) {
    if (found || s != section || k != key) return;
    found = true;
    using T = std::decay_t<decltype(member)>;
    if constexpr (is_vector<T>::value) member = get_list<typename T::value_type>(node, file, full_key(s, k));
    else member = get_as<T>(node, file, full_key(s, k));
  });
  return found;
}

std::string known_keys(std::string_view section) {
  MatrixConfig m;
  std::vector<std::string> keys;
  std::vector<std::string> tables;
  for_each_field(m, [&](std::string_view s, std::string_view k, auto&) {
    if (not_in_file(s, k)) return;
    if (s == section) keys.emplace_back(k);
    else if (section.empty() && (tables.empty() || tables.back() != fmt::format("[{}]", s)))
      tables.push_back(fmt::format("[{}]", s));
  });
  for (auto& t : tables) keys.push_back(t);
  return fmt::format("{}", fmt::join(keys, ", "));
}

bool is_section(std::string_view name) {
  MatrixConfig m;
  bool yes = false;
  for_each_field(m, [&](std::string_view s, std::string_view, auto&) { yes = yes || (!s.empty() && s == name); });
  return yes;
}

// TOML 1.0 allows non-ASCII characters only inside strings and comments, only ASCII escape
// letters, and no control characters but tab and newline. These checks were added when toml++
// reached undefined behaviour on such input (found by fuzzing); the root cause is now fixed in
// toml_patched.h, and they stay for their messages: each names the line and the fix.
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

void load_toml_config(const std::string& path, MatrixConfig& m, const std::string& preset_override) {
  // toml++ reports a missing file as a syntax error; say what it is (a kIo problem).
  if (!file_exists(path))
    throw_error(ErrorKind::kIo, fmt::format("cannot open configuration file '{}': no such file (or not a regular "
                                            "file); check the --config path", path));
  auto bytes = read_file_bytes(path, uint64_t{16} << 20);
  std::string text(bytes.begin(), bytes.end());
  if (text.rfind("\xEF\xBB\xBF", 0) == 0) text.erase(0, 3);  // a UTF-8 byte order mark (some editors write one)
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
  if (!preset_override.empty()) apply_preset(preset_override, m);
  else if (auto* p = tbl.get("preset")) apply_preset_in_file(get_as<std::string>(*p, path, "preset"), m, path);
  // Top-level keys and the [data], [train], [telemetry], [profile], [inference] tables, all from
  // for_each_field. Anything else is a typo we report, with the keys that exist.
  for (auto&& [k, node] : tbl) {
    std::string key(k.str());
    if (key == "preset") continue;  // applied above, before the other keys
    if (is_section(key)) {
      auto* t = node.as_table();
      if (!t)
        throw_error(ErrorKind::kInvalidConfig,
                    fmt::format("{}: '{}' must be a table: write [{}] on its own line, then its keys", path, key, key));
      for (auto&& [sk, sn] : *t) {
        std::string sub(sk.str());
        if (!set_from_toml(m, key, sub, sn, path))
          throw_error(ErrorKind::kInvalidConfig, fmt::format("{}: unknown key '{}.{}'; known in [{}]: {}", path, key,
                                                             sub, key, known_keys(key)));
      }
    } else if (!set_from_toml(m, "", key, node, path)) {
      throw_error(ErrorKind::kInvalidConfig,
                  fmt::format("{}: unknown key '{}'; known top-level keys: {}", path, key, known_keys("")));
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
  if (pc.enabled) {
    auto at_least = [&](const char* key, const char* flag, int64_t v, int64_t min) {
      if (v < min)
        bad(fmt::format("profile.{} {} is out of range: it must be >= {}{}", key, v, min,
                        *flag ? fmt::format(" ({})", flag) : std::string()));
    };
    at_least("skip_first", "--profile-skip", pc.skip_first, 0);
    at_least("wait", "", pc.wait, 0);
    at_least("warmup", "", pc.warmup, 0);
    at_least("active", "--profile-steps", pc.active, 1);
    at_least("repeat", "", pc.repeat, 0);  // 0: repeat the cycle until the run ends
    at_least("top_n", "--profile-top", pc.top_n, 0);
    at_least("trace_max_bytes", "", pc.trace_max_bytes, 1024);
    // Step counts beyond a billion are typos, and their sum would overflow int64.
    for (auto [key, v] : {std::pair{"skip_first", pc.skip_first}, {"wait", pc.wait}, {"warmup", pc.warmup},
                          {"active", pc.active}, {"repeat", pc.repeat}})
      if (v > 1'000'000'000) bad(fmt::format("profile.{} {} is out of range: at most 1000000000 steps", key, v));
  }
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
  const auto& in = m.inference;
  if (in.enabled) {  // checked before training, not when inference starts after it
    if (!(in.single_stream_budget_s > 0 && in.single_stream_budget_s <= 3600))
      bad(fmt::format("inference single_stream_budget_s {} must be in (0, 3600] s", in.single_stream_budget_s));
    if (in.min_queries < 1 || in.min_queries > 10'000'000)
      bad(fmt::format("inference min_queries {} must be 1..10000000", in.min_queries));
    if (!(in.server_budget_s > 0 && in.server_budget_s <= 3600))
      bad(fmt::format("inference server_budget_s {} must be in (0, 3600] s", in.server_budget_s));
    if (!(in.offline_budget_s > 0 && in.offline_budget_s <= 3600))
      bad(fmt::format("inference offline_budget_s {} must be in (0, 3600] s", in.offline_budget_s));
    for (auto b : in.offline_batch_sizes)
      if (b < 1 || b > (1 << 20))
        bad(fmt::format("inference offline batch size {} is out of range; use 1..1048576, e.g. [1, 64, 256]", b));
    if (in.offline_batch_sizes.empty())
      bad("inference offline_batch_sizes is empty; give at least one batch size, e.g. [1, 64, 256] (to skip "
          "inference altogether use --no-inference)");
    if (!(in.server_qps >= 0 && in.server_qps <= 1e6))
      bad(fmt::format("inference server_qps {} must be 0 (no server scenario) or a rate up to 1000000 queries/s",
                      in.server_qps));
    // min_queries must be able to arrive before the scenario's time cap per rate,
    // max(5 x server_budget_s, 30 s) (InferenceOptions::kServerMinCapS), or it measures nothing.
    const double cap_s = std::max(5 * in.server_budget_s, 30.0);
    if (in.server_qps > 0 && static_cast<double>(in.min_queries) / in.server_qps > cap_s)
      bad(fmt::format("inference server_qps {} is too low: {} queries (min_queries) would take {:.0f} s to arrive, "
                      "longer than the {:.0f} s a rate may run; use a rate of at least {:.3g} queries/s, lower "
                      "min_queries or raise server_budget_s",
                      in.server_qps, in.min_queries, static_cast<double>(in.min_queries) / in.server_qps, cap_s,
                      static_cast<double>(in.min_queries) / cap_s));
    if (!(in.server_target_p99_ms > 0 && in.server_target_p99_ms <= 3.6e6))
      bad(fmt::format("inference server_target_p99_ms {} must be in (0, 3600000] ms", in.server_target_p99_ms));
  }
}

std::string matrix_config_to_json(const MatrixConfig& m) {
  nlohmann::json j = nlohmann::json::object();
  for_each_field(m, [&](std::string_view s, std::string_view k, const auto& member) {
    if (not_in_json(s, k)) return;
    if (s.empty()) j[std::string(k)] = member;
    else j[std::string(s)][std::string(k)] = member;
  });
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
  if (!j.is_object())
    throw_error(ErrorKind::kInvalidConfig, fmt::format("{}: not a JSON object; it should be the matrix.json that "
                                                       "`trainscope run` wrote into the run folder",
                                                       source));
  for_each_field(m, [&](std::string_view s, std::string_view k, auto& member) {
    if (not_in_json(s, k)) return;
    const json* obj = &j;
    if (!s.empty()) {
      auto it = j.find(std::string(s));
      if (it == j.end()) return;  // missing (an older matrix.json): keep the defaults
      if (!it->is_object())
        throw_error(ErrorKind::kInvalidConfig,
                    fmt::format("{}: '{}' must be an object, not {}; it should be the matrix.json that `trainscope "
                                "run` wrote (delete the entry to use the defaults)",
                                source, s, it->type_name()));
      obj = &*it;
    }
    auto it = obj->find(std::string(k));
    if (it == obj->end()) return;
    // Types are checked before converting: nlohmann casts a float to an integer member without a
    // range check (undefined behaviour for 1e30), so a float where an integer belongs is an error.
    auto fits = [](const json& v, const auto& like) {
      using T = std::decay_t<decltype(like)>;
      if constexpr (std::is_same_v<T, std::string>) return v.is_string();
      else if constexpr (std::is_same_v<T, bool>) return v.is_boolean();
      else if constexpr (std::is_same_v<T, double>) return v.is_number();
      else if constexpr (std::is_unsigned_v<T>) return v.is_number_unsigned();
      else return v.is_number_integer() && (!v.is_number_unsigned() || v.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()));
    };
    bool ok;
    using T = std::decay_t<decltype(member)>;
    if constexpr (is_vector<T>::value) {
      ok = it->is_array();
      if (ok)
        for (const auto& el : *it) ok = ok && fits(el, typename T::value_type{});
    } else {
      ok = fits(*it, T{});
    }
    if (!ok)
      throw_error(ErrorKind::kInvalidConfig,
                  fmt::format("{}: field '{}' has the wrong type ({}: {}); it should be the matrix.json that "
                              "`trainscope run` wrote (delete the field to use the default)",
                              source, full_key(s, k), it->type_name(), it->dump().substr(0, 40)));
    it->get_to(member);
  });
  return m;
}

}  // namespace trainscope
