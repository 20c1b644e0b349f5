// The field vocabulary: how a struct of the record or of provenance lists its fields once, in
// `fields(s, v)`, for every writer and reader to walk (trainscope/record_sections.h says how the
// list drives results.json, results.csv and run_metrics()). Each line of such a list is
//   v("name", member, Better::k..., [kLiteral], [kCsv])
// with the field's JSON name (its unit in the name), the member, its direction for comparisons
// and, optionally, kLiteral and kCsv. Nothing here depends on the record itself, so provenance (below the
// record, trainscope/provenance.h) lists its fields the same way.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace trainscope {

/// Direction of a numeric field for comparisons; kNone for descriptions and counts.
enum class Better { kNone, kHigher, kLower };

/// A 4th argument of v(...) in a fields() list: the field is written as it is, a "" string as ""
/// and an absent sub-object as null, instead of the default (null, and the key left out). The
/// run record and provenance keep the JSON form they had before the typed sections this way.
struct Literal {};
inline constexpr Literal kLiteral{};

/// A last argument of v(...) in RunRecord::fields() (trainscope/run_record.h): the field is a
/// column of results.csv at its place in the list, named as the field; a section or sub-object
/// stands for the columns of its CSV form (src/results/run_record.cpp, csv_header()).
struct CsvColumn {};
inline constexpr CsvColumn kCsv{};

/// Opaque JSON text (an object or null), kept as written.
struct JsonText {
  std::string text;  // "" = null
  bool operator==(const JsonText&) const = default;
};

using OptD = std::optional<double>;
using OptI = std::optional<int64_t>;

}  // namespace trainscope
