target_sources(trainscope_core PRIVATE
  workload/idx.cpp
  workload/cifar.cpp
  workload/image_folder.cpp
  workload/synthetic.cpp
  workload/datasets.cpp)
