// Writes report.md and report.html for a run folder (used by the headless-Chromium test, which
// runs without the LibTorch CLI): report_fixture_html RUN_DIR OUT_DIR
#include <cstdio>

#include "trainscope/error.h"
#include "trainscope/report.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s RUN_DIR OUT_DIR\n", argv[0]);
    return 2;
  }
  try {
    auto f = trainscope::write_report(trainscope::load_run_folder(argv[1]), argv[2]);
    std::printf("%s\n", f.html_path.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "report_fixture_html: %s\n", e.what());
    return 1;
  }
  return 0;
}
