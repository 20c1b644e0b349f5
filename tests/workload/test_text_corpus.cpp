// Language-model data: the text and token-file readers, their splits and their bad inputs.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "trainscope/config.h"
#include "trainscope/dataset.h"
#include "trainscope/error.h"

using namespace trainscope;
namespace fs = std::filesystem;

namespace {

std::string fresh_dir(const std::string& tag) {
  const std::string d = ::testing::TempDir() + "lmdata_" + tag + "/";
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

void write(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  f << bytes;
}

std::string uint16_file(const std::vector<uint16_t>& ids) {
  std::string s;
  for (auto id : ids) s.push_back(static_cast<char>(id & 0xFF)), s.push_back(static_cast<char>(id >> 8));
  return s;
}

template <class F>
std::string error_of(F&& f, ErrorKind want) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), want) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

}  // namespace

TEST(TokenBin, LittleEndianUint16Ids) {
  const std::string b = uint16_file({0, 1, 255, 256, 50256, 65535});
  auto ids = parse_token_bin({reinterpret_cast<const uint8_t*>(b.data()), b.size()}, "t.bin");
  EXPECT_EQ(ids, (std::vector<int64_t>{0, 1, 255, 256, 50256, 65535}));
}

TEST(TokenBin, OddByteCountAndEmptyFileNameTheFileAndOffset) {
  const std::string b = uint16_file({1, 2}) + "x";
  auto msg = error_of([&] { parse_token_bin({reinterpret_cast<const uint8_t*>(b.data()), b.size()}, "cut.bin"); },
                      ErrorKind::kDataFormat);
  EXPECT_NE(msg.find("cut.bin"), std::string::npos);
  EXPECT_NE(msg.find("offset 4"), std::string::npos) << msg;
  msg = error_of([&] { parse_token_bin({}, "empty.bin"); }, ErrorKind::kDataFormat);
  EXPECT_NE(msg.find("empty.bin"), std::string::npos);
}

TEST(Utf8, AcceptsTextAndNamesTheFirstBadByte) {
  const std::string ok = "plain, caf\xC3\xA9, \xE2\x82\xAC, \xF0\x9F\x98\x80";
  EXPECT_NO_THROW(check_utf8({reinterpret_cast<const uint8_t*>(ok.data()), ok.size()}, "ok.txt"));
  for (const std::string bad : {std::string("ab\xFF"), std::string("ab\xC0\xAF"), std::string("ab\xED\xA0\x80"),
                                std::string("ab\xE2\x82")}) {
    auto msg = error_of([&] { check_utf8({reinterpret_cast<const uint8_t*>(bad.data()), bad.size()}, "bad.txt"); },
                        ErrorKind::kDataFormat);
    EXPECT_NE(msg.find("bad.txt"), std::string::npos);
    EXPECT_NE(msg.find("offset 2"), std::string::npos) << msg;
  }
}

TEST(TextCorpus, AFolderIsSplitByWholeFilesSeededAndDeterministic) {
  const auto d = fresh_dir("folder");
  std::string all;
  for (int i = 0; i < 10; ++i) {
    const std::string text(100, static_cast<char>('a' + i));
    write(d + "f" + std::to_string(i) + ".txt", text);
    all += text;
  }
  write(d + "empty.txt", "");
  const TextSplit a = read_text_corpus(d, 0.2, 7), b = read_text_corpus(d, 0.2, 7);
  EXPECT_EQ(a.train, b.train);
  EXPECT_EQ(a.test, b.test);
  EXPECT_EQ(a.files, 10);
  EXPECT_EQ(a.test_files, 2);
  EXPECT_EQ(a.train.size() + a.test.size(), all.size());
  // Every held-out file is whole: each letter occurs 0 or 100 times in the validation split.
  for (char c = 'a'; c < 'a' + 10; ++c) {
    const auto n = std::count(a.test.begin(), a.test.end(), static_cast<uint8_t>(c));
    EXPECT_TRUE(n == 0 || n == 100) << c << " " << n;
  }
  const TextSplit other = read_text_corpus(d, 0.2, 8);
  EXPECT_NE(other.test, a.test);  // another seed holds out other files
}

TEST(TextCorpus, OneFileIsSplitByOneContiguousRange) {
  const auto d = fresh_dir("onefile");
  std::string text;
  for (int i = 0; i < 1000; ++i) text.push_back(static_cast<char>('A' + i % 26));
  write(d + "book.txt", text);
  const TextSplit s = read_text_corpus(d + "book.txt", 0.1, 3);
  EXPECT_EQ(s.test.size(), 100u);
  EXPECT_EQ(s.train.size(), 900u);
  const std::string val(s.test.begin(), s.test.end());
  EXPECT_NE(text.find(val), std::string::npos);  // one contiguous range of the file
}

TEST(TextCorpus, BadInputsAreClearErrors) {
  auto msg = error_of([] { read_text_corpus("/no/such/corpus", 0.1, 1); }, ErrorKind::kIo);
  EXPECT_NE(msg.find("/no/such/corpus"), std::string::npos);
  const auto d = fresh_dir("bad");
  write(d + "a.txt", "fine text");
  write(d + "b.bin", std::string("ok\x80no", 5));
  msg = error_of([&] { read_text_corpus(d, 0.1, 1); }, ErrorKind::kDataFormat);
  EXPECT_NE(msg.find("b.bin"), std::string::npos);
  EXPECT_NE(msg.find("offset 2"), std::string::npos) << msg;
  const auto e = fresh_dir("empty");
  write(e + "a.txt", "");
  error_of([&] { read_text_corpus(e, 0.1, 1); }, ErrorKind::kDataFormat);
}

TEST(TokenDataset, WindowsAndTheirNextTokens) {
  std::vector<int64_t> stream(25);
  for (int i = 0; i < 25; ++i) stream[static_cast<size_t>(i)] = i;
  Dataset d = make_token_dataset(stream, 8, 64, "s train", "the stream");
  EXPECT_EQ(d.count, 3);  // (25 - 1) / 8
  EXPECT_EQ(d.width, 8);
  EXPECT_EQ(d.num_classes, 64);
  EXPECT_EQ(d.tokens.size(), 25u);
  EXPECT_TRUE(d.is_tokens());
  auto msg = error_of([&] { make_token_dataset({1, 2, 3}, 8, 64, "x", "the validation split of 'c'"); },
                      ErrorKind::kDataFormat);
  EXPECT_NE(msg.find("validation split"), std::string::npos);
  EXPECT_NE(msg.find("--seq-len"), std::string::npos);
}

TEST(LmDatasets, TokenFilesAreCheckedAgainstTheVocabulary) {
  const auto d = fresh_dir("bins");
  std::vector<uint16_t> train(200), val(60);
  for (size_t i = 0; i < train.size(); ++i) train[i] = static_cast<uint16_t>(i % 50);
  for (size_t i = 0; i < val.size(); ++i) val[i] = static_cast<uint16_t>(300 + i % 7);
  write(d + "train.bin", uint16_file(train));
  write(d + "val.bin", uint16_file(val));
  DataConfig cfg;
  cfg.format = "tokens";
  cfg.path = d;
  cfg.seq_len = 16;
  DatasetPair p = load_lm_datasets(cfg, 1);
  EXPECT_EQ(p.task, "causal_lm");
  EXPECT_EQ(p.train.num_classes, 50257);  // GPT-2's vocabulary, as nanoGPT's prepare.py writes
  EXPECT_EQ(p.train.count, (200 - 1) / 16);
  EXPECT_EQ(p.test.count, (60 - 1) / 16);
  cfg.vocab_size = 300;  // id 306 occurs in val.bin
  auto msg = error_of([&] { load_lm_datasets(cfg, 1); }, ErrorKind::kDataFormat);
  EXPECT_NE(msg.find("306"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--vocab-size"), std::string::npos);
  cfg.vocab_size = 0;
  write(d + "val.bin", uint16_file(val) + "z");
  msg = error_of([&] { load_lm_datasets(cfg, 1); }, ErrorKind::kDataFormat);
  EXPECT_NE(msg.find("val.bin"), std::string::npos);
}

TEST(LmDatasets, TextIsByteTokensWithVocabulary256) {
  const auto d = fresh_dir("text");
  std::string text;
  for (int i = 0; i < 3000; ++i) text.push_back(static_cast<char>('a' + (i * 7) % 26));
  write(d + "t.txt", text);
  DataConfig cfg;
  cfg.format = "text";
  cfg.path = d + "t.txt";
  cfg.seq_len = 32;
  cfg.test_fraction = 0.1;
  DatasetPair p = load_lm_datasets(cfg, 5);
  EXPECT_EQ(p.tokenizer, "bytes");
  EXPECT_EQ(p.train.num_classes, 256);
  EXPECT_EQ(p.train.tokens.size() + p.test.tokens.size() + (2700 - 1) % 32 + (300 - 1) % 32, 3000u);
  for (auto t : p.train.tokens) ASSERT_TRUE(t >= 'a' && t <= 'z');
}
