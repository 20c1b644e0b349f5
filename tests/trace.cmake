# Trace analysis tests (owned by the trace component; torch-free).
ts_add_test(test_trace SOURCES trace/test_trace.cpp trace/test_trace_errors.cpp trace/test_trace_bounded.cpp
            trace/reference_analysis.cpp trace/reference_ranges.cpp)
target_link_libraries(test_trace PRIVATE fmt::fmt)
if(TRAINSCOPE_WITH_TORCH)
  # `trainscope analyze` end to end (the binary needs the LibTorch half).
  ts_add_test(test_analyze_cli SOURCES trace/test_analyze_cli.cpp trace/test_analyze_cli_memory.cpp)
  target_link_libraries(test_analyze_cli PRIVATE fmt::fmt)
  add_dependencies(test_analyze_cli trainscope_cli)
endif()
