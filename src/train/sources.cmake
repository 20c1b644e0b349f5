target_sources(trainscope PRIVATE
  workload/models.cpp
  workload/model_check.cpp
  train/device.cpp
  train/trainer.cpp
  train/batch_source.cpp
  train/optimizer.cpp
  train/runner.cpp)
if(TRAINSCOPE_WITH_CUDA)
  target_sources(trainscope PRIVATE train/device_cuda.cpp)
endif()
