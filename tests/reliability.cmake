# Reliability tests (issue 7), torch-free so they run in the ASan+UBSan and TSan builds.
# Paths relative to tests/.
ts_add_test(test_bad_inputs SOURCES reliability/test_bad_inputs.cpp)
