// Bad-input rows: image folders and image decoding.
#include "reliability/bad_input_table.h"
#include "trainscope/dataset.h"

namespace trainscope::bad_inputs {

namespace {

/// 2x2 24-bit BMP (stb_image decodes it); the smallest valid image we can write by hand.
Bytes tiny_bmp() {
  Bytes v = {'B', 'M'};
  auto le32 = [&](uint32_t x) {
    for (int s = 0; s < 32; s += 8) v.push_back(static_cast<uint8_t>(x >> s));
  };
  auto le16 = [&](uint16_t x) {
    v.push_back(static_cast<uint8_t>(x));
    v.push_back(static_cast<uint8_t>(x >> 8));
  };
  le32(14 + 40 + 16);  // file size: rows are padded to 4 bytes (2*3 -> 8)
  le32(0);
  le32(14 + 40);
  le32(40);  // BITMAPINFOHEADER
  le32(2);
  le32(2);
  le16(1);
  le16(24);
  le32(0);
  le32(16);
  le32(2835);
  le32(2835);
  le32(0);
  le32(0);
  for (int row = 0; row < 2; ++row) {
    for (int px = 0; px < 6; ++px) v.push_back(static_cast<uint8_t>(40 * row + px));
    v.push_back(0);
    v.push_back(0);
  }
  return v;
}

}  // namespace

// Rows: image folders.
void add_image_folder_rows(std::vector<Row>& t) {
  auto folder_call = [](D, S in) {
    std::vector<std::string> names;
    read_image_folder(in, 8, 3, &names);
    return std::string();
  };
  t.push_back({"folder_missing", [](D d) { return (d / "no-such-folder").string(); }, folder_call, K(ErrorKind::kIo),
               "does not exist"});
  t.push_back({"folder_is_a_file", [](D d) { return write_text(d / "a-file", "x").string(); }, folder_call,
               K(ErrorKind::kIo), "not a folder"});
  t.push_back({"folder_no_class_folders",
               [](D d) {
                 write_bytes(d / "imgs" / "loose.bmp", tiny_bmp());
                 return (d / "imgs").string();
               },
               folder_call, K(ErrorKind::kDataFormat), "no class sub-folders"});
  t.push_back({"folder_no_images",
               [](D d) {
                 write_text(d / "imgs" / "cat" / "notes.txt", "not an image");
                 fs::create_directories(d / "imgs" / "dog");
                 return (d / "imgs").string();
               },
               folder_call, K(ErrorKind::kDataFormat), "no .png/.jpg/.jpeg/.bmp images"});
  t.push_back({"folder_undecodable_image_named",
               [](D d) {
                 write_bytes(d / "imgs" / "cat" / "a.bmp", tiny_bmp());
                 return write_text(d / "imgs" / "dog" / "broken.png", "this is not a PNG").string();
               },
               [](D d, S) {
                 read_image_folder((d / "imgs").string(), 8, 3, nullptr);
                 return std::string();
               },
               K(ErrorKind::kDataFormat), "cannot decode image"});
  t.push_back({"folder_truncated_png",
               [](D d) {
                 Bytes b = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 13, 'I', 'H', 'D', 'R', 0, 0, 0, 2};
                 return write_bytes(d / "imgs" / "cat" / "cut.png", b).string();
               },
               [](D d, S) {
                 read_image_folder((d / "imgs").string(), 8, 1, nullptr);
                 return std::string();
               },
               K(ErrorKind::kDataFormat), "truncated"});
  t.push_back({"image_empty_bytes", [](D) { return std::string("empty.jpg"); },
               [](D, S in) {
                 decode_image({}, in, 8, 3);
                 return std::string();
               },
               K(ErrorKind::kDataFormat), "empty image file"});
}

}  // namespace trainscope::bad_inputs
