// The bad-input table (CONTRIBUTING.md#the-bad-input-table): every row builds one bad input in a fresh temporary folder,
// feeds it to the public reader that would see it in a run, and expects exactly one outcome:
//
//  * readers that throw (config, data sets, files): trainscope::Error of the listed kind whose
//    message names the input (the file, key or value) and, where listed, says what was wrong;
//  * telemetry sources and /proc, sysfs parsers, which never throw: "unavailable" or "dropped"
//    with a reason (SourceProbe::reason, SampleBatch::Drop::reason) or an empty optional.
//
// Anything else (a different kind, another exception type, silent acceptance) fails the row.
// "Nothing crashed or leaked" is checked by running this binary under ASan+UBSan (LeakSanitizer
// at exit), see CONTRIBUTING.md#sanitizer-builds; the table is torch-free so it builds there.
// Every crash the fuzzers (tests/fuzz) find is added as a row (bad_inputs_fuzz_findings.cpp).
//
// This file runs the table; the rows are written one section a file, bad_inputs_<section>.cpp
// (config, idx, cifar, image_folder, files, telemetry, fuzz_findings), in the builders and the
// row type of bad_input_table.h.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "reliability/bad_input_table.h"
#include "trainscope/error.h"
#include "trainscope/fs.h"

namespace trainscope::bad_inputs {

// gtest prints a failing parameter; show the row name, not its bytes (found by argument-dependent
// lookup, so it sits in Row's namespace).
void PrintTo(const Row& row, std::ostream* os) { *os << row.name; }

namespace {

/// The whole table: the sections' rows (bad_input_table.h) in order.
std::vector<Row> rows() {
  std::vector<Row> t;
  add_toml_rows(t);
  add_idx_headers_rows(t);
  add_idx_contents_rows(t);
  add_cifar_rows(t);
  add_image_folder_rows(t);
  add_files_rows(t);
  add_telemetry_rows(t);
  add_fuzz_findings_rows(t);
  // Checkpoint descriptions: read_checkpoint_description (src/infer/checkpoint.h) needs LibTorch,
  // so the malformed-description row lives with the inference tests, not in this torch-free table.
  return t;
}

class BadInput : public ::testing::TestWithParam<Row> {};

TEST_P(BadInput, FailsWithTheExpectedKindAndNamesTheInput) {
  const Row& row = GetParam();
  if (!row.pending.empty()) GTEST_SKIP() << "pending fix: " << row.pending;
  fs::path dir = fs::temp_directory_path() / ("ts_bad_inputs_" + std::to_string(::getpid())) / row.name;
  trainscope::remove_tree(dir);
  fs::create_directories(dir);
  std::string input = row.build(dir);

  std::optional<ErrorKind> got_kind;
  std::string message;
  try {
    message = row.call(dir, input);
  } catch (const Error& e) {
    got_kind = e.kind();
    message = e.what();
  } catch (const std::exception& e) {
    FAIL() << row.name << ": expected trainscope::Error, got " << typeid(e).name() << ": " << e.what();
  }

  if (row.kind) {
    ASSERT_TRUE(got_kind) << row.name << ": the bad input was accepted (expected Error("
                          << to_string(*row.kind) << "))";
    EXPECT_EQ(to_string(*got_kind), to_string(*row.kind)) << row.name << ": " << message;
  } else {
    ASSERT_FALSE(got_kind) << row.name << ": a telemetry reader threw (" << message << "); it must report instead";
    EXPECT_FALSE(message.empty()) << row.name << ": the bad input was accepted without a reason";
  }
  if (!input.empty()) EXPECT_NE(message.find(input), std::string::npos) << "message does not name '" << input << "': " << message;
  if (!row.also.empty()) EXPECT_NE(message.find(row.also), std::string::npos) << "message lacks '" << row.also << "': " << message;
  trainscope::remove_tree(dir);
}

INSTANTIATE_TEST_SUITE_P(Table, BadInput, ::testing::ValuesIn(rows()),
                         [](const ::testing::TestParamInfo<Row>& i) { return i.param.name; });

TEST(BadInputTable, HasAtLeastThirtyRows) { EXPECT_GE(rows().size(), 30u); }

}  // namespace

}  // namespace trainscope::bad_inputs
