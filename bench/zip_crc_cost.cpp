// The cost of the CRC-32 check of a .pt file's zip members (src/common/zip_crc.h) against the
// time LibTorch takes to read the same bytes: the check alone, best of 5, on a file given on
// the command line (make one of 100 MB with Debian's python3-torch:
//   /usr/bin/python3 -c "import torch; m=torch.nn.Linear(5000,5000); torch.jit.save(torch.jit.script(m),'/tmp/big.pt')"
// ). The first pass reads the file into the page cache and is reported apart (a cold read).
//
//   build/zip_crc_cost FILE.pt
#include <chrono>
#include <cstdio>

#include "common/zip_crc.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: zip_crc_cost FILE.pt\n");
    return 2;
  }
  using Clock = std::chrono::steady_clock;
  double best = 1e30;
  trainscope::ZipCheck res;
  for (int i = 0; i < 6; ++i) {
    const auto t0 = Clock::now();
    res = trainscope::check_zip_crcs(argv[1], "");
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    if (i == 0) std::printf("first pass (page cache cold or warm): %.3f s\n", s);
    else if (s < best) best = s;
  }
  std::printf("%s: %lld members, %.1f MB checked, best of 5: %.3f s, %.0f MB/s\n", argv[1],
              static_cast<long long>(res.members), static_cast<double>(res.bytes) / 1e6, best,
              static_cast<double>(res.bytes) / 1e6 / best);
  return 0;
}
