target_sources(trainscope PRIVATE
  workload/models.cpp
  workload/model_check.cpp
  train/device.cpp
  train/trainer.cpp
  train/batch_source.cpp
  train/optimizer.cpp
  train/runner.cpp
  # variants (issue 14)
  train/variant_exec.cpp)
if(TRAINSCOPE_WITH_CUDA)
  target_sources(trainscope PRIVATE train/device_cuda.cpp)
else()
  # variants: capture_train_step without CUDA (graph_step.h)
  target_sources(trainscope PRIVATE train/graph_step_stub.cpp)
endif()
# CUDA graphs (graph_step.h): the capture in CUDA builds, a stub that always falls back elsewhere.
if(TRAINSCOPE_WITH_CUDA)
  target_sources(trainscope PRIVATE train/graph_step_cuda.cpp)
else()
  target_sources(trainscope PRIVATE train/graph_step_stub.cpp)
endif()
