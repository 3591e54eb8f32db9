// libFuzzer harness: store::Database::import_model on arbitrary text (the
// export format of mailsift(1), FORMAT), into fresh in-memory databases.
//
// import_model reads a std::istream, so the input is given as a string stream;
// the databases are SQLite ":memory:" files opened through store::Database,
// schema and migrations included.
//
// Invariants (database.hpp, mailsift(1) export/import and FORMAT):
//   - input not in the format throws store::FormatError "NAME:LINE: ..." and
//     changes nothing (model fingerprint, counts, contacts, statistics);
//     nothing else escapes for input into an empty database;
//   - a successful import exports again; that export imports into a second
//     fresh database, and the second export is byte for byte the first
//     ("exporting an imported model gives the same bytes"), with the same
//     summaries, counts (both term frequencies), fingerprint and contacts;
//   - importing into a database that holds a model is refused with
//     store::Error and changes nothing.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fuzz_support.hpp"
#include "mailsift/store/database.hpp"
#include "mailsift/store/sqlite_database.hpp"

namespace store = mailsift::store;
namespace model = mailsift::model;
using mailsift::fuzz::printable;

namespace {

constexpr const char* name = "fuzz.export";

std::unique_ptr<store::Database> fresh_database() {
    return std::make_unique<store::SqliteDatabase>(":memory:", store::Database::Mode::read_write);
}

// Everything import could have changed, as text.
std::string state(store::Database& db) {
    std::string out = std::to_string(db.model_sequence()) + "|" + db.contacts_fingerprint();
    for (const auto tf : {model::TermFrequency::raw, model::TermFrequency::boolean}) {
        const model::Counts c = db.load_counts(tf);
        out += "|m" + std::to_string(c.messages.spam) + "," + std::to_string(c.messages.ham);
        out += "|t" + std::to_string(c.feature_totals.spam) + "," + std::to_string(c.feature_totals.ham);
        std::vector<std::pair<model::FeatureId, model::ClassCounts>> features(c.features.begin(), c.features.end());
        std::sort(features.begin(), features.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
        for (const auto& [id, counts] : features) {
            out += "|f" + std::to_string(id) + ":" + std::to_string(counts.spam) + "," + std::to_string(counts.ham);
        }
    }
    for (const auto& contact : db.contacts()) {
        out += "|c" + contact.address + "\t" + contact.source + "\t" + std::to_string(contact.added_at);
    }
    const store::Statistics s = db.statistics();
    out += "|s" + std::to_string(s.distinct_features) + "," + std::to_string(s.contacts) + "," +
           std::to_string(s.signatures);
    return out;
}

bool same_summary(const store::ModelSummary& a, const store::ModelSummary& b) {
    return a.features == b.features && a.messages == b.messages && a.contacts == b.contacts;
}

std::string summary_text(const store::ModelSummary& s) {
    return std::to_string(s.features) + " features, " + std::to_string(s.messages) + " messages, " +
           std::to_string(s.contacts) + " contacts";
}

// "NAME:LINE: what": the name, a line number from 1, then the reason.
bool names_line(std::string_view what) {
    const std::string prefix = std::string(name) + ":";
    if (!what.starts_with(prefix)) return false;
    what.remove_prefix(prefix.size());
    std::size_t digits = 0;
    while (digits < what.size() && what[digits] >= '0' && what[digits] <= '9') ++digits;
    return digits > 0 && what[0] != '0' && what.substr(digits).starts_with(": ");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    // One empty database, reused while imports fail (which must leave it empty).
    static std::unique_ptr<store::Database> db = fresh_database();
    static const std::string empty_state = state(*db);

    std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
    store::ModelSummary imported;
    try {
        imported = db->import_model(in, name);
    } catch (const store::FormatError& e) {
        FUZZ_CHECK("format-error-names-line", names_line(e.what()), "FormatError " + printable(e.what()));
        const std::string after = state(*db);
        FUZZ_CHECK("failed-import-changes-nothing", after == empty_state,
                   "after " + printable(e.what()) + " the database holds " + printable(after));
        return 0;
    } catch (const store::Error& e) {
        FUZZ_CHECK("import-store-error", false, std::string("store::Error for input into an empty database: ") + e.what());
    } catch (const std::exception& e) {
        FUZZ_CHECK("import-other-exception", false, std::string("import threw ") + e.what());
    } catch (...) {
        FUZZ_CHECK("import-other-exception", false, "import threw a non-std::exception");
    }

    // Imported: export, import the export elsewhere, export again.
    std::ostringstream out1;
    const store::ModelSummary exported1 = db->export_model(out1);
    const std::string text1 = out1.str();
    FUZZ_CHECK("export-summary", same_summary(imported, exported1),
               "imported " + summary_text(imported) + ", exported " + summary_text(exported1));
    const std::string state1 = state(*db);

    // A database with a model refuses another import and keeps its model.
    {
        std::istringstream again(text1);
        bool refused = false;
        try {
            db->import_model(again, name);
        } catch (const store::Error&) {
            refused = true;
        } catch (const std::exception& e) {
            FUZZ_CHECK("reimport-refused", false, std::string("import into a full database threw ") + e.what());
        }
        const bool empty_model = exported1.features == 0 && exported1.messages == 0 && exported1.contacts == 0 &&
                                 state1 == empty_state;
        FUZZ_CHECK("reimport-refused", refused || empty_model, "a second import into a database with a model succeeded");
        if (refused) {
            FUZZ_CHECK("reimport-changes-nothing", state(*db) == state1, "a refused import changed the database");
        }
    }

    auto db2 = fresh_database();
    std::istringstream in2(text1);
    store::ModelSummary imported2;
    try {
        imported2 = db2->import_model(in2, "export");
    } catch (const std::exception& e) {
        FUZZ_CHECK("export-imports", false, std::string("the export of an import does not import: ") + e.what() +
                                                "\nexport: " + printable(text1, 2000));
    }
    std::ostringstream out2;
    const store::ModelSummary exported2 = db2->export_model(out2);
    const std::string text2 = out2.str();
    FUZZ_CHECK("roundtrip-summary", same_summary(imported2, exported1) && same_summary(exported2, exported1),
               "first " + summary_text(exported1) + ", second " + summary_text(exported2));
    FUZZ_CHECK("roundtrip-bytes", text1 == text2,
               "first export " + printable(text1, 2000) + "\nsecond export " + printable(text2, 2000));
    const std::string state2 = state(*db2);
    FUZZ_CHECK("roundtrip-state", state1 == state2, "first " + printable(state1) + "\nsecond " + printable(state2));

    db = fresh_database();  // the next input needs an empty one
    return 0;
}
