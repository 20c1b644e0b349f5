// The bad-input table's row type and the builders its sections share
// (CONTRIBUTING.md#the-bad-input-table). test_bad_inputs.cpp runs the table; each
// bad_inputs_<section>.cpp adds the rows of one kind of input (add_<section>_rows below).
// Torch-free: the table builds in the ASan+UBSan and TSan builds.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "trainscope/error.h"

namespace trainscope::bad_inputs {

namespace fs = std::filesystem;

/// One bad input, the reader that meets it and the outcome expected.
struct Row {
  std::string name;
  /// Writes the input under the row's folder and returns what the message must name
  /// (usually the file path; a key or value for config rows; "" for bare parsers).
  std::function<std::string(const fs::path& dir)> build;
  /// Feeds the input to the reader. Throwing readers throw; non-throwing ones return the
  /// "unavailable/dropped" reason ("" = the input was accepted, which fails the row).
  std::function<std::string(const fs::path& dir, const std::string& input)> call;
  /// Expected error kind; nullopt = no exception, a non-empty reason instead.
  std::optional<ErrorKind> kind;
  /// Further text the message or reason must contain ("" = none).
  std::string also;
  /// Non-empty: a fuzzer finding whose fix has not landed yet; the row is skipped with this note.
  std::string pending = {};
};

// Shorthands the rows are written in.
using D = const fs::path&;
using S = const std::string&;
inline std::optional<ErrorKind> K(ErrorKind k) { return k; }
inline const std::optional<ErrorKind> kSoft;  // telemetry: unavailable/dropped with a reason

// ---------------------------------------------------------------------------------------
// Builders shared by the sections (bad_input_builders.cpp)
// ---------------------------------------------------------------------------------------

using Bytes = std::vector<uint8_t>;

/// Writes `b` (creating the parent folders) and returns `p`.
fs::path write_bytes(const fs::path& p, const Bytes& b);
fs::path write_text(const fs::path& p, const std::string& s);
/// Writes `b` gzip-compressed.
fs::path write_gzip(const fs::path& p, const Bytes& b);
Bytes read_back(const fs::path& p);

/// Writes `text` to `dir`/bad.toml and loads it (load_toml_config); returns "" if accepted.
std::string load_toml(const fs::path& dir, const std::string& text);
/// As load_toml, then validate() (the range checks).
std::string load_toml_then_validate(const fs::path& dir, const std::string& text);

// ---------------------------------------------------------------------------------------
// The sections, in the table's order (one file each)
// ---------------------------------------------------------------------------------------

void add_toml_rows(std::vector<Row>& t);            // bad_inputs_config.cpp
void add_idx_headers_rows(std::vector<Row>& t);     // bad_inputs_idx.cpp
void add_idx_contents_rows(std::vector<Row>& t);    // bad_inputs_idx.cpp
void add_cifar_rows(std::vector<Row>& t);           // bad_inputs_cifar.cpp
void add_image_folder_rows(std::vector<Row>& t);    // bad_inputs_image_folder.cpp
void add_files_rows(std::vector<Row>& t);           // bad_inputs_files.cpp
void add_telemetry_rows(std::vector<Row>& t);       // bad_inputs_telemetry.cpp
void add_fuzz_findings_rows(std::vector<Row>& t);   // bad_inputs_fuzz_findings.cpp

}  // namespace trainscope::bad_inputs
