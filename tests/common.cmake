ts_add_test(test_common SOURCES common/test_config.cpp common/test_settings.cpp common/test_stats.cpp common/test_fs.cpp
  common/test_variants.cpp common/test_provenance.cpp common/test_host_malloc.cpp)
# a fresh process per measurement of glibc malloc's thresholds (test_host_malloc.cpp)
add_executable(host_malloc_probe common/host_malloc_probe.cpp)
target_link_libraries(host_malloc_probe PRIVATE trainscope_core)
add_dependencies(test_common host_malloc_probe)
target_compile_definitions(test_common PRIVATE TS_HOST_MALLOC_PROBE="$<TARGET_FILE:host_malloc_probe>")
# std::filesystem::remove_all resolves to the PyTorch wheel's libtorch.so copy, which crashes on
# any directory it must recurse into: every caller uses trainscope::remove_tree (trainscope/fs.h).
add_test(NAME NoStdRemoveAll
  COMMAND sh -c "! grep -rnE 'remove_all[[:space:]]*\\(' src tools tests bench --include=*.cpp --include=*.h --include=*.cu"
  WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
