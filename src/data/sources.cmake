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
