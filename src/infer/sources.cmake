target_sources(trainscope PRIVATE
  infer/latency.cpp
  infer/executor.cpp
  infer/bench.cpp
  infer/checkpoint.cpp)
if(TRAINSCOPE_WITH_CUDA)
  target_sources(trainscope PRIVATE infer/executor_cuda.cpp)
endif()
