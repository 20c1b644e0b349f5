// The stb_image implementation (Debian libstb-dev headers), in their own
// translation unit so that sanitizer exceptions apply to third-party code only: stb_image
// calls memcpy(NULL, ..., 0) for a PNG whose first IDAT chunk is empty (benign, but UBSan's
// nonnull-attribute check reports it; found by tests/fuzz), and float-cast-overflow is off too
// for it. Resizing is trainscope's own code (image_folder.cpp): stb_image_resize read out of
// bounds for some degenerate images under the fuzzer. See workload/sources.cmake.
#define STB_IMAGE_IMPLEMENTATION
#define STBI_NO_STDIO
#define STBI_FAILURE_USERMSG
#define STBI_MAX_DIMENSIONS 16384
#include <stb_image.h>
