ts_add_test(test_datasets SOURCES workload/test_datasets.cpp)
