# The in-memory data-set readers (trainscope/dataset.h): IDX, CIFAR binary, image folders, token
# and text corpora, synthetic data, and load_datasets() choosing among them.
target_sources(trainscope_core PRIVATE
  data/idx.cpp
  data/cifar.cpp
  data/image_folder.cpp
  data/stb_impl.cpp
  data/synthetic.cpp
  data/datasets.cpp
  data/text_corpus.cpp)
# Third-party code: no warnings, and no UBSan nonnull-attribute / float-cast-overflow checks
# (see stb_impl.cpp).
set_source_files_properties(data/stb_impl.cpp PROPERTIES COMPILE_OPTIONS "-w;-fno-sanitize=nonnull-attribute,float-cast-overflow")
# The streaming input pipeline (docs/input-pipeline.md): decoding, transforms, worker pool.
target_sources(trainscope_core PRIVATE
  data/decode.cpp
  data/transform.cpp
  data/image_stream.cpp)
if(JPEG_FOUND)
  target_link_libraries(trainscope_core PRIVATE JPEG::JPEG)
  set_property(SOURCE data/decode.cpp APPEND PROPERTY COMPILE_DEFINITIONS TRAINSCOPE_WITH_LIBJPEG=1)
endif()
target_sources(trainscope_core PRIVATE data/streamed_folder.cpp)
