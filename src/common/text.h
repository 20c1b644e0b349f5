// Small text helpers shared by every writer (one place each): UTC timestamps and CSV fields.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace trainscope {

enum class UtcFormat {
  kIso8601,  // "2026-12-01T13:09:10Z" (provenance, history rows, trace metadata)
  kFolder,   // "20261201-130910" (default run folder name)
};
/// The current time in UTC, to the second.
std::string utc_timestamp(UtcFormat format = UtcFormat::kIso8601);

/// A number with about three significant digits: 1234.5 -> "1234", 12.34 -> "12.3", 1.234 ->
/// "1.23", 0.1234 -> "0.12" (console lines, reports).
std::string format_number(double v);

/// Human units, about three significant digits: 0.5 s -> "500 ms", 4000 s -> "66.7 min" (the
/// console, the report and the summary use this one).
std::string format_duration(double seconds);

/// A rate (samples/s, images/s) as the report and summary print it, so that the console, report.md,
/// report.html and the summary show the same digits: format_number's rule, 12345.6 -> "12346",
/// 45.67 -> "45.7".
std::string format_rate(double per_s);

/// A count and its noun, singular for 1: (1, "epoch") -> "1 epoch", (2, "epoch") -> "2 epochs"
/// (report sentences; nouns whose plural is not noun + "s" need their own wording).
std::string count_of(long long n, const std::string& noun);

/// `s` with ASCII letters lower-cased, other bytes unchanged (model names, GPU names, file
/// extensions: "MLP" -> "mlp", ".JPG" -> ".jpg").
std::string ascii_lower(std::string s);

/// Levenshtein distance between a and b: the fewest single-character insertions, deletions
/// and substitutions that turn one into the other.
size_t edit_distance(std::string_view a, std::string_view b);

/// The candidate nearest to `word` by edit_distance when it is a plausible misspelling (at
/// most max(2, word.size() / 3) edits away; the first of equals), else "". For "did you mean"
/// hints: ("--modles", {"--models", "--epochs"}) -> "--models".
std::string nearest_spelling(std::string_view word, const std::vector<std::string>& candidates);

/// One CSV field (RFC 4180): quoted when it holds a comma, a quote or a line break, quotes
/// doubled; CR and LF become spaces so every record stays on one line.
std::string csv_field(const std::string& s);

}  // namespace trainscope
