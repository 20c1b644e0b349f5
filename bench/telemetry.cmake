# Telemetry benchmarks (owned by the telemetry component); not run as tests, except the check of
# telemetry_cost's slow/fast poll split below.
add_executable(telemetry_cost ${CMAKE_CURRENT_LIST_DIR}/telemetry_cost.cpp)
target_link_libraries(telemetry_cost PRIVATE trainscope_core)
target_include_directories(telemetry_cost PRIVATE ${PROJECT_SOURCE_DIR}/src)
if(TRAINSCOPE_BUILD_TESTS)
  # 200 polls with the slow fields due every 10 (the proc source's CPU frequency): exactly 20 slow
  # polls, whatever number of values each poll returned; a bad polls value is refused.
  add_test(NAME TelemetryCost.SlowPollsAreTheOnesTheSlowFieldClockMadeDue
           COMMAND telemetry_cost 200 /nonexistent/libnvidia-ml.so.1)
  set_tests_properties(TelemetryCost.SlowPollsAreTheOnesTheSlowFieldClockMadeDue PROPERTIES
                       ENVIRONMENT "TELEMETRY_COST_SECONDS=0.5"
                       PASS_REGULAR_EXPRESSION "\"fast_polls\": 180,[^}]*\"slow_polls\": 20,")
  add_test(NAME TelemetryCost.RefusesABadPollsValue COMMAND telemetry_cost 12x)
  set_tests_properties(TelemetryCost.RefusesABadPollsValue PROPERTIES PASS_REGULAR_EXPRESSION "is not a whole number")
endif()
