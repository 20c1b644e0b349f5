# TensorBoard event file tests (owned by the tboard component; src/tboard).
ts_add_test(test_tboard SOURCES tboard/test_tensorboard.cpp)
