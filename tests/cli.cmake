ts_add_test(test_cli SOURCES cli/test_cli.cpp TORCH)
add_dependencies(test_cli trainscope_cli)
