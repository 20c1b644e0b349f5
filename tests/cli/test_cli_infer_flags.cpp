// `trainscope infer` on a language model with bad flags and damaged checkpoints: every
// value that needs no measurement is refused before anything is loaded or written, exit 2 (the
// bad-usage exit), the message naming the flag, the value and the fix; a good inference.json in
// the output folder stays byte for byte as it was. A checkpoint whose description is missing or
// malformed, or whose .pt is truncated or has a damaged ZIP64 locator, is named as such.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "test_helpers.h"
#include "trainscope/fs.h"

namespace fs = std::filesystem;

namespace {

std::string root() { return ::testing::TempDir() + "infer_flags_" + std::to_string(getpid()); }

int run_binary(const std::vector<std::string>& args, std::string* out) {
  static int n = 0;
  const std::string log = root() + "_" + std::to_string(n++) + ".log";
  const int rc = trainscope::test::run_trainscope(args, log);
  *out = trainscope::test::read_text(log);
  return rc;
}

// A GPT of one block, width 32, trained for two steps on text without blank lines (so no
// paragraphs: --server-lengths text has nothing to draw from), once per test process.
const std::string& run_dir() {
  static std::string dir = [] {
    trainscope::remove_tree(root());
    fs::create_directories(root() + "/corpus");
    std::ofstream o(root() + "/corpus/part0.txt");
    for (int i = 0; i < 200; ++i) o << "the quick brown fox jumps over the lazy dog " << (i % 7) << ".\n";
    o.close();
    std::string out;
    const int rc = run_binary({"run", "--devices", "cpu", "-m", "gpt-mini", "--data-format", "text", "--data",
                               root() + "/corpus", "--max-steps", "2", "--lm-layers", "1", "--lm-width", "32",
                               "--lm-heads", "2", "--seq-len", "32", "-b", "4", "--warmup-steps", "0", "--min-time", "0",
                               "--eval-windows", "2", "--no-inference", "--threads", "1", "--no-progress", "--out",
                               root() + "/runs", "--name", "lm"},
                              &out);
    EXPECT_EQ(rc, 0) << out;
    return root() + "/runs/lm";
  }();
  return dir;
}

// The run's one checkpoint (.pt).
std::string checkpoint() {
  for (const auto& e : fs::directory_iterator(run_dir() + "/checkpoints"))
    if (e.path().extension() == ".pt") return e.path().string();
  ADD_FAILURE() << "no checkpoint in " << run_dir();
  return "";
}

std::vector<std::string> infer_args(const std::string& out_json, std::vector<std::string> more) {
  std::vector<std::string> a = {"infer",          "--run",   run_dir(), "--devices", "cpu", "--threads", "1",
                                "--no-telemetry", "--output", "csv",    "-o",        out_json};
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

// A good inference.json, measured once: the file the bad invocations must leave alone.
const std::string& good_json() {
  static std::string path = [] {
    (void)run_dir();  // trains first: it starts from an empty root()
    const std::string p = root() + "/good/inference.json";
    fs::create_directories(root() + "/good");
    std::string out;
    EXPECT_EQ(run_binary(infer_args(p, {"--pp", "8", "--tg", "0", "--repetitions", "1", "--gen-batches", "none"}), &out), 0)
        << out;
    return p;
  }();
  return path;
}

struct Bad {
  std::vector<std::string> flags;
  std::vector<std::string> says;  // what the message must hold: the flag, the value, the fix
};

}  // namespace

TEST(InferFlags, BadValuesExitTwoBeforeAnythingIsLoadedOrWritten) {
  const std::string good = trainscope::test::read_text(good_json());
  ASSERT_NE(good.find("\"generation\""), std::string::npos) << good;
  const std::vector<Bad> cases = {
      {{"--server-rates", "1", "--server-batching", "bogus"}, {"'bogus'", "--server-batching", "fcfs or continuous"}},
      {{"--server-rates", "1", "--server-lengths", "bogus"}, {"'bogus'", "--server-lengths", "fixed or text"}},
      {{"--gen-batch", "0"}, {"--gen-batch 0", "at least 1"}},
      {{"--server-rates", "0"}, {"--server-rates 0", "> 0"}},
      {{"--server-rates", "-1"}, {"--server-rates -1", "> 0"}},
      {{"--server-rates", "1,,2"}, {"--server-rates 1,,2: an empty item", "1,2,4"}},
      {{"--server-rates", ""}, {"--server-rates : an empty item"}},
      {{"--server-rates", "2,fast"}, {"'fast' is not a rate"}},
      {{"--server-rates", "1", "--temperature", "-1"}, {"--temperature -1", ">= 0"}},
      {{"--server-rates", "1", "--top-k", "-5"}, {"--top-k -5", ">= 0"}},
      {{"--pp", "0", "--tg", "0", "--gen-batches", "none"}, {"nothing to measure", "--server-rates"}},
      {{"--server-rates", "1", "--server-batching", "fcfs", "--server-max-batch", "4"},
       {"--server-max-batch 4", "--server-batching fcfs", "continuous"}},
      {{"--server-max-batch", "0"}, {"--server-max-batch", "0"}},
      // needs the model's context (256) or its text, still before the weights load or the file is written
      {{"--pp", "300", "--gen-batches", "none"}, {"--pp 300", "context of 256"}},
      {{"--server-rates", "1", "--server-lengths", "text"}, {"--server-lengths text", "paragraph"}},
  };
  for (const auto& c : cases) {
    std::string out;
    const int rc = run_binary(infer_args(good_json(), c.flags), &out);
    const std::string flags = ::testing::PrintToString(c.flags);
    EXPECT_EQ(rc, 2) << flags << "\n" << out;
    for (const auto& s : c.says) EXPECT_NE(out.find(s), std::string::npos) << flags << ": no '" << s << "' in\n" << out;
    EXPECT_EQ(out.find(" on cpu"), std::string::npos) << flags << ": a measurement started\n" << out;
    EXPECT_EQ(trainscope::test::read_text(good_json()), good) << flags << " changed " << good_json();
  }
}

TEST(InferFlags, AMissingOrMalformedDescriptionIsNamedAsSuch) {
  const std::string trained = checkpoint();  // trains first: it starts from an empty root()
  const std::string dir = root() + "/desc";
  fs::create_directories(dir);
  const std::string pt = dir + "/lm.pt";
  fs::copy_file(trained, pt, fs::copy_options::overwrite_existing);
  std::string out;
  // missing
  EXPECT_EQ(run_binary({"infer", "--checkpoint", pt, "--devices", "cpu", "--no-telemetry", "--pp", "8", "-o",
                        dir + "/out.json"},
                       &out),
            2);
  EXPECT_NE(out.find("description '" + dir + "/lm.json' is missing"), std::string::npos) << out;
  EXPECT_NE(out.find("copy the run folder again"), std::string::npos) << out;
  EXPECT_EQ(out.find("not a language model"), std::string::npos) << out;
  // malformed: cut in the middle
  const std::string whole = trainscope::test::read_text(fs::path(trained).replace_extension(".json").string());
  std::ofstream(dir + "/lm.json") << whole.substr(0, whole.size() / 2);
  EXPECT_EQ(run_binary({"infer", "--checkpoint", pt, "--devices", "cpu", "--no-telemetry", "--tg", "4", "-o",
                        dir + "/out.json"},
                       &out),
            2);
  EXPECT_NE(out.find("description '" + dir + "/lm.json' is malformed JSON"), std::string::npos) << out;
  EXPECT_EQ(out.find("not a language model"), std::string::npos) << out;
  EXPECT_FALSE(fs::exists(dir + "/out.json"));
}

TEST(InferFlags, ATruncatedCheckpointIsADamagedFile) {
  const std::string trained = checkpoint();  // trains first: it starts from an empty root()
  const std::string dir = root() + "/cut";
  fs::create_directories(dir);
  const std::string pt = dir + "/lm.pt";
  fs::copy_file(trained, pt, fs::copy_options::overwrite_existing);
  fs::copy_file(fs::path(trained).replace_extension(".json"), dir + "/lm.json", fs::copy_options::overwrite_existing);
  fs::resize_file(pt, fs::file_size(pt) - 200);  // the end records gone
  std::string out;
  EXPECT_EQ(run_binary({"infer", "--checkpoint", pt, "--devices", "cpu", "--no-telemetry", "--pp", "8", "-o",
                        dir + "/out.json"},
                       &out),
            2);
  EXPECT_NE(out.find("'" + pt + "' is a damaged zip file"), std::string::npos) << out;
  EXPECT_NE(out.find("truncated"), std::string::npos) << out;
  EXPECT_NE(out.find("copy the checkpoint again"), std::string::npos) << out;
  EXPECT_EQ(out.find("does not fit model"), std::string::npos) << out;
}
