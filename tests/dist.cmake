# Data-parallel training (src/dist/, docs/distributed.md).
ts_add_test(test_dist_env SOURCES dist/test_dist_env.cpp)
if(TRAINSCOPE_WITH_TORCH)
  # Loopback Gloo ranks of the built binary: loss curves, records, torchrun contract, faults.
  ts_add_test(test_dist_e2e SOURCES dist/test_dist_e2e.cpp TORCH)
  add_dependencies(test_dist_e2e trainscope_cli)
endif()
if(TRAINSCOPE_WITH_TORCH)
  # NCCL ranks' communication timing from device marks (src/dist/comm_timer.h), with a scripted clock.
  ts_add_test(test_comm_timer SOURCES dist/test_comm_timer.cpp TORCH)
  ts_add_test(test_stop_vote SOURCES dist/test_stop_vote.cpp TORCH)
endif()
