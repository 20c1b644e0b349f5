ts_add_test(test_cli SOURCES cli/test_cli.cpp cli/test_settings_cli.cpp ${PROJECT_SOURCE_DIR}/tools/trainscope/settings_cli.cpp
            TORCH LIBS CLI11::CLI11)
target_include_directories(test_cli PRIVATE ${PROJECT_SOURCE_DIR}/tools/trainscope)
add_dependencies(test_cli trainscope_cli)
