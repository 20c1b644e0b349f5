# Benchmarks; not run as tests. Components append their own targets.

# ts_add_torch_bench(NAME): bench/NAME.cpp linked to the LibTorch half, with its sources' include
# path and LibTorch's compile flags.
function(ts_add_torch_bench name)
  add_executable(${name} ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/${name}.cpp)
  target_link_libraries(${name} PRIVATE trainscope)
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/src)
  target_compile_options(${name} PRIVATE ${_ts_torch_flags})
endfunction()

if(TRAINSCOPE_WITH_TORCH)
  # profile: profiled-window step time against unprofiled steps (owned by the profile component)
  ts_add_torch_bench(profile_overhead)
  # graphs: CUDA graphs against eager, training samples/s and single-stream inference latency
  # (bench/graph_bench.cpp; run on the GPU host by bench/gpu/build_and_run.sh stage `graphs`)
  ts_add_torch_bench(graph_bench)
  # telemetry: the sampler's cost to an eager training loop, sampler on and off in alternating
  # blocks of one process (bench/sampler_ab.cpp; docs/telemetry.md#cost-to-the-workload)
  ts_add_torch_bench(sampler_ab)
endif()
# Input pipeline: decode + transform throughput of the streaming image folder (owned by the
# input pipeline; bench/input_pipeline.sh runs it against torch.utils.data.DataLoader).
add_executable(input_bench ${CMAKE_CURRENT_LIST_DIR}/input_bench.cpp)
target_link_libraries(input_bench PRIVATE trainscope_core)
target_include_directories(input_bench PRIVATE ${PROJECT_SOURCE_DIR}/src)
