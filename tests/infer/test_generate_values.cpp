// check_generation_values (src/infer/generate.h): the generation options' checks that need no
// model, which `infer` makes before it loads anything. Each bad value is
// Error(kInvalidArgument) naming the flag and the value; good options pass.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

#include "infer/generate.h"
#include "trainscope/error.h"

namespace trainscope {
namespace {

void expect_bad(const std::function<void(GenerationOptions&)>& change, const std::string& says) {
  GenerationOptions o;
  change(o);
  try {
    check_generation_values(o);
    ADD_FAILURE() << "accepted: " << says;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
  }
}

TEST(GenerateValues, TheDefaultsAndEachScenarioAlonePass) {
  EXPECT_NO_THROW(check_generation_values(GenerationOptions{}));
  GenerationOptions o;
  o.pp = {0}, o.tg = {}, o.sweep = false;
  o.server_rates = {0.5};
  EXPECT_NO_THROW(check_generation_values(o));
  o.server_rates = {}, o.sweep = true;
  EXPECT_NO_THROW(check_generation_values(o));
  o.sweep = false, o.tg = {0, 4};
  EXPECT_NO_THROW(check_generation_values(o));
}

TEST(GenerateValues, EachBadValueNamesItsFlagAndValue) {
  expect_bad([](GenerationOptions& o) { o.batch = 0; }, "--gen-batch 0");
  expect_bad([](GenerationOptions& o) { o.server_rates = {1, 0}; }, "--server-rates 0");
  expect_bad([](GenerationOptions& o) { o.server_rates = {-1}; }, "--server-rates -1");
  expect_bad([](GenerationOptions& o) { o.server_rates = {std::numeric_limits<double>::infinity()}; }, "--server-rates inf");
  expect_bad([](GenerationOptions& o) { o.server_rates = {std::nan("")}; }, "--server-rates nan");
  expect_bad([](GenerationOptions& o) { o.sampling.temperature = -1; }, "--temperature -1");
  expect_bad([](GenerationOptions& o) { o.sampling.temperature = std::nan(""); }, "--temperature nan");
  expect_bad([](GenerationOptions& o) { o.sampling.top_k = -5; }, "--top-k -5");
  expect_bad([](GenerationOptions& o) { o.pp = {-1}; }, "--pp -1");
  expect_bad([](GenerationOptions& o) { o.tg = {-2}; }, "--tg -2");
  expect_bad([](GenerationOptions& o) { o.server_batching = "bogus"; }, "--server-batching bogus");
  expect_bad([](GenerationOptions& o) { o.server_lengths = "bogus"; }, "--server-lengths bogus");
}

TEST(GenerateValues, NothingToMeasureIsAnError) {
  expect_bad(
      [](GenerationOptions& o) {
        o.pp = {0}, o.tg = {0};
        o.sweep = false;
      },
      "nothing to measure");
  expect_bad(
      [](GenerationOptions& o) {
        o.pp = {}, o.tg = {};
        o.sweep = false;
      },
      "--gen-batches auto or --server-rates R");
}

TEST(GenerateValues, TheContextChecksMakeTheseChecksToo) {
  GenerationOptions o;
  o.sampling.top_k = -1;
  EXPECT_THROW(check_generation_options(o, 1024), Error);
}

}  // namespace
}  // namespace trainscope
