// torch.export / AOTInductor packages (.pt2) as models of `infer` (src/workload/aoti_model.h):
// on LibTorch 1.13 (CI) a clear error that names what is needed; on LibTorch >= 2.6 a package
// made by bench/gpu/make_aoti_package.py (TS_AOTI_PACKAGE) runs a forward pass.
#include <gtest/gtest.h>

#include <cstdlib>

#include "../test_helpers.h"
#include "workload/aoti_model.h"

using namespace trainscope;

TEST(Aoti, PackagesAreRecognisedByTheirExtension) {
  EXPECT_TRUE(is_aoti_package_path("resnet18.pt2"));
  EXPECT_TRUE(is_aoti_package_path("/models/resnet18.pt2"));
  EXPECT_FALSE(is_aoti_package_path("resnet18.pt"));
  EXPECT_FALSE(is_aoti_package_path(".pt2"));
}

TEST(Aoti, WithoutTheLoaderTheMessageSaysWhatIsNeeded) {
  if (aoti_available()) GTEST_SKIP() << "this LibTorch has AOTIModelPackageLoader";
  try {
    make_model("resnet18.pt2", 3, 32, 32, 10);
    FAIL() << "a .pt2 package was accepted by a LibTorch without the loader";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kModel);
    const std::string m = e.what();
    EXPECT_NE(m.find("resnet18.pt2"), std::string::npos) << m;
    EXPECT_NE(m.find("LibTorch >= 2.6"), std::string::npos) << m;
    EXPECT_NE(m.find("AOTIModelPackageLoader"), std::string::npos) << m;
  }
}

TEST(Aoti, WithTheLoaderAMissingPackageIsNamedAndARealOneRuns) {
  if (!aoti_available()) GTEST_SKIP() << "LibTorch < 2.6: no AOTIModelPackageLoader";
  EXPECT_NE(test::what_of([] { make_model("/nonexistent/m.pt2", 3, 32, 32, 10); }).find("does not exist"), std::string::npos);
  const char* pkg = std::getenv("TS_AOTI_PACKAGE");  // bench/gpu/make_aoti_package.py: resnet18, 1x28x28, cuda
  if (!pkg) GTEST_SKIP() << "TS_AOTI_PACKAGE not set (bench/gpu/build_and_run.sh aoti makes one)";
  auto m = make_model(pkg, 1, 28, 28, 10);
  // infer's shape check runs one CPU sample before the model is placed
  EXPECT_EQ(m->forward(torch::randn({1, 1, 28, 28})).sizes(), (std::vector<int64_t>{1, 10}));
  m->to(torch::Device("cuda:0"));
  const torch::Tensor y = m->forward(torch::randn({4, 1, 28, 28}, torch::Device("cuda:0")));
  EXPECT_EQ(y.sizes(), (std::vector<int64_t>{4, 10}));
  EXPECT_NE(test::what_of([&] { m->to(torch::Device("cpu")); }).find("was compiled for cuda"), std::string::npos);
}
