// Language-model data: UTF-8 text as byte tokens, nanoGPT's uint16 token files, and the
// windows of T tokens a language-model Dataset holds (trainscope/dataset.h).
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <numeric>
#include <random>

#include "trainscope/dataset.h"
#include "trainscope/error.h"
#include "trainscope/fs.h"

namespace trainscope {

namespace fs = std::filesystem;

std::vector<int64_t> parse_token_bin(std::span<const uint8_t> bytes, const std::string& name) {
  if (bytes.empty())
    throw_error(ErrorKind::kDataFormat, fmt::format("token file '{}' is empty; write it with nanoGPT's prepare.py "
                                                    "(uint16 token ids)",
                                                    name));
  if (bytes.size() % 2 != 0)
    throw_error(ErrorKind::kDataFormat,
                fmt::format("token file '{}' has an odd byte count ({}): the byte at offset {} is half a uint16 token "
                            "id; the file is truncated or not a nanoGPT .bin (uint16 little-endian ids)",
                            name, bytes.size(), bytes.size() - 1));
  std::vector<int64_t> ids(bytes.size() / 2);
  for (size_t i = 0; i < ids.size(); ++i)
    ids[i] = static_cast<int64_t>(bytes[2 * i]) | (static_cast<int64_t>(bytes[2 * i + 1]) << 8);
  return ids;
}

namespace {

// Length of the UTF-8 sequence starting at p[0] (0 when it is malformed), RFC 3629 table 3.7.
size_t utf8_sequence(const uint8_t* p, size_t left) {
  const uint8_t b = p[0];
  if (b < 0x80) return 1;
  size_t n = 0;
  uint8_t lo = 0x80, hi = 0xBF;
  if (b >= 0xC2 && b <= 0xDF) n = 2;
  else if (b >= 0xE0 && b <= 0xEF) n = 3, lo = b == 0xE0 ? 0xA0 : 0x80, hi = b == 0xED ? 0x9F : 0xBF;
  else if (b >= 0xF0 && b <= 0xF4) n = 4, lo = b == 0xF0 ? 0x90 : 0x80, hi = b == 0xF4 ? 0x8F : 0xBF;
  else return 0;
  if (left < n || p[1] < lo || p[1] > hi) return 0;
  for (size_t k = 2; k < n; ++k)
    if (p[k] < 0x80 || p[k] > 0xBF) return 0;
  return n;
}

std::vector<std::string> text_files(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec))
    throw_error(ErrorKind::kIo, fmt::format("text data '{}' (--data) does not exist; give a UTF-8 text file or a folder "
                                            "of them (the default corpus is Debian's python3-doc: apt-get install "
                                            "python3-doc)",
                                            path));
  if (!fs::is_directory(path, ec)) return {path};
  std::vector<std::string> files;
  for (auto it = fs::recursive_directory_iterator(path, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
    if (it->is_regular_file(ec)) files.push_back(it->path().string());
  std::sort(files.begin(), files.end());
  return files;
}

// Whole files held out: a seeded shuffle, the first files until test_fraction of the bytes.
void split_by_files(std::vector<std::vector<uint8_t>>& texts, double test_fraction, uint64_t seed, TextSplit& out) {
  std::vector<size_t> order(texts.size());
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 rng(seed);
  std::shuffle(order.begin(), order.end(), rng);
  size_t total = 0;
  for (auto& t : texts) total += t.size();
  const auto want = static_cast<size_t>(test_fraction * static_cast<double>(total));
  std::vector<char> held(texts.size(), 0);
  size_t test_bytes = 0;
  for (size_t k = 0; k + 1 < order.size() && test_bytes < std::max<size_t>(want, 1); ++k) {
    held[order[k]] = 1;
    test_bytes += texts[order[k]].size();
    ++out.test_files;
  }
  for (size_t i = 0; i < texts.size(); ++i) {  // corpus order within each split
    auto& dst = held[i] ? out.test : out.train;
    dst.insert(dst.end(), texts[i].begin(), texts[i].end());
  }
}

// One file: one contiguous range of test_fraction of the bytes at a seeded position.
void split_by_range(const std::vector<uint8_t>& text, double test_fraction, uint64_t seed, TextSplit& out) {
  const size_t n = text.size();
  const size_t len = std::clamp<size_t>(static_cast<size_t>(test_fraction * static_cast<double>(n)), 1, n - 1);
  std::mt19937_64 rng(seed);
  const size_t start = std::uniform_int_distribution<size_t>(0, n - len)(rng);
  out.test.assign(text.begin() + static_cast<std::ptrdiff_t>(start), text.begin() + static_cast<std::ptrdiff_t>(start + len));
  out.train.assign(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(start));
  out.train.insert(out.train.end(), text.begin() + static_cast<std::ptrdiff_t>(start + len), text.end());
}

}  // namespace

void check_utf8(std::span<const uint8_t> bytes, const std::string& name) {
  for (size_t i = 0; i < bytes.size();) {
    const size_t n = utf8_sequence(bytes.data() + i, bytes.size() - i);
    if (n == 0)
      throw_error(ErrorKind::kDataFormat,
                  fmt::format("text file '{}' is not UTF-8: byte 0x{:02x} at offset {} does not begin or continue a "
                              "character; convert it (iconv -t UTF-8) or leave it out of the text folder",
                              name, bytes[i], i));
    i += n;
  }
}

TextSplit read_text_corpus(const std::string& path, double test_fraction, uint64_t seed) {
  std::vector<std::vector<uint8_t>> texts;
  for (const auto& f : text_files(path)) {
    auto bytes = read_file_bytes(f);
    if (bytes.empty()) continue;
    check_utf8(bytes, f);
    texts.push_back(std::move(bytes));
  }
  size_t total = 0;
  for (auto& t : texts) total += t.size();
  if (total < 2)
    throw_error(ErrorKind::kDataFormat, fmt::format("text data '{}' holds no text (every file is empty or there is no "
                                                    "file); give a UTF-8 text file or a folder of them",
                                                    path));
  TextSplit out;
  out.files = static_cast<int64_t>(texts.size());
  if (texts.size() >= 2) split_by_files(texts, test_fraction, seed, out);
  else split_by_range(texts[0], test_fraction, seed, out);
  return out;
}

Dataset make_token_dataset(std::vector<int64_t> stream, int64_t seq_len, int64_t vocab, const std::string& name,
                           const std::string& what) {
  const auto n = static_cast<int64_t>(stream.size());
  if (n < seq_len + 1)
    throw_error(ErrorKind::kDataFormat,
                fmt::format("{} holds {} tokens, fewer than one window of --seq-len {} plus its next token; give more "
                            "text or a shorter --seq-len",
                            what, n, seq_len));
  Dataset d;
  d.name = name;
  d.count = (n - 1) / seq_len;
  d.channels = d.height = 1;
  d.width = seq_len;
  d.num_classes = vocab;
  stream.resize(static_cast<size_t>(d.count * seq_len + 1));
  d.tokens = std::move(stream);
  return d;
}

}  // namespace trainscope

namespace trainscope {

namespace {

// Debian's python3-doc: the reStructuredText sources of the Python documentation.
std::string default_text_corpus() {
  std::error_code ec;
  std::vector<std::string> found;
  for (const auto& e : fs::directory_iterator("/usr/share/doc", ec))
    if (e.path().filename().string().rfind("python3.", 0) == 0 && fs::is_directory(e.path() / "html" / "_sources", ec))
      found.push_back((e.path() / "html" / "_sources").string());
  std::sort(found.begin(), found.end());
  return found.empty() ? "/usr/share/doc/python3.11/html/_sources" : found.back();
}

// The vocabulary: --vocab-size, or from the data (bytes 256; token files the largest id + 1, at
// least GPT-2's 50257). Every id must be below it.
int64_t lm_vocab(const DataConfig& cfg, int64_t largest_id, int64_t data_default, const std::string& where) {
  const int64_t vocab = cfg.vocab_size > 0 ? cfg.vocab_size : std::max(largest_id + 1, data_default);
  if (largest_id >= vocab)
    throw_error(ErrorKind::kDataFormat,
                fmt::format("{} holds token id {}, but --vocab-size is {}; give a vocabulary larger than the largest id "
                            "(or 0 to take it from the data)",
                            where, largest_id, vocab));
  return vocab;
}

int64_t largest(const std::vector<int64_t>& v) { return v.empty() ? 0 : *std::max_element(v.begin(), v.end()); }

void limit_windows(std::vector<int64_t>& stream, int64_t windows, int64_t seq_len) {
  if (windows > 0 && static_cast<int64_t>(stream.size()) > windows * seq_len + 1)
    stream.resize(static_cast<size_t>(windows * seq_len + 1));
}

}  // namespace

bool is_lm_data_format(const std::string& format) { return format == "text" || format == "tokens"; }

DatasetPair load_lm_datasets(const DataConfig& cfg, uint64_t seed) {
  DatasetPair out;
  out.format = cfg.format;
  out.task = "causal_lm";
  std::vector<int64_t> train, test;
  std::string path = cfg.path == DataConfig{}.path ? default_text_corpus() : cfg.path;
  int64_t vocab = 0;
  if (cfg.format == "text") {
    TextSplit s = read_text_corpus(path, cfg.test_fraction, seed);
    train.assign(s.train.begin(), s.train.end());
    test.assign(s.test.begin(), s.test.end());
    out.files = s.files;
    out.tokenizer = "bytes";
    vocab = lm_vocab(cfg, 255, 256, fmt::format("text data '{}'", path));
  } else {
    if (cfg.path == DataConfig{}.path)
      throw_error(ErrorKind::kInvalidArgument, "--data-format tokens needs --data: the folder holding nanoGPT's "
                                               "train.bin and val.bin");
    path = cfg.path;
    const auto tr = (fs::path(path) / "train.bin").string(), va = (fs::path(path) / "val.bin").string();
    for (const auto& f : {tr, va})
      if (std::error_code ec; !fs::is_regular_file(f, ec))
        throw_error(ErrorKind::kIo, fmt::format("token data '{}' has no {}; --data-format tokens reads nanoGPT's "
                                                "train.bin and val.bin (write them with its prepare.py), or use "
                                                "--data-format text for text files",
                                                path, fs::path(f).filename().string()));
    train = parse_token_bin(read_file_bytes(tr, uint64_t{64} << 30), tr);
    test = parse_token_bin(read_file_bytes(va, uint64_t{64} << 30), va);
    out.files = 2;
    out.tokenizer = "uint16 token ids";
    vocab = lm_vocab(cfg, std::max(largest(train), largest(test)), 50257, fmt::format("token data '{}'", path));
  }
  limit_windows(train, cfg.limit_train, cfg.seq_len);
  limit_windows(test, cfg.limit_test > 0 && cfg.eval_windows > 0 ? std::min(cfg.limit_test, cfg.eval_windows)
                                                                  : std::max(cfg.limit_test, cfg.eval_windows),
                cfg.seq_len);
  out.source = path;
  const std::string base = cfg.format == "text" ? fs::path(path).filename().string() : cfg.format;
  out.train = make_token_dataset(std::move(train), cfg.seq_len, vocab, base + " train",
                                 fmt::format("the training split of '{}'", path));
  out.test = make_token_dataset(std::move(test), cfg.seq_len, vocab, base + " test",
                                fmt::format("the validation split of '{}'", path));
  return out;
}

}  // namespace trainscope
