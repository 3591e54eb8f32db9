// Corpus files for the benchmarks: listing, labels (TREC index or folder
// names) and reading, shared by mailsift-bench-micro and mailsift-bench-scale.
#pragma once

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "mailsift/features/extractor.hpp"

// The source tree, for the committed fixtures: defined in the build tree's generated
// source_dir.cpp (bench/CMakeLists.txt).
const char* mailsift_source_dir();

namespace mailsift::bench {

namespace fs = std::filesystem;

enum class Label : std::int8_t { unknown = -1, ham = 0, spam = 1 };

struct CorpusFile {
    fs::path path;
    std::uintmax_t size = 0;
    Label label = Label::unknown;
};

// No address is a known correspondent: what a fresh installation sees.
class NoContacts final : public features::Contacts {
public:
    bool contains(std::string_view address) const override { return known_.count(std::string(address)) > 0; }

private:
    std::unordered_set<std::string> known_;
};

inline std::string read_file(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

// A path component naming the class: "spam", "spam_2", "easy_ham", "ham_x.eml".
inline Label label_from_path(const fs::path& relative) {
    for (const auto& part : relative) {
        const std::string s = part.string();
        if (starts_with(s, "spam")) return Label::spam;
        if (starts_with(s, "ham") || s.find("_ham") != std::string::npos) return Label::ham;
    }
    return Label::unknown;
}

// TREC-style "spam|ham PATH" lines, as tests/data/corpus/index has.
inline std::unordered_map<std::string, Label> read_index(const fs::path& dir) {
    std::unordered_map<std::string, Label> labels;
    std::ifstream in(dir / "index");
    std::string label, path;
    while (in >> label >> path) labels[(dir / path).lexically_normal().string()] = label == "spam" ? Label::spam : Label::ham;
    return labels;
}

// Regular files under `dir`, sorted; `eml_only` keeps *.eml (the fixtures hold other files).
inline void list_files(const fs::path& dir, bool eml_only, std::vector<CorpusFile>& out) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) return;
    const auto index = read_index(dir);
    for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec)) {
        if (!it->is_regular_file(ec)) continue;
        const fs::path& p = it->path();
        const std::string name = p.filename().string();
        if (name.empty() || name[0] == '.' || name == "cmds" || name == "index" || name == "README") continue;
        if (eml_only && p.extension() != ".eml") continue;
        CorpusFile f;
        f.path = p;
        f.size = it->file_size(ec);
        const auto found = index.find(p.lexically_normal().string());
        f.label = found != index.end() ? found->second : label_from_path(p.lexically_relative(dir));
        out.push_back(std::move(f));
    }
    std::sort(out.begin(), out.end(), [](const CorpusFile& a, const CorpusFile& b) { return a.path < b.path; });
}

// Takes "--corpus DIR" or "--corpus=DIR" at argv[i] (moving i past DIR) into
// `dir`; false when argv[i] is something else.
inline bool take_corpus_option(int argc, char** argv, int& i, fs::path& dir) {
    const std::string_view a = argv[i];
    if (a == "--corpus" && i + 1 < argc) {
        dir = argv[++i];
        return true;
    }
    if (starts_with(a, "--corpus=")) {
        dir = std::string(a.substr(9));
        return true;
    }
    return false;
}

}  // namespace mailsift::bench
