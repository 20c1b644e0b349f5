# Benchmarks; not run as tests, except the SamplerAbVerdict checks at the end. Components append
# their own targets.

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
  # generation: greedy decoding with the KV cache, eager or graph-replayed (bench/decode_bench.cpp;
  # stage `gen` of bench/gpu/build_and_run.sh, beside bench/lm_peer.py generate)
  ts_add_torch_bench(decode_bench)
  # telemetry: the sampler's cost to an eager training loop, sampler on and off in alternating
  # blocks of one process (bench/sampler_ab.cpp; docs/telemetry.md#cost-to-the-workload)
  ts_add_torch_bench(sampler_ab)
endif()
# Input pipeline: decode + transform throughput of the streaming image folder (owned by the
# input pipeline; bench/input_pipeline.sh runs it against torch.utils.data.DataLoader).
add_executable(input_bench ${CMAKE_CURRENT_LIST_DIR}/input_bench.cpp)
target_link_libraries(input_bench PRIVATE trainscope_core)
target_include_directories(input_bench PRIVATE ${PROJECT_SOURCE_DIR}/src)

# The CRC-32 check of .pt files' zip members against a file of the user's (src/common/zip_crc.h;
# the figure in docs/workloads.md#model-files-are-checked-before-loading)
add_executable(zip_crc_cost ${CMAKE_CURRENT_LIST_DIR}/zip_crc_cost.cpp)
target_link_libraries(zip_crc_cost PRIVATE trainscope_core)
target_include_directories(zip_crc_cost PRIVATE ${PROJECT_SOURCE_DIR}/src)

# The pair-ratio verdict (sampler_ab --verdict-of), which bench/self_overhead.sh uses too:
# tight pairs around 1 resolve a cost below 3 %, pairs around 0.9 a cost above it, pairs whose
# median is above 1.03 (tools on faster) and wide pairs nothing, and fewer than 8 pairs give no verdict.
if(TRAINSCOPE_WITH_TORCH AND TRAINSCOPE_BUILD_TESTS)
  set(_ts_verdicts
      "Resolved|0.99,1.01,1.00,0.995,1.005,0.998,1.002,1.0|cost below 3 % resolved"
      "Above|0.90,0.91,0.89,0.905,0.895,0.90,0.91,0.90|cost above 3 %"
      "Unresolved|0.80,1.20,0.85,1.15,0.90,1.10,0.95,1.05|the spread cannot resolve 3 %"
      "Faster|1.10,1.12,1.08,1.11,1.09,1.10,1.13,1.07|ran over 3 % faster"
      "FasterAsMeasured|1.149,1.281,0.954,1.196,1.117,0.922,1.086,1.106|ran over 3 % faster"
      "SlightlyFasterIsResolved|1.00,1.02,1.01,0.995,1.015,1.005,1.02,1.01|cost below 3 % resolved"
      "TooFew|1.0,1.0,1.0,1.0,1.0|too few pairs for a verdict")
  foreach(_v IN LISTS _ts_verdicts)
    string(REPLACE "|" ";" _parts "${_v}")
    list(GET _parts 0 _name)
    list(GET _parts 1 _ratios)
    list(GET _parts 2 _expect)
    add_test(NAME SamplerAbVerdict.${_name} COMMAND sampler_ab --verdict-of ${_ratios})
    set_tests_properties(SamplerAbVerdict.${_name} PROPERTIES PASS_REGULAR_EXPRESSION "${_expect}")
  endforeach()
  add_test(NAME SamplerAbVerdict.RefusesANonNumber COMMAND sampler_ab --verdict-of 0.9,x)
  set_tests_properties(SamplerAbVerdict.RefusesANonNumber PROPERTIES WILL_FAIL TRUE)
  add_test(NAME SamplerAbVerdict.RefusesOtherOptions COMMAND sampler_ab --verdict-of 0.9,1.0,1.1 --pairs 8)
  set_tests_properties(SamplerAbVerdict.RefusesOtherOptions PROPERTIES PASS_REGULAR_EXPRESSION "takes no other option")
endif()
