#include "trainscope/config.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <limits>
#include <string_view>
#include <nlohmann/json.hpp>
#include "toml_patched.h"

#include "trainscope/error.h"
#include "trainscope/fs.h"
#include "trainscope/settings.h"
#include "trainscope/variants.h"

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

// Every configuration key is a row of the settings table (trainscope/settings.h): the TOML
// loader, matrix.json (--resume) and the unknown-key messages all read that one list. Rows with
// in_file false are written to matrix.json but are not TOML keys; in_json false rows are TOML
// keys that matrix.json leaves out.
const Setting* find_file_setting(std::string_view section, std::string_view key) {
  for (const auto& s : settings())
    if (s.in_file && s.section() == section && s.name() == key) return &s;
  return nullptr;
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
              fmt::format("{}: key '{}' must be {}{}, not {}; see docs/configuration.md (or trainscope settings)", file,
                          key, toml_type_name<T>(), std::is_same_v<T, uint64_t> ? " >= 0" : "",
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
  const Setting* s = find_file_setting(section, key);
  if (!s) return false;
  std::visit(
      [&](auto* member) {
        using T = std::decay_t<decltype(*member)>;
        if constexpr (is_vector<T>::value) *member = get_list<typename T::value_type>(node, file, s->key);
        else *member = get_as<T>(node, file, s->key);
      },
      s->get(m));
  return true;
}

std::string known_keys(std::string_view section) {
  std::vector<std::string> keys;
  std::vector<std::string> tables;
  for (const auto& s : settings()) {
    if (!s.in_file) continue;
    if (s.section() == section) keys.emplace_back(s.name());
    else if (section.empty() && (tables.empty() || tables.back() != fmt::format("[{}]", s.section())))
      tables.push_back(fmt::format("[{}]", s.section()));
  }
  for (auto& t : tables) keys.push_back(t);
  return fmt::format("{}", fmt::join(keys, ", "));
}

bool is_section(std::string_view name) {
  return !name.empty() && std::any_of(settings().begin(), settings().end(),
                                      [&](const Setting& s) { return s.section() == name; });
}

// TOML 1.0 allows non-ASCII characters only inside strings and comments, only ASCII escape
// letters, and no control characters but tab and newline. These checks were added when toml++
// reached undefined behaviour on such input (found by fuzzing); the root cause is now fixed in
// toml_patched.h, and they stay for their messages: each names the line and the fix.

// Length of the UTF-8 sequence that starts at text[i] (RFC 3629: no overlongs, no surrogates),
// or 0 when it is malformed.
size_t utf8_length(std::string_view text, size_t i) {
  auto u = static_cast<unsigned char>(text[i]);
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
  return ok ? static_cast<size_t>(n) + 1 : 0;
}

// TOML files are UTF-8 and may not contain control characters other than tab, LF and CR
// (TOML 1.0 spec). Checked here because toml++'s own error path for them reaches undefined
// behaviour on some inputs (found by fuzzing).
void reject_control_characters_and_bad_utf8(std::string_view text, const std::string& name) {
  int ln = 1;
  for (size_t i = 0; i < text.size(); ++i) {
    auto u = static_cast<unsigned char>(text[i]);
    if (u == '\n') ++ln;
    if ((u < 0x20 && u != '\t' && u != '\n' && u != '\r') || u == 0x7F)
      throw_error(ErrorKind::kInvalidConfig,
                  fmt::format("{}:{}: control character 0x{:02X}; TOML files may not contain control characters "
                              "other than tab and newline",
                              name, ln, u));
    if (u >= 0x80) {
      size_t n = utf8_length(text, i);
      if (n == 0)
        throw_error(ErrorKind::kInvalidConfig,
                    fmt::format("{}:{}: invalid UTF-8 byte 0x{:02X}; save the file as UTF-8", name, ln, u));
      i += n - 1;
    }
  }
}

// Where a scan of a TOML file stands: in code, in a comment, or in one of the four kinds of string.
enum class TomlScan { kCode, kComment, kBasic, kLiteral, kMlBasic, kMlLiteral };

// toml++ also reaches undefined behaviour on a backslash followed by a non-ASCII character
// inside a string (found by fuzzing); TOML allows only ASCII escape letters there anyway.
void check_escape(std::string_view text, size_t i, const std::string& name, int line) {
  if (i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) >= 0x80)
    throw_error(ErrorKind::kInvalidConfig,
                fmt::format("{}:{}: invalid escape sequence in a string: a backslash must be followed by one of "
                            "b t n f r \" \\ u U (write \\\\ for a backslash)",
                            name, line));
}

// One step of the scan in code: the state after text[i] (i moves past a ''' or """ opener).
TomlScan scan_code(std::string_view text, size_t& i, const std::string& name, int line) {
  char c = text[i];
  auto opens = [&](std::string_view s) { return text.substr(i, s.size()) == s ? (i += s.size() - 1, true) : false; };
  if (static_cast<unsigned char>(c) >= 0x80)
    throw_error(ErrorKind::kInvalidConfig,
                fmt::format("{}:{}: non-ASCII character outside a string or comment; in TOML only strings "
                            "and comments may hold them (quote the key: \"...\")",
                            name, line));
  if (c == '#') return TomlScan::kComment;
  if (opens("\"\"\"")) return TomlScan::kMlBasic;
  if (opens("'''")) return TomlScan::kMlLiteral;
  if (c == '"') return TomlScan::kBasic;
  if (c == '\'') return TomlScan::kLiteral;
  return TomlScan::kCode;
}

// One step of the scan inside a comment or string: the state after text[i] (i moves past an
// escaped character or a closing ''' or """).
TomlScan scan_inside(TomlScan st, std::string_view text, size_t& i, const std::string& name, int line) {
  char c = text[i];
  auto closes = [&](std::string_view s) { return text.substr(i, s.size()) == s ? (i += s.size() - 1, true) : false; };
  if ((st == TomlScan::kBasic || st == TomlScan::kMlBasic) && c == '\\') {
    check_escape(text, i, name, line);
    ++i;
    return st;
  }
  switch (st) {
    case TomlScan::kComment: return c == '\n' ? TomlScan::kCode : st;
    case TomlScan::kBasic: return c == '"' || c == '\n' ? TomlScan::kCode : st;
    case TomlScan::kLiteral: return c == '\'' || c == '\n' ? TomlScan::kCode : st;
    case TomlScan::kMlBasic: return closes("\"\"\"") ? TomlScan::kCode : st;
    case TomlScan::kMlLiteral: return closes("'''") ? TomlScan::kCode : st;
    default: return st;
  }
}

void reject_non_ascii_outside_strings(std::string_view text, const std::string& name) {
  reject_control_characters_and_bad_utf8(text, name);
  TomlScan st = TomlScan::kCode;
  int line = 1;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n') ++line;
    st = st == TomlScan::kCode ? scan_code(text, i, name, line) : scan_inside(st, text, i, name, line);
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

namespace {

void no_duplicates(const auto& v, const char* what) {
  for (size_t i = 0; i < v.size(); ++i)
    for (size_t j = i + 1; j < v.size(); ++j)
      if (v[i] == v[j])
        throw_error(ErrorKind::kInvalidArgument,
                    fmt::format("{} '{}' is listed twice; each cell of the matrix must be unique (use --repeats to "
                                "measure a cell several times)",
                                what, fmt::format("{}", v[i])));
}

// Checks that involve more than one setting (the ranges of single settings are in the table).
void validate_inference_together(const InferenceConfig& in) {
  if (in.offline_batch_sizes.empty())
    throw_error(ErrorKind::kInvalidArgument,
                "inference offline_batch_sizes is empty; give at least one batch size, e.g. [1, 64, 256] (to skip "
                "inference altogether use --no-inference)");
  // min_queries must be able to arrive before the scenario's time cap per rate,
  // max(5 x server_budget_s, 30 s) (InferenceOptions::kServerMinCapS), or it measures nothing.
  const double cap_s = std::max(5 * in.server_budget_s, 30.0);
  if (in.server_qps > 0 && static_cast<double>(in.min_queries) / in.server_qps > cap_s)
    throw_error(ErrorKind::kInvalidArgument,
                fmt::format("inference server_qps {} is too low: {} queries (min_queries) would take {:.0f} s to "
                            "arrive, longer than the {:.0f} s a rate may run; use a rate of at least {:.3g} "
                            "queries/s, lower min_queries or raise server_budget_s",
                            in.server_qps, in.min_queries, static_cast<double>(in.min_queries) / in.server_qps,
                            cap_s, static_cast<double>(in.min_queries) / cap_s));
}

// The warm-up and the cosine decay together (train/lr_schedule.h): the decay ends after the
// warm-up, at a rate not above the peak.
void validate_lr_schedule(const TrainConfig& t) {
  if (t.lr_decay_steps > 0 && t.lr_decay_steps <= t.lr_warmup_steps)
    throw_error(ErrorKind::kInvalidArgument,
                fmt::format("--lr-decay-steps (TOML train.lr_decay_steps) = {} must be above --lr-warmup-steps = {}: the "
                            "cosine decay runs from the end of the warm-up to that step; raise it or set it to 0 (no decay)",
                            t.lr_decay_steps, t.lr_warmup_steps));
  if (t.lr_decay_steps > 0 && t.lr_min > t.learning_rate)
    throw_error(ErrorKind::kInvalidArgument,
                fmt::format("--lr-min (TOML train.lr_min) = {} is above the learning rate {}: the decay ends at lr_min; "
                            "give a value at most --lr",
                            t.lr_min, t.learning_rate));
}

}  // namespace

std::vector<std::string> ignored_settings(const MatrixConfig& m) {
  std::vector<std::string> out;
  for (const auto& s : settings())
    if (s.applies && !s.applies(m) && !s.hidden && s.value_text(m) != s.default_text())
      out.push_back(fmt::format("{} = {} has no effect: it applies only when {} (TOML key {})",
                                s.long_flag().empty() ? s.key : s.long_flag(), s.value_text(m), s.applies_text, s.key));
  return out;
}

void validate(const MatrixConfig& m) {
  if (m.models.empty())
    throw_error(ErrorKind::kInvalidArgument, "no model given; use --models mlp,cnn (or resnet18, vgg11, vit-s, vit-ti, gpt-mini, path/to/model.pt)");
  if (m.batch_sizes.empty()) throw_error(ErrorKind::kInvalidArgument, "no batch size given; use --batch-sizes 64,128");
  for (const auto& s : settings())
    if (!s.applies || s.applies(m)) s.check(m);
  no_duplicates(m.models, "model");
  no_duplicates(m.batch_sizes, "batch size");
  no_duplicates(m.devices, "device");
  no_duplicates(m.data.seq_lens, "sequence length");
  validate_lr_schedule(m.train);
  // variants: "bf16+graphs" and "graphs+bf16" are one variant; [] is the default set
  // (default_variants: eager, plus graphs with a GPU)
  std::vector<std::string> canonical;
  for (const auto& v : m.train.variants) canonical.push_back(parse_variant(v, "--variants").name());
  no_duplicates(canonical, "variant");
  if (m.inference.enabled) validate_inference_together(m.inference);  // before training, not after it
}

namespace {

// Types are checked before converting: nlohmann casts a float to an integer member without a
// range check (undefined behaviour for 1e30), so a float where an integer belongs is an error.
template <typename T>
bool json_fits(const nlohmann::json& v) {
  if constexpr (std::is_same_v<T, std::string>) return v.is_string();
  else if constexpr (std::is_same_v<T, bool>) return v.is_boolean();
  else if constexpr (std::is_same_v<T, double>) return v.is_number();
  else if constexpr (std::is_unsigned_v<T>) return v.is_number_unsigned();
  else
    return v.is_number_integer() &&
           (!v.is_number_unsigned() || v.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()));
}

template <typename T>
bool json_fits_member(const nlohmann::json& v) {
  if constexpr (is_vector<T>::value)
    return v.is_array() && std::all_of(v.begin(), v.end(), [](const auto& el) { return json_fits<typename T::value_type>(el); });
  else return json_fits<T>(v);
}

// The object that holds a setting in matrix.json (the top level or its section), or null when
// the section is missing (an older matrix.json: the defaults stay).
const nlohmann::json* json_section(const nlohmann::json& j, std::string_view section, const std::string& source) {
  if (section.empty()) return &j;
  auto it = j.find(std::string(section));
  if (it == j.end()) return nullptr;
  if (!it->is_object())
    throw_error(ErrorKind::kInvalidConfig,
                fmt::format("{}: '{}' must be an object, not {}; it should be the matrix.json that `trainscope "
                            "run` wrote (delete the entry to use the defaults)",
                            source, section, it->type_name()));
  return &*it;
}

void read_json_setting(const Setting& s, const nlohmann::json& j, MatrixConfig& m, const std::string& source) {
  const nlohmann::json* obj = json_section(j, s.section(), source);
  if (!obj) return;
  auto it = obj->find(std::string(s.name()));
  if (it == obj->end()) return;
  std::visit(
      [&](auto* member) {
        using T = std::decay_t<decltype(*member)>;
        if (!json_fits_member<T>(*it))
          throw_error(ErrorKind::kInvalidConfig,
                      fmt::format("{}: field '{}' has the wrong type ({}: {}); it should be the matrix.json that "
                                  "`trainscope run` wrote (delete the field to use the default)",
                                  source, s.key, it->type_name(), it->dump().substr(0, 40)));
        it->get_to(*member);
      },
      s.get(m));
}

}  // namespace

std::string matrix_config_to_json(const MatrixConfig& m) {
  nlohmann::json j = nlohmann::json::object();
  MatrixConfig copy = m;  // Setting::get hands out pointers for writing too
  for (const auto& s : settings()) {
    if (!s.in_json) continue;
    auto& slot = s.section().empty() ? j[std::string(s.name())] : j[std::string(s.section())][std::string(s.name())];
    std::visit([&](auto* member) { slot = *member; }, s.get(copy));
  }
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
  for (const auto& s : settings())
    if (s.in_json) read_json_setting(s, j, m, source);
  return m;
}

}  // namespace trainscope
