target_sources(trainscope_core PRIVATE
  workload/idx.cpp
  workload/cifar.cpp
  workload/image_folder.cpp
  workload/stb_impl.cpp
  workload/synthetic.cpp
  workload/datasets.cpp
  workload/text_corpus.cpp
  workload/model_names.cpp)
# Third-party code: no warnings, and no UBSan nonnull-attribute / float-cast-overflow checks
# (see stb_impl.cpp).
set_source_files_properties(workload/stb_impl.cpp PROPERTIES COMPILE_OPTIONS "-w;-fno-sanitize=nonnull-attribute,float-cast-overflow")
