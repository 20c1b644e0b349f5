// The builders the bad-input table's sections share (bad_input_table.h).
#include <zlib.h>

#include <fstream>
#include <iterator>

#include "reliability/bad_input_table.h"
#include "trainscope/config.h"

namespace trainscope::bad_inputs {

fs::path write_bytes(const fs::path& p, const Bytes& b) {
  fs::create_directories(p.parent_path());
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  return p;
}
fs::path write_text(const fs::path& p, const std::string& s) {
  return write_bytes(p, Bytes(s.begin(), s.end()));
}
fs::path write_gzip(const fs::path& p, const Bytes& b) {
  fs::create_directories(p.parent_path());
  gzFile f = gzopen(p.c_str(), "wb");
  gzwrite(f, b.data(), static_cast<unsigned>(b.size()));
  gzclose(f);
  return p;
}
Bytes read_back(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(f), {});
}

std::string load_toml(const fs::path& dir, const std::string& text) {
  auto p = write_text(dir / "bad.toml", text);
  MatrixConfig m;
  load_toml_config(p.string(), m);
  return {};
}
std::string load_toml_then_validate(const fs::path& dir, const std::string& text) {
  auto p = write_text(dir / "bad.toml", text);
  MatrixConfig m;
  load_toml_config(p.string(), m);
  validate(m);
  return {};
}

}  // namespace trainscope::bad_inputs
