ts_add_test(test_infer SOURCES infer/test_infer.cpp TORCH)
ts_add_test(test_infer_graphs SOURCES infer/test_infer_graphs.cpp TORCH)
ts_add_test(test_generate SOURCES infer/test_generate.cpp infer/test_generate_values.cpp TORCH)
ts_add_test(test_server_batching SOURCES infer/test_server_batching.cpp TORCH)
