# files of src/profile (owned by the profile component)
target_sources(trainscope PRIVATE
  profile/op_table.cpp
  profile/trace_writer.cpp
  profile/recorder_cpu.cpp
  profile/run_profiler.cpp)
if(TRAINSCOPE_WITH_CUDA)
  # Kineto (PyTorch 2.x with CUDA): CUDA kernels, memcpy and memset in the window.
  target_sources(trainscope PRIVATE profile/recorder_kineto.cpp)
endif()
