ts_add_test(test_infer SOURCES infer/test_infer.cpp TORCH)
