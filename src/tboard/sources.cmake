# files of src/tboard (TensorBoard event files, trainscope/tensorboard.h)
target_sources(trainscope_core PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/tfevents.cpp
  ${CMAKE_CURRENT_LIST_DIR}/tensorboard_reporter.cpp)
