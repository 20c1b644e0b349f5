// Image decoding for the image-folder readers: JPEG through libjpeg-turbo (Debian
// libjpeg62-turbo-dev, the libjpeg API with DCT-domain scaling) when CMake found it
// (TRAINSCOPE_WITH_LIBJPEG), else through stb_image like PNG and BMP.
#include <fmt/format.h>

#include <algorithm>
#include <csetjmp>
#include <cstdio>

#include "trainscope/error.h"
#include "trainscope/input_pipeline.h"

#ifndef TRAINSCOPE_WITH_LIBJPEG
#define TRAINSCOPE_WITH_LIBJPEG 0
#endif

#if TRAINSCOPE_WITH_LIBJPEG
// jpeglib.h needs FILE and size_t declared first.
#include <jpeglib.h>
#include <jerror.h>
#endif

#define STBI_NO_STDIO
#define STBI_FAILURE_USERMSG
#define STBI_MAX_DIMENSIONS 16384
#include <stb_image.h>

namespace trainscope {

namespace {

constexpr int64_t kMaxPixels = int64_t{8192} * 8192;

#if TRAINSCOPE_WITH_LIBJPEG

// libjpeg reports fatal errors through error_exit, which must not return: jump back to decode_jpeg.
struct JpegError {
  jpeg_error_mgr mgr;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void jpeg_fail(j_common_ptr c) {
  auto* e = reinterpret_cast<JpegError*>(c->err);
  (*c->err->format_message)(c, e->message);
  std::longjmp(e->jump, 1);
}

// Warnings are quiet, except a truncated file: that is corrupt input, not a warning.
void jpeg_message(j_common_ptr c, int level) {
  if (level < 0 && c->err->msg_code == JWRN_JPEG_EOF) jpeg_fail(c);
}

// Decodes into `out`; returns "" or the reason it failed. No C++ object with a destructor is
// created between setjmp and a longjmp (std::longjmp would skip it).
std::string decode_jpeg(std::span<const uint8_t> bytes, int64_t channels, int64_t min_side, DecodedImage& out) {
  jpeg_decompress_struct cinfo;
  JpegError err;
  cinfo.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = jpeg_fail;
  err.mgr.emit_message = jpeg_message;
  err.message[0] = 0;
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    return err.message;
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, bytes.data(), static_cast<unsigned long>(bytes.size()));
  jpeg_read_header(&cinfo, TRUE);
  if (static_cast<int64_t>(cinfo.image_width) * cinfo.image_height > kMaxPixels) {
    std::snprintf(err.message, sizeof err.message, "the image declares %ux%u pixels, more than the 8192x8192 "
                  "trainscope decodes", cinfo.image_width, cinfo.image_height);
    jpeg_destroy_decompress(&cinfo);
    return err.message;
  }
  cinfo.out_color_space = channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  const int64_t shorter = std::min(cinfo.image_width, cinfo.image_height);
  cinfo.scale_num = 1;
  cinfo.scale_denom = 1;
  for (unsigned d : {8u, 4u, 2u})
    if (min_side > 0 && shorter / d >= min_side) {  // libjpeg rounds the scaled size up: >= shorter/d
      cinfo.scale_denom = d;
      break;
    }
  jpeg_start_decompress(&cinfo);
  out.width = cinfo.output_width;
  out.height = cinfo.output_height;
  out.channels = cinfo.output_components;
  out.pixels.resize(static_cast<size_t>(out.width * out.height * out.channels));
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = out.pixels.data() + static_cast<size_t>(cinfo.output_scanline) * out.width * out.channels;
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return "";
}
#endif

// PNG: every chunk's declared length must fit in the file. stb_image grows its buffer to a
// chunk's declared length before reading it, so a 100-byte file declaring a 1.4 GB chunk made
// it allocate 2 GiB (found by fuzzing). PNG spec: 8-byte signature, then chunks of
// length(4, big-endian) type(4) data(length) CRC(4).
void check_png_chunks(std::span<const uint8_t> bytes, const std::string& name) {
  static const uint8_t kPngSig[8] = {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A};
  if (bytes.size() < 8 || !std::equal(kPngSig, kPngSig + 8, bytes.begin())) return;
  size_t off = 8;
  while (off + 8 <= bytes.size()) {
    uint64_t len = (uint64_t{bytes[off]} << 24) | (uint64_t{bytes[off + 1]} << 16) | (uint64_t{bytes[off + 2]} << 8) |
                   uint64_t{bytes[off + 3]};
    if (len > bytes.size() - off - 8)
      throw_error(ErrorKind::kDataFormat,
                  fmt::format("{}: at byte offset {}: PNG chunk declares {} bytes but only {} remain (truncated or "
                              "corrupt PNG)",
                              name, off, len, bytes.size() - off - 8));
    bool iend =
        std::equal(bytes.begin() + static_cast<long>(off) + 4, bytes.begin() + static_cast<long>(off) + 8, "IEND");
    off += 8 + len + 4;
    if (iend) break;
  }
}

DecodedImage decode_stb(std::span<const uint8_t> bytes, const std::string& name, int64_t channels) {
  check_png_chunks(bytes, name);
  int w = 0, h = 0, n = 0;
  // Header first: refuse absurd dimensions before stb allocates for them (a 100-byte file can
  // declare a 16384 x 16384 image; found by fuzzing).
  if (stbi_info_from_memory(bytes.data(), static_cast<int>(bytes.size()), &w, &h, &n) &&
      static_cast<int64_t>(w) * h > kMaxPixels)
    throw_error(ErrorKind::kDataFormat,
                fmt::format("{}: the image declares {}x{} pixels, more than the 8192x8192 trainscope decodes", name, w, h));
  stbi_uc* px = stbi_load_from_memory(bytes.data(), static_cast<int>(bytes.size()), &w, &h, &n,
                                      static_cast<int>(channels));
  if (!px)
    throw_error(ErrorKind::kDataFormat,
                fmt::format("{}: cannot decode image ({}); only PNG, JPEG and BMP are supported; {}", name,
                            stbi_failure_reason() ? stbi_failure_reason() : "unknown reason", kBadImageFix));
  DecodedImage out;
  out.width = w;
  out.height = h;
  out.channels = channels;
  if (w > 0 && h > 0) out.pixels.assign(px, px + static_cast<size_t>(w) * static_cast<size_t>(h) * channels);
  stbi_image_free(px);
  if (w <= 0 || h <= 0) throw_error(ErrorKind::kDataFormat, fmt::format("{}: the image has {}x{} pixels", name, w, h));
  return out;
}

}  // namespace

DecodedImage decode_pixels(std::span<const uint8_t> bytes, const std::string& name, int64_t channels,
                           int64_t min_side) {
  if (bytes.empty()) throw_error(ErrorKind::kDataFormat, fmt::format("{}: empty image file", name));
  if (bytes.size() > (size_t{1} << 31))
    throw_error(ErrorKind::kDataFormat, fmt::format("{}: image file larger than 2 GiB", name));
  if (channels != 1 && channels != 3)
    throw_error(ErrorKind::kInvalidArgument, fmt::format("{}: {} channels requested; use 1 or 3", name, channels));
  if (jpeg_through_libjpeg() && bytes.size() >= 3 && bytes[0] == 0xFF && bytes[1] == 0xD8 && bytes[2] == 0xFF) {
#if TRAINSCOPE_WITH_LIBJPEG
    DecodedImage out;
    auto why = decode_jpeg(bytes, channels, min_side, out);
    if (!why.empty())
      throw_error(ErrorKind::kDataFormat, fmt::format("{}: cannot decode image (JPEG: {}); {}", name, why, kBadImageFix));
    if (out.width <= 0 || out.height <= 0)
      throw_error(ErrorKind::kDataFormat, fmt::format("{}: the image has {}x{} pixels", name, out.width, out.height));
    return out;
#endif
  }
  return decode_stb(bytes, name, channels);
}

bool jpeg_through_libjpeg() { return TRAINSCOPE_WITH_LIBJPEG != 0; }

}  // namespace trainscope
