ts_add_test(test_models SOURCES train/test_models.cpp TORCH)
ts_add_test(test_trainer SOURCES train/test_trainer.cpp TORCH)
ts_add_test(test_protocol SOURCES train/test_protocol.cpp TORCH)
ts_add_test(test_graphs SOURCES train/test_graphs.cpp TORCH)
