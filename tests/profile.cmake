# Operator profiler tests (owned by the profile component).
ts_add_test(test_profile SOURCES profile/test_profile.cpp TORCH)
