// The stb_image / stb_image_resize implementations (Debian libstb-dev headers), in their own
// translation unit so that sanitizer exceptions apply to third-party code only: stb_image
// calls memcpy(NULL, ..., 0) for a PNG whose first IDAT chunk is empty (benign, but UBSan's
// nonnull-attribute check reports it; found by tests/fuzz), and stb_image_resize converts a
// NaN filter weight to int for some degenerate scale factors (float-cast-overflow; the output
// pixels stay uint8 and in bounds). See workload/sources.cmake.
#define STB_IMAGE_IMPLEMENTATION
#define STBI_NO_STDIO
#define STBI_FAILURE_USERMSG
#define STBI_MAX_DIMENSIONS 16384
#include <stb_image.h>
#define STB_IMAGE_RESIZE_IMPLEMENTATION
#include <stb_image_resize.h>
