# files of src/trace (the trace layer: PyTorch profiler traces read and analysed; torch-free)
target_sources(trainscope_core PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/reader.cpp
  ${CMAKE_CURRENT_LIST_DIR}/spill.cpp
  ${CMAKE_CURRENT_LIST_DIR}/collect.cpp
  ${CMAKE_CURRENT_LIST_DIR}/steps.cpp
  ${CMAKE_CURRENT_LIST_DIR}/breakdown.cpp
  ${CMAKE_CURRENT_LIST_DIR}/tables.cpp
  ${CMAKE_CURRENT_LIST_DIR}/analyze.cpp
  ${CMAKE_CURRENT_LIST_DIR}/render.cpp
  ${CMAKE_CURRENT_LIST_DIR}/render_json.cpp)
