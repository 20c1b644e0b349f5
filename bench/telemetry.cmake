# Telemetry benchmarks (owned by the telemetry component); not run as tests.
add_executable(telemetry_cost ${CMAKE_CURRENT_LIST_DIR}/telemetry_cost.cpp)
target_link_libraries(telemetry_cost PRIVATE trainscope_core)
target_include_directories(telemetry_cost PRIVATE ${PROJECT_SOURCE_DIR}/src)
