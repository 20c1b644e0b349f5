# Telemetry tests (owned by the telemetry component). Paths relative to tests/.
# The fake NVML, built twice: the full API and an "old driver" without the newer entry points.
foreach(_variant IN ITEMS fake_nvml fake_nvml_old)
  add_library(${_variant} SHARED fake_nvml/fake_nvml.cpp)
  target_include_directories(${_variant} PRIVATE ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(${_variant} PRIVATE nlohmann_json::nlohmann_json)
  set_target_properties(${_variant} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
endforeach()
target_compile_definitions(fake_nvml_old PRIVATE FAKE_NVML_OLD=1)

ts_add_test(telemetry_test SOURCES
  telemetry/proc_test.cpp
  telemetry/sysfs_test.cpp
  telemetry/nvml_sampler_test.cpp
  telemetry/prometheus_test.cpp
  LIBS ZLIB::ZLIB ${CMAKE_DL_LIBS})
add_dependencies(telemetry_test fake_nvml fake_nvml_old)
target_compile_definitions(telemetry_test PRIVATE
  TS_FAKE_NVML="$<TARGET_FILE:fake_nvml>" TS_FAKE_NVML_OLD="$<TARGET_FILE:fake_nvml_old>")
