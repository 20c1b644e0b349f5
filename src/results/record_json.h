// JSON forms of the run record, its typed sections and the provenance (private to the
// implementation: public headers do not include nlohmann/json). Written and read through each
// struct's fields() list (trainscope/record_sections.h, run_record.h, provenance.h), so a field
// is named in one place only.
//
// Writing: an empty string is null (not given), an absent optional sub-object leaves its key
// out, an absent optional number is null. Reading is defensive: a key that is missing, null or of the wrong type leaves the field at
// its default (std::nullopt for optional fields: "not measured").
#pragma once

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "common/provenance_json.h"
#include "trainscope/record_sections.h"
#include "trainscope/run_record.h"

namespace trainscope {
namespace record_json {

template <class T>
struct is_optional : std::false_type {};
template <class T>
struct is_optional<std::optional<T>> : std::true_type {};
template <class T>
struct is_vector : std::false_type {};
template <class T>
struct is_vector<std::vector<T>> : std::true_type {};
template <class T>
struct is_optional_object : std::false_type {};
template <class T>
struct is_optional_object<std::optional<T>>
    : std::bool_constant<std::is_class_v<T> && !std::is_same_v<T, std::string>> {};
template <class T>
struct is_map : std::false_type {};
template <class T>
struct is_map<std::map<std::string, T>> : std::true_type {};

template <class T>
nlohmann::json write(const T& v);

template <class Tag, class... Tags>
inline constexpr bool kHasTag = (std::is_same_v<Tag, Tags> || ...);

struct Writer {
  nlohmann::json* out;
  // kLiteral (trainscope/fields.h): "" stays "", an absent sub-object is null. Otherwise an
  // absent sub-object (a scenario not run, no trace written) leaves its key out, as before the
  // typed sections; absent numbers are null. kCsv concerns results.csv only.
  template <class T, class... Tags>
  void operator()(const char* name, const T& v, Better, Tags...) const {
    if constexpr (kHasTag<Literal, Tags...>) {
      if constexpr (std::is_same_v<T, std::string>) (*out)[name] = v;
      else if constexpr (is_optional_object<T>::value) (*out)[name] = v ? write(*v) : nlohmann::json(nullptr);
      else (*out)[name] = write(v);
    } else {
      if constexpr (is_optional_object<T>::value)
        if (!v) return;
      (*out)[name] = write(v);
    }
  }
};

template <class T>
nlohmann::json write(const T& v) {
  if constexpr (std::is_same_v<T, JsonText>) {
    return v.text.empty() ? nlohmann::json(nullptr) : nlohmann::json::parse(v.text, nullptr, false);
  } else if constexpr (std::is_same_v<T, RunStatus>) {
    return to_string(v);
  } else if constexpr (std::is_same_v<T, std::string>) {
    return v.empty() ? nlohmann::json(nullptr) : nlohmann::json(v);  // "" = not given
  } else if constexpr (std::is_arithmetic_v<T>) {
    return nlohmann::json(v);
  } else if constexpr (is_optional<T>::value) {
    return v ? write(*v) : nlohmann::json(nullptr);
  } else if constexpr (is_vector<T>::value) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& x : v) a.push_back(write(x));
    return a;
  } else if constexpr (is_map<T>::value) {
    nlohmann::json o = nlohmann::json::object();
    for (const auto& [k, x] : v) o[k] = write(x);
    return o;
  } else {
    nlohmann::json o = nlohmann::json::object();
    T::fields(v, Writer{&o});
    return o;
  }
}

template <class T>
void read(const nlohmann::json& j, T& v);

struct Reader {
  const nlohmann::json* in;
  template <class T, class... Tags>
  void operator()(const char* name, T& v, Better, Tags...) const {
    auto it = in->find(name);
    if (it != in->end()) read(*it, v);
  }
};

template <class T>
void read(const nlohmann::json& j, T& v) {
  if constexpr (std::is_same_v<T, JsonText>) {
    v.text = j.is_null() ? std::string() : j.dump();
  } else if constexpr (std::is_same_v<T, RunStatus>) {
    if (j.is_string()) v = run_status_from_string(j.get<std::string>());  // unknown: Error(kDataFormat)
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (j.is_string()) v = j.get<std::string>();
  } else if constexpr (std::is_same_v<T, bool>) {
    if (j.is_boolean()) v = j.get<bool>();
  } else if constexpr (std::is_arithmetic_v<T>) {
    if (j.is_number() && std::isfinite(j.get<double>())) v = j.get<T>();
  } else if constexpr (is_optional<T>::value) {
    typename T::value_type x{};
    if (j.is_null()) {
      v.reset();
      return;
    }
    bool ok = true;
    if constexpr (std::is_same_v<typename T::value_type, bool>) ok = j.is_boolean();
    else if constexpr (std::is_same_v<typename T::value_type, std::string>) ok = j.is_string();
    else if constexpr (std::is_arithmetic_v<typename T::value_type>) ok = j.is_number() && std::isfinite(j.get<double>());
    else ok = j.is_object();
    if (!ok) return;
    read(j, x);
    v = std::move(x);
  } else if constexpr (is_vector<T>::value) {
    if (!j.is_array()) return;
    v.clear();
    for (const auto& e : j) {
      typename T::value_type x{};
      read(e, x);
      v.push_back(std::move(x));
    }
  } else if constexpr (is_map<T>::value) {
    if (!j.is_object()) return;
    v.clear();
    for (auto it = j.begin(); it != j.end(); ++it) read(it.value(), v[it.key()]);
  } else {
    if (!j.is_object()) return;
    T::fields(v, Reader{&j});
  }
}

/// A typed section from its JSON form (null or not an object: nullopt).
template <class T>
std::optional<T> section_from_json(const nlohmann::json& j) {
  if (!j.is_object()) return std::nullopt;
  T t;
  read(j, t);
  return t;
}

}  // namespace record_json

inline nlohmann::json to_json(const TelemetrySection& s) { return record_json::write(s); }
inline nlohmann::json to_json(const TelemetrySummary& s) { return record_json::write(s); }
inline nlohmann::json to_json(const ProfileSection& s) { return record_json::write(s); }
inline nlohmann::json to_json(const InferenceSection& s) { return record_json::write(s); }
inline nlohmann::json to_json(const ServerRun& s) { return record_json::write(s); }
inline nlohmann::json to_json(const LatencyFields& s) { return record_json::write(s); }
inline nlohmann::json to_json(const EpochRecord& s) { return record_json::write(s); }

nlohmann::json to_json(const RunRecord& r);
RunRecord run_record_from_json(const nlohmann::json& j);

/// The document every trainscope JSON results file is: {"provenance": {...}, "runs": `runs`,
/// "schema_version": N} (keys sorted, so provenance first), pretty-printed with a final newline;
/// invalid UTF-8 is replaced. results.json and inference.json both.
std::string record_document_json(const Provenance& p, nlohmann::json runs);

}  // namespace trainscope
