# `trainscope measure` tests (owned by the measure component; torch-free: the program measured is
# a child process, Debian's /usr/bin/python3 with python3-torch for the real training script).
ts_add_test(test_measure SOURCES measure/test_measure.cpp)
if(TRAINSCOPE_WITH_TORCH)
  # `trainscope measure` end to end (the binary needs the LibTorch half).
  ts_add_test(test_measure_cli SOURCES measure/test_measure_cli.cpp)
  add_dependencies(test_measure_cli trainscope_cli)
endif()
# The later parts of measure (items reported by the program, the profiled window, --devices, the
# program's GPU memory against the fake NVML library built by telemetry.cmake).
ts_add_test(test_measure_window SOURCES measure/test_measure_window.cpp)
add_dependencies(test_measure_window fake_nvml)
target_compile_definitions(test_measure_window PRIVATE TS_FAKE_NVML="$<TARGET_FILE:fake_nvml>")
