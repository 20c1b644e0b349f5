# The workload layer's torch-free part: model names (run ids, TorchScript paths). The models
# themselves need LibTorch: train/sources.cmake lists them.
target_sources(trainscope_core PRIVATE
  workload/model_names.cpp)
