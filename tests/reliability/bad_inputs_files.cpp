// Bad-input rows: files (read_file_bytes: size limit, gzip bomb, a folder given as a file).
#include "reliability/bad_input_table.h"
#include "trainscope/fs.h"

namespace trainscope::bad_inputs {

// Rows: files.
void add_files_rows(std::vector<Row>& t) {
  t.push_back({"file_over_size_limit", [](D d) { return write_bytes(d / "big.bin", Bytes(4096, 0)).string(); },
               [](D, S in) {
                 read_file_bytes(in, 1024);
                 return std::string();
               },
               K(ErrorKind::kDataFormat), "more than the limit"});
  t.push_back({"file_is_a_folder", [](D d) { fs::create_directories(d / "dir.bin"); return (d / "dir.bin").string(); },
               [](D, S in) {
                 read_file_bytes(in);
                 return std::string();
               },
               K(ErrorKind::kIo), "not a regular file"});
  t.push_back({"gzip_bomb_over_limit", [](D d) { return write_gzip(d / "bomb.gz", Bytes(1 << 20, 0)).string(); },
               [](D, S in) {
                 read_file_bytes(in, 4096);
                 return std::string();
               },
               K(ErrorKind::kDataFormat), "decompresses to more than"});
}

}  // namespace trainscope::bad_inputs
