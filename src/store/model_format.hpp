// The text format of a model export (mailsift(1), FORMAT), shared by every
// backend: ModelWriter writes the records a backend reads out in one read
// transaction; read_model() parses and checks a file and hands each record to
// a backend's ModelSink inside its one write transaction.
//
//   mailsift-model<TAB>1
//   setting<TAB>NAME<TAB>VALUE                                                  (version 3)
//   class<TAB>spam|ham<TAB>MESSAGES<TAB>OCCURRENCES<TAB>PRESENCES
//   feature<TAB>ID<TAB>SPAM_OCC<TAB>HAM_OCC<TAB>SPAM_PRES<TAB>HAM_PRES<TAB>LAST_SEEN<TAB>TEXT
//   message<TAB>DIGEST<TAB>spam|ham<TAB>LEARNED_AT<TAB>ID:COUNT,ID:COUNT,...
//   contact<TAB>ADDRESS<TAB>SOURCE<TAB>ADDED_AT
//   linear<TAB>HASH_BITS<TAB>BIAS<TAB>NB_WEIGHT<TAB>SEEN_SPAM<TAB>SEEN_HAM       (version 2)
//   linear-page<TAB>N<TAB>HEX of the page's 4,096 bytes                      (version 2)
//   linear-sample<TAB>spam|ham<TAB>POSITION<TAB>DIGEST<TAB>PREFIX            (version 2)
//   linear-message<TAB>DIGEST<TAB>spam|ham                                   (version 2)
//   linear-refit<TAB>HASH_BITS<TAB>BIAS<TAB>NB_WEIGHT<TAB>HEX of its slot deltas (version 4)
//   end<TAB>FEATURES<TAB>MESSAGES<TAB>CONTACTS
//
// Version 4 is written when the store keeps the last refit's own change to the
// linear weights (RefitLayer; one `linear-refit` record after the pages, its
// slot deltas coded as linear_deltas holds them). Version 3 is written when the store records the settings its model was
// trained with (engine/model_settings.hpp; one `setting` record each, right
// after the first line), else version 2 when the linear scorer has learned,
// else version 1 (a naive-Bayes model exports as it always did); all are read.
// IDs are 16 lower-case hex digits, digests 32; texts escape \\ \t \n \r and
// other control bytes (\xHH). Written in a fixed order (classes spam then ham,
// features by id, messages by digest, contacts by address), so exporting an
// import gives the same bytes.
#pragma once

#include <array>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>

#include "mailsift/store/database.hpp"

namespace mailsift::store {

struct FeatureRecord {
    model::FeatureId id = 0;
    std::array<std::int64_t, 4> counts{};  // spam, ham occurrences; spam, ham presences
    std::int64_t last_seen = 0;
    std::string_view text;
};

class ModelWriter {
public:
    // Writes the first line, and a `setting` record for each "name = value"
    // line of `settings`: version 4 with `refit` (a linear_refit() follows),
    // else 3 when there are settings, else 2 when `linear` (the scorer has
    // learned), else 1.
    explicit ModelWriter(std::ostream& out, bool linear = false, std::string_view settings = {}, bool refit = false);
    // Spam first, then ham.
    void class_totals(Class c, std::int64_t messages, std::int64_t occurrences, std::int64_t presences);
    // By id (as the store orders them).
    void feature(const FeatureRecord& f);
    // `features` in encode_terms() form; false when it cannot be decoded.
    bool message(const Digest& digest, Class c, std::int64_t learned_at, std::string_view features);
    void contact(std::string_view address, std::string_view source, std::int64_t added_at);
    // The linear scorer: its state, then its pages by number, then its samples
    // by class (spam first) and position; `page` is a page's stored bytes,
    // `prefix` a sample's message prefix (decoded).
    void linear_state(const LinearWeights& w);
    void linear_page(std::uint32_t number, std::string_view page);
    // The last refit's own change (after the pages, before the samples).
    void linear_refit(const RefitLayer& layer);
    void linear_sample(Class c, std::uint64_t position, const Digest& digest, std::string_view prefix);
    // A message learned by the linear scorer alone (by digest).
    void linear_message(const Digest& digest, Class c);
    ModelSummary end();

private:
    std::ostream& out_;
    std::string line_;
    ModelSummary sum_;
};

// What a backend does with the records of an import, in its transaction.
// Each returns false when the record's key is already there (a duplicate in
// the file); a sink that writes rows in batches finds a duplicate later and
// throws format_error() with that record's line itself.
class ModelSink {
public:
    virtual ~ModelSink() = default;
    virtual void class_totals(Class c, std::int64_t messages, std::int64_t occurrences, std::int64_t presences) = 0;
    virtual bool feature(const FeatureRecord& f, std::uint64_t line) = 0;
    virtual bool message(const Digest& digest, Class c, std::int64_t learned_at, std::string_view features,
                         std::uint64_t line) = 0;
    virtual bool contact(std::string_view address, std::string_view source, std::int64_t added_at, std::uint64_t line) = 0;
    // The linear scorer (version 2): `w` without pages; `page` in its stored
    // bytes; `blob` a sample in encode_linear_sample() form. false: a duplicate.
    virtual void linear_state(const LinearWeights& w) = 0;
    virtual bool linear_page(std::uint32_t number, std::string_view page, std::uint64_t line) = 0;
    virtual bool linear_sample(Class c, std::uint64_t position, const Digest& digest, std::string_view blob,
                               std::uint64_t line) = 0;
    virtual bool linear_message(const Digest& digest, Class c, std::uint64_t line) = 0;
    // The last refit's own change (version 4), at most once, its slots checked.
    virtual void linear_refit(const RefitLayer& layer) = 0;
    // The settings the model was trained with (version 3), as "name = value"
    // lines, once, before flush(); not called when the file has none.
    virtual void model_settings(std::string_view text) = 0;
    // Called once after the last record: rows a sink buffers are written now.
    virtual void flush() {}
};

// Parses an export and checks it (its records, counts, and that class totals
// are the sums of its feature rows and messages), handing records to `sink`.
// Input not in the format throws FormatError ("NAME:LINE: ...").
ModelSummary read_model(std::istream& in, const std::string& name, ModelSink& sink);

// "NAME:LINE: what" as a FormatError.
[[noreturn]] void format_error(const std::string& name, std::uint64_t line, const std::string& what);

}  // namespace mailsift::store
