ts_add_test(test_common SOURCES common/test_config.cpp common/test_settings.cpp common/test_stats.cpp common/test_fs.cpp
  common/test_variants.cpp common/test_provenance.cpp common/test_host_malloc.cpp)
