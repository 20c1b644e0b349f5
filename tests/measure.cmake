# `trainscope measure` tests (owned by the measure component; torch-free: the program measured is
# a child process, Debian's /usr/bin/python3 with python3-torch for the real training script).
ts_add_test(test_measure SOURCES measure/test_measure.cpp)
