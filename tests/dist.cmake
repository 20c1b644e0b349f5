# Data-parallel training (src/dist/, docs/distributed.md).
ts_add_test(test_dist_env SOURCES dist/test_dist_env.cpp)
if(TRAINSCOPE_WITH_TORCH)
  # Loopback Gloo ranks of the built binary: loss curves, records, torchrun contract, faults.
  ts_add_test(test_dist_e2e SOURCES dist/test_dist_e2e.cpp TORCH)
  add_dependencies(test_dist_e2e trainscope_cli)
endif()
