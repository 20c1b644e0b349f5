target_sources(trainscope PRIVATE
  infer/latency.cpp
  infer/executor.cpp
  infer/bench.cpp
  infer/checkpoint.cpp
  infer/generate_tokens.cpp
  infer/generate_bench.cpp
  infer/generate_server.cpp
  infer/server_continuous.cpp
  infer/server_requests.cpp
  infer/lm_checkpoint.cpp
  infer/graph_decoder.cpp)
if(TRAINSCOPE_WITH_CUDA)
  target_sources(trainscope PRIVATE infer/executor_cuda.cpp infer/graph_decoder_cuda.cpp)
endif()
