// Bad-input rows: the fuzzers' findings (tests/fuzz/crashes/, bench/RESULTS.md "Fuzzing"), each
// fixed in its reader.
#include <span>

#include "reliability/bad_input_table.h"
#include "trainscope/dataset.h"
#include "trainscope/fs.h"

namespace trainscope::bad_inputs {

// Rows: fuzzer findings.
void add_fuzz_findings_rows(std::vector<Row>& t) {
  // fuzz_decode_image: a PNG whose first IDAT chunk is empty makes stb_image (Debian libstb)
  // call memcpy(NULL, src, 0), which UBSan reports (nonnull-attribute).
  t.push_back({"fuzz_png_zero_length_idat", [](D) { return std::string("zero-idat.png"); },
               [](D, S in) {
                 auto b = read_file_bytes(std::string(TS_FIXTURES_DIR) + "/../fuzz/crashes/decode_image_png_zero_length_idat");
                 decode_image(std::span<const uint8_t>(b).subspan(1), in, 8, 3);
                 return std::string();
               },
               K(ErrorKind::kDataFormat), ""});
  // fuzz_toml_config: U+FEEF (bytes EF BB AF) inside a bare key reaches TOML_UNREACHABLE in toml++'s
  // unicode tables (Debian's toml++): undefined behaviour, not a parse error.
  t.push_back({"fuzz_toml_non_ascii_in_bare_key", [](D) { return std::string("bad.toml"); },
               [](D d, S) { return load_toml(d, "\nrep\xEF\xBB\xAFwre = 2T\n"); }, K(ErrorKind::kInvalidConfig), ""});

  // fuzz_toml_config (second run): a backslash followed by a non-ASCII character inside a
  // multi-line string also reaches toml++'s TOML_UNREACHABLE; rejected by the pre-check.
  t.push_back({"fuzz_toml_escape_non_ascii", [](D) { return std::string("bad.toml"); },
               [](D d, S) { return load_toml(d, "[data]\nformat = \"\"\"\\\xC9\x97 x\"\"\"\n"); },
               K(ErrorKind::kInvalidConfig), ""});
  // fuzz_toml_config (third run): a control character inside a string sends toml++'s error path
  // into undefined behaviour; control characters and malformed UTF-8 are rejected first.
  t.push_back({"fuzz_toml_control_char", [](D) { return std::string("bad.toml"); },
               [](D d, S) { return load_toml(d, "models = \"ml\x12p\"\n"); }, K(ErrorKind::kInvalidConfig), ""});
  // fuzz_toml_config (fourth run): a non-ASCII letter after a malformed value, which toml++ scans
  // as a possible value terminator: TOML_UNREACHABLE in toml++ 3.3 (issue #190/#295), fixed by
  // src/config/toml_patched.h. Now an ordinary syntax error.
  t.push_back({"fuzz_toml_u_fef7_after_bad_value", [](D) { return std::string("bad.toml"); },
               [](D d, S) { return load_toml(d, "badch_ =5555m'\xEF\xBB\xB7" "c.l"); }, K(ErrorKind::kInvalidConfig), ""});
  // fuzz_toml_config (fifth run): a float too large for int64 where an integer belongs; toml++'s
  // value<int64_t>() converted it with undefined behaviour. Integers are now read exactly.
  t.push_back({"fuzz_toml_huge_float_for_integer", [](D) { return std::string("bad.toml"); },
               [](D d, S) { return load_toml(d, "[data]\nformat = \"fole\"\nimage_size = 8888888888888888888881.2\n"); },
               K(ErrorKind::kInvalidConfig), "must be an integer, not a float"});
  t.push_back({"toml_invalid_utf8", [](D) { return std::string("bad.toml"); },
               [](D d, S) { return load_toml(d, "# caf\xE9\nmodels = [\"mlp\"]\n"); }, K(ErrorKind::kInvalidConfig), ""});
  // fuzz_decode_image (second run): a ~100-byte PNG whose chunks make stb_image realloc 2 GiB.
  t.push_back({"fuzz_png_huge_declared", [](D) { return std::string("huge.png"); },
               [](D, S in) {
                 auto b = read_file_bytes(std::string(TS_FIXTURES_DIR) + "/../fuzz/crashes/decode_image_png_huge_declared");
                 decode_image(std::span<const uint8_t>(b).subspan(1), in, 8, 3);
                 return std::string();
               },
               K(ErrorKind::kDataFormat), ""});
}

}  // namespace trainscope::bad_inputs
