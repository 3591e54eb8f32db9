// mailsift::store — what every part of the store speaks: the errors it throws,
// the two classes, a message's digest, what learning one does, and the schema
// version of the embedded store.
//  - Environment failures (missing file, locked, read-only, disk full,
//    unreachable server) throw store::Error naming the database.
//  - A write that lost a race throws RetryableError; nothing of it was written.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>

#include "mailsift/model/score.hpp"

namespace mailsift::store {

inline constexpr int schema_version = 21;

class Error : public std::runtime_error {
public:
    Error(const std::filesystem::path& path, const std::string& what)
        : std::runtime_error(path.string() + ": " + what), path_(path) {}
    const std::filesystem::path& path() const { return path_; }

private:
    std::filesystem::path path_;
};

// A write that lost a race with another writer (a deadlock, a serialization
// failure, the same message learned by two at once): nothing of the
// transaction was written, and doing it again can succeed. TrainingBatch
// does that by itself.
class RetryableError : public Error {
public:
    using Error::Error;
};

// A refit of the linear scorer that another writer's refit of the same
// samples or later ones got to first (WriteTransaction::LinearChange::
// refit_mark): its batch is rolled back, nothing is lost.
class RefitSuperseded : public std::runtime_error {
public:
    RefitSuperseded() : std::runtime_error("the linear scorer was refitted by another writer meanwhile") {}
};

// A model export that is not in the documented format (mailsift(1), FORMAT):
// the message is "NAME:LINE: what is wrong".
class FormatError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

enum class Class : std::uint8_t { ham = 0, spam = 1 };
const char* to_string(Class c);

// A feature of one message as trained: id, count in the message, and its text
// (kept so that explanations and statistics can name it).
struct TrainTerm {
    model::FeatureId id = 0;
    std::uint32_t count = 0;
    std::string_view text;
};

// 16-byte content digest identifying a trained message.
using Digest = std::array<std::uint8_t, 16>;

enum class LearnResult : std::uint8_t {
    learned,          // new message, counted in the class
    already_learned,  // same digest, same class: nothing changed
    moved,            // same digest, other class: unlearned there, learned here
};

enum class UnlearnResult : std::uint8_t { unlearned, not_learned, learned_as_other_class };

}  // namespace mailsift::store
