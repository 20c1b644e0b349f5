# Reliability tests (CONTRIBUTING.md#reliability-sanitizers-fuzzing-and-the-bad-input-table), torch-free so they run in the ASan+UBSan and TSan builds.
# Paths relative to tests/.
# The bad-input table: test_bad_inputs.cpp runs it; its rows are written one section a file.
ts_add_test(test_bad_inputs SOURCES reliability/test_bad_inputs.cpp reliability/bad_input_builders.cpp
            reliability/bad_inputs_config.cpp reliability/bad_inputs_idx.cpp reliability/bad_inputs_cifar.cpp
            reliability/bad_inputs_image_folder.cpp reliability/bad_inputs_files.cpp
            reliability/bad_inputs_telemetry.cpp reliability/bad_inputs_fuzz_findings.cpp)

# Every seed and every past fuzzer crash input (tests/fuzz/crashes/) is replayed through every
# fuzz target in the normal and sanitizer builds, without libFuzzer: a finding, once fixed, stays
# fixed. Any input is valid for any target (each must reject bad bytes cleanly), so the whole
# crashes folder goes to each.
foreach(_t IN ITEMS fuzz_idx_images fuzz_idx_labels fuzz_cifar10 fuzz_decode_image fuzz_toml_config
                    fuzz_proc_parse fuzz_telemetry_sources)
  add_executable(replay_${_t} fuzz/${_t}.cpp fuzz/replay_main.cpp)
  target_link_libraries(replay_${_t} PRIVATE trainscope_core ts_stb ZLIB::ZLIB)
  target_include_directories(replay_${_t} PRIVATE ${PROJECT_SOURCE_DIR}/src)
  target_compile_definitions(replay_${_t} PRIVATE TS_FIXTURES_DIR="${CMAKE_CURRENT_SOURCE_DIR}/fixtures")
  add_test(NAME replay_${_t}
           COMMAND replay_${_t} ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus/${_t} ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/crashes)
  set_tests_properties(replay_${_t} PROPERTIES ENVIRONMENT "TS_TEST=1" TIMEOUT 120)
endforeach()
