// results.json's `git_commit` names the code the binary was built from (cmake/git_commit.cmake).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "trainscope/build_info.h"
#include "trainscope/provenance.h"

namespace {

std::string output_of(const std::string& cmd) {
  std::string out;
  if (FILE* f = popen(cmd.c_str(), "r")) {
    char buf[256];
    while (fgets(buf, sizeof buf, f)) out += buf;
    pclose(f);
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

}  // namespace

// The source tree's HEAD when the tests were built, with "-dirty" when its tracked files differed
// from it. Read at configure time, it kept naming the commit the build folder was configured at
// after later commits and incremental builds (results.json said fc2e9deb59ef for 4905b0e's code).
TEST(Provenance, GitCommitIsTheSourceTreesHeadAtBuildTime) {
  const std::string git = std::string("git -C '") + TRAINSCOPE_SOURCE_DIR + "' ";
  const std::string head = output_of(git + "rev-parse --short=12 HEAD 2>/dev/null");
  const auto p = trainscope::collect_host_provenance();
  if (head.empty()) {
    EXPECT_EQ(p.git_commit, "unknown");
    return;
  }
  const bool dirty = std::system((git + "diff --quiet HEAD -- 2>/dev/null").c_str()) != 0;
  EXPECT_EQ(p.git_commit, dirty ? head + "-dirty" : head)
      << "rebuild after committing or editing: the binary must describe the code it runs";
}
