// The reporter registry (trainscope/reporter_registry.h): entries by name, made in the order they
// were added, those that do not apply left out; a name registered twice is a bug.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "trainscope/error.h"
#include "trainscope/reporter_registry.h"

namespace trainscope {
namespace {

// Remembers which reporter saw the call, so the order of the list is observable.
class Tagged final : public Reporter {
 public:
  Tagged(std::string tag, std::vector<std::string>* log) : tag_(std::move(tag)), log_(log) {}
  void notice(const std::string&) override { log_->push_back(tag_); }

 private:
  std::string tag_;
  std::vector<std::string>* log_;
};

struct Ctx {
  bool with_optional = false;
  std::vector<std::string> log;
  std::vector<std::unique_ptr<Reporter>> owned;
  Reporter* own(std::string tag) { return owned.emplace_back(std::make_unique<Tagged>(tag, &log)).get(); }
};

ReporterRegistry<Ctx> registry() {
  ReporterRegistry<Ctx> r;
  r.add("first", "always", [](Ctx& c) { return c.own("first"); });
  r.add("optional", "only when asked", [](Ctx& c) { return c.with_optional ? c.own("optional") : nullptr; });
  r.add("last", "always", [](Ctx& c) { return c.own("last"); });
  return r;
}

TEST(ReporterRegistry, MakesTheEntriesThatApplyInTheOrderTheyWereAdded) {
  const auto reg = registry();
  EXPECT_EQ(reg.names(), (std::vector<std::string>{"first", "optional", "last"}));
  EXPECT_EQ(reg.what("optional"), "only when asked");
  EXPECT_EQ(reg.what("missing"), "");

  Ctx without;
  auto some = reg.make(without);
  ASSERT_EQ(some.size(), 2u);
  for (Reporter* r : some) r->notice("x");
  EXPECT_EQ(without.log, (std::vector<std::string>{"first", "last"}));

  Ctx with{true};
  auto all = reg.make(with);
  ASSERT_EQ(all.size(), 3u);
  for (Reporter* r : all) r->notice("x");
  EXPECT_EQ(with.log, (std::vector<std::string>{"first", "optional", "last"}));
}

TEST(ReporterRegistry, ANameRegisteredTwiceIsABug) {
  auto reg = registry();
  try {
    reg.add("last", "again", [](Ctx& c) { return c.own("again"); });
    FAIL() << "a second 'last' was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInternal);
    EXPECT_NE(std::string(e.what()).find("last"), std::string::npos) << e.what();
  }
  EXPECT_THROW(reg.add("", "no name", [](Ctx& c) { return c.own(""); }), Error);
}

}  // namespace
}  // namespace trainscope
