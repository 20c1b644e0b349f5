ts_add_test(test_datasets SOURCES workload/test_datasets.cpp)
ts_add_test(test_input_pipeline SOURCES workload/test_input_pipeline.cpp)
ts_add_test(test_text_corpus SOURCES workload/test_text_corpus.cpp)
