# Third-party libraries. Each one is here for work outside trainscope's own
# purpose (measuring training and inference); why each is there:
# CONTRIBUTING.md#third-party-libraries-and-why-each-is-there.
find_package(Threads REQUIRED)
find_package(fmt REQUIRED)                 # formatting console tables and messages
find_package(nlohmann_json 3.9 REQUIRED)   # results.json, run records
find_package(ZLIB REQUIRED)                # .gz IDX files, gzip of raw samples and traces
find_package(SQLite3 REQUIRED)             # run history database
find_package(CLI11 CONFIG REQUIRED)        # command-line parsing (tools only)

# toml++: used header-only so the same sources build against Debian's package and
# a bare include folder on the GPU host.
find_path(TOMLPP_INCLUDE_DIR toml++/toml.h REQUIRED)
add_library(ts_tomlplusplus INTERFACE)
target_include_directories(ts_tomlplusplus SYSTEM INTERFACE ${TOMLPP_INCLUDE_DIR})
target_compile_definitions(ts_tomlplusplus INTERFACE TOML_HEADER_ONLY=1 TOML_EXCEPTIONS=1)

# stb_image / stb_image_resize (Debian libstb-dev): PNG/JPEG decoding for image folders.
find_path(STB_INCLUDE_DIR stb_image.h PATH_SUFFIXES stb REQUIRED)
add_library(ts_stb INTERFACE)
target_include_directories(ts_stb SYSTEM INTERFACE ${STB_INCLUDE_DIR})
# libjpeg-turbo (Debian libjpeg62-turbo-dev): JPEG decoding with DCT-domain downscaling for the
# streaming input pipeline, several times faster than stb_image's JPEG decoder. Optional: without
# it JPEG goes through stb_image (slower, no downscaled decoding).
find_package(JPEG)
if(NOT JPEG_FOUND)
  message(WARNING "trainscope: libjpeg-turbo not found: JPEG images are decoded by stb_image (slower); "
                  "install libjpeg62-turbo-dev (scripts/install-deps.sh)")
endif()

if(TRAINSCOPE_WITH_TORCH)
  # LibTorch: Debian's libtorch-dev (CPU), a Python PyTorch install
  # (CMAKE_PREFIX_PATH=$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)'))
  # or an unpacked LibTorch folder (CMAKE_PREFIX_PATH=/path/to/libtorch).
  # Torch's CUDA config sets CMAKE_CUDA_ARCHITECTURES to OFF (its TORCH_CUDA_ARCH_LIST rules
  # instead); trainscope's own kernel keeps the architectures asked for on the command line.
  set(TRAINSCOPE_CUDA_ARCHITECTURES "${CMAKE_CUDA_ARCHITECTURES}")
  find_package(Torch REQUIRED)
  # TorchConfig adds its flags (e.g. -D_GLIBCXX_USE_CXX11_ABI) to TORCH_CXX_FLAGS.
  separate_arguments(_ts_torch_flags UNIX_COMMAND "${TORCH_CXX_FLAGS}")
  set(_torch_has_cuda OFF)
  if(TARGET torch_cuda OR TORCH_CUDA_LIBRARIES OR CUDA_FOUND)
    set(_torch_has_cuda ON)
  endif()
  if(TRAINSCOPE_CUDA STREQUAL "AUTO")
    set(TRAINSCOPE_WITH_CUDA ${_torch_has_cuda})
  elseif(TRAINSCOPE_CUDA)
    if(NOT _torch_has_cuda)
      message(FATAL_ERROR "TRAINSCOPE_CUDA=ON but the LibTorch found at ${Torch_DIR} has no CUDA. "
                          "Point CMAKE_PREFIX_PATH at a CUDA build of LibTorch or use -DTRAINSCOPE_CUDA=AUTO.")
    endif()
    set(TRAINSCOPE_WITH_CUDA ON)
  else()
    set(TRAINSCOPE_WITH_CUDA OFF)
  endif()
  message(STATUS "trainscope: LibTorch ${Torch_VERSION} at ${Torch_DIR}; CUDA support: ${TRAINSCOPE_WITH_CUDA}")
  if(TRAINSCOPE_WITH_CUDA)
    # One hand-written kernel: the training step's loss and accuracy sums in one launch
    # (src/train/step_sums_kernel.h says why). nvcc from CMAKE_CUDA_COMPILER, CUDACXX, PATH or
    # the toolkit's usual place (Torch's CUDA config may have enabled the language already).
    if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND EXISTS /usr/local/cuda/bin/nvcc)
      set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
    endif()
    # The shared CUDA runtime, the one LibTorch loads (a static copy would be a second runtime).
    set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
    enable_language(CUDA)
  endif()
endif()
