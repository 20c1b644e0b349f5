# Benchmarks of the LibTorch half; not run as tests. Components append their own targets.
if(TRAINSCOPE_WITH_TORCH)
  # profile: profiled-window step time against unprofiled steps (owned by the profile component)
  add_executable(profile_overhead ${CMAKE_CURRENT_LIST_DIR}/profile_overhead.cpp)
  target_link_libraries(profile_overhead PRIVATE trainscope)
  target_include_directories(profile_overhead PRIVATE ${PROJECT_SOURCE_DIR}/src)
  target_compile_options(profile_overhead PRIVATE ${_ts_torch_flags})
endif()
# Input pipeline: decode + transform throughput of the streaming image folder (owned by the
# input pipeline; bench/input_pipeline.sh runs it against torch.utils.data.DataLoader).
add_executable(input_bench ${CMAKE_CURRENT_LIST_DIR}/input_bench.cpp)
target_link_libraries(input_bench PRIVATE trainscope_core)
target_include_directories(input_bench PRIVATE ${PROJECT_SOURCE_DIR}/src)
if(TRAINSCOPE_WITH_TORCH)
  # graphs: CUDA graphs against eager, training samples/s and single-stream inference latency
  # (bench/graph_bench.cpp; run on the GPU host by bench/gpu/build_and_run.sh stage `graphs`)
  add_executable(graph_bench ${CMAKE_CURRENT_LIST_DIR}/graph_bench.cpp)
  target_link_libraries(graph_bench PRIVATE trainscope)
  target_include_directories(graph_bench PRIVATE ${PROJECT_SOURCE_DIR}/src)
  target_compile_options(graph_bench PRIVATE ${_ts_torch_flags})
endif()
if(TRAINSCOPE_WITH_TORCH)
  # telemetry: the sampler's cost to an eager training loop, sampler on and off in alternating
  # blocks of one process (bench/sampler_ab.cpp; docs/telemetry.md#cost-to-the-workload)
  add_executable(sampler_ab ${CMAKE_CURRENT_LIST_DIR}/sampler_ab.cpp)
  target_link_libraries(sampler_ab PRIVATE trainscope)
  target_include_directories(sampler_ab PRIVATE ${PROJECT_SOURCE_DIR}/src)
  target_compile_options(sampler_ab PRIVATE ${_ts_torch_flags})
endif()
