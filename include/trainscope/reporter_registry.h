// Reporters by name, as google/benchmark picks a BenchmarkReporter by the name given to
// --benchmark_format (CreateReporter): a program lists its outputs once, as named entries in the
// order the matrix is to call them, and each entry makes its reporter for one invocation or says
// that it does not apply (nullptr: --no-tensorboard, a data-parallel rank other than 0).
// `trainscope run`'s table is run_reporters() in tools/trainscope/cmd_run.cpp; a new output is one
// entry there (CONTRIBUTING.md#adding-a-setting-a-record-field-or-a-reporter).
//
// `Context` is what the entries read and where they keep what they make (the invocation's
// settings, its reporters' storage): an entry returns a pointer that `Context` owns, so one
// reporter can hand its notices to another (the console) and the caller can read one after the
// matrix (the report's input). Errors: an entry whose name is already taken, or an empty name,
// is a bug (TS_CHECK).
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "trainscope/error.h"
#include "trainscope/reporter.h"

namespace trainscope {

template <class Context>
class ReporterRegistry {
 public:
  using Make = std::function<Reporter*(Context&)>;

  /// Appends an entry: `name` (unique, e.g. "results"), `what` (one line: what it writes), `make`.
  ReporterRegistry& add(std::string name, std::string what, Make make) {
    TS_CHECK(!name.empty() && !find_entry(name), "reporter name empty or registered twice: " + name);
    entries_.push_back({std::move(name), std::move(what), std::move(make)});
    return *this;
  }

  /// The names in registration order (the order the matrix calls them).
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& e : entries_) out.push_back(e.name);
    return out;
  }

  /// The `what` line of `name`; "" when no entry has that name.
  std::string what(const std::string& name) const {
    const Entry* e = find_entry(name);
    return e ? e->what : std::string();
  }

  /// Every entry's reporter for `ctx`, in registration order; the entries that do not apply
  /// (make returned nullptr) are left out.
  std::vector<Reporter*> make(Context& ctx) const {
    std::vector<Reporter*> out;
    for (const auto& e : entries_)
      if (Reporter* r = e.make(ctx)) out.push_back(r);
    return out;
  }

 private:
  struct Entry {
    std::string name, what;
    Make make;
  };
  const Entry* find_entry(const std::string& name) const {
    for (const auto& e : entries_)
      if (e.name == name) return &e;
    return nullptr;
  }
  std::vector<Entry> entries_;
};

}  // namespace trainscope
