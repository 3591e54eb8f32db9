// Store administration on real SQLite files: schema 3 (last_seen), pruning and
// the model's consistency afterwards, export/import, online backup, contacts.
#include <sqlite3.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "mailsift/store/training_batch.hpp"
#include "../support/backends.hpp"
#include "../support/temp_dir.hpp"
#include "store_support.hpp"
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "mailsift/store/sqlite_database.hpp"

using namespace mailsift;
using TempDir = mailsift::testing::TempDir;
using mailsift::testing::digest;
using mailsift::testing::terms;
using mailsift::testing::Raw;
using store::Class;
using Database = store::SqliteDatabase;

namespace {


std::optional<std::int64_t> last_seen(const mailsift::testing::TestStore& raw, model::FeatureId id) {
    return raw.value("SELECT last_seen FROM features WHERE id = " + std::to_string(static_cast<std::int64_t>(id)));
}
std::optional<std::int64_t> last_seen(const std::filesystem::path& p, model::FeatureId id) {
    return Raw(p).value("SELECT last_seen FROM features WHERE id = " + std::to_string(static_cast<std::int64_t>(id)));
}

// The store's promise: class totals equal the sums of the feature rows, in both
// kinds of count, and no count is negative.
template <class R>
void require_consistent_in(R& raw) {
    for (const char* cls : {"spam", "ham"}) {
        const std::string c = std::string(cls) == "spam" ? "1" : "0";
        INFO(cls);
        REQUIRE(raw.value("SELECT occurrences FROM classes WHERE class = " + c) ==
                raw.value(std::string("SELECT coalesce(sum(") + cls + "_occurrences), 0) FROM features"));
        REQUIRE(raw.value("SELECT presences FROM classes WHERE class = " + c) ==
                raw.value(std::string("SELECT coalesce(sum(") + cls + "_presences), 0) FROM features"));
        REQUIRE(raw.value("SELECT messages FROM classes WHERE class = " + c) ==
                raw.value("SELECT count(*) FROM messages WHERE class = " + c));
    }
    REQUIRE(raw.value("SELECT count(*) FROM features WHERE spam_occurrences < 0 OR ham_occurrences < 0"
                      " OR spam_presences < 0 OR ham_presences < 0 OR spam_occurrences + ham_occurrences = 0") == 0);
    REQUIRE(raw.value("SELECT count(*) FROM classes WHERE messages < 0 OR occurrences < 0 OR presences < 0") == 0);
}
void require_consistent(const mailsift::testing::TestStore& s) { require_consistent_in(s); }
void require_consistent(const std::filesystem::path& p) {
    Raw raw(p);
    require_consistent_in(raw);
}

std::string export_of(store::Database& db) {
    std::ostringstream out;
    db.export_model(out);
    return out.str();
}

}  // namespace

TEST_CASE("A version 2 database is upgraded to version 3 and its features get a last-seen time", "[store]") {
    TempDir dir;
    const auto path = dir.path / "old.db";
    {
        Database db(path, Database::Mode::read_write);
        store::TrainingBatch b(db);
        b.learn(digest(1), Class::spam, terms({{10, 1}}), 1000);
        b.learn(digest(2), Class::ham, terms({{11, 2}}), 2000);
        b.commit();
    }
    {
        // Make it what mailsift 0.1 with schema 2 wrote.
        Raw raw(path);
        raw.exec(std::string(mailsift::testing::scans_as_schema_3) +
                 "ALTER TABLE features DROP COLUMN last_seen; PRAGMA user_version = 2");
    }
    {
        Database reader(path, Database::Mode::read_only);  // upgrades through a short-lived writer
        const auto c = reader.load_counts(model::TermFrequency::raw);
        REQUIRE(c.features.at(10).spam == 1);
        REQUIRE(c.features.at(11).ham == 2);
    }
    REQUIRE(Raw(path).value("PRAGMA user_version") == store::schema_version);
    // Unknown before the upgrade: last seen no later than the newest learned message.
    REQUIRE(last_seen(path, 10) == 2000);
    REQUIRE(last_seen(path, 11) == 2000);
    require_consistent(path);
}

TEST_CASE("Committing a batch stamps the features it learned with the batch's time", "[store]") {
    FOR_EACH_BACKEND(path);
    const auto opened = path.open();
    store::Database& db = *opened;
    {
        store::TrainingBatch b(db);
        b.learn(digest(1), Class::spam, terms({{10, 1}, {11, 1}}), 100);
        b.commit();
    }
    {
        store::TrainingBatch b(db);
        b.learn(digest(2), Class::spam, terms({{11, 1}, {12, 1}}), 150);
        b.learn(digest(3), Class::ham, terms({{12, 1}}), 200);  // the batch's time is its latest
        b.commit();
    }
    REQUIRE(last_seen(path, 10) == 100);
    REQUIRE(last_seen(path, 11) == 200);
    REQUIRE(last_seen(path, 12) == 200);

    SECTION("unlearning does not make a feature recent") {
        store::TrainingBatch b(db);
        REQUIRE(b.unlearn(digest(2), Class::spam) == store::UnlearnResult::unlearned);
        b.commit();
        REQUIRE(last_seen(path, 11) == 200);
        REQUIRE(last_seen(path, 12) == 200);
    }
    SECTION("moving a message to the other class is learning it there") {
        store::TrainingBatch b(db);
        REQUIRE(b.learn(digest(1), Class::ham, terms({{10, 1}, {11, 1}}), 300) == store::LearnResult::moved);
        b.commit();
        REQUIRE(last_seen(path, 10) == 300);
        REQUIRE(last_seen(path, 11) == 300);
        REQUIRE(last_seen(path, 12) == 200);
    }
    require_consistent(path);
}

TEST_CASE("Pruning removes features seen once and not since the cut-off, and the totals follow", "[store]") {
    FOR_EACH_BACKEND(path);
    const auto opened = path.open();
    store::Database& db = *opened;
    {
        store::TrainingBatch b(db);
        b.learn(digest(1), Class::spam, terms({{1, 1}, {2, 1}, {3, 2}}), 100);
        b.learn(digest(2), Class::ham, terms({{1, 1}, {4, 1}}), 100);
        b.commit();
    }
    {
        store::TrainingBatch b(db);
        b.learn(digest(3), Class::spam, terms({{5, 1}}), 1000);
        b.commit();
    }
    store::Recording rec;
    rec.scans.push_back({digest(50), 50, model::Verdict::spam, "w:x\t1\n"});
    rec.scans.push_back({digest(60), 5000, model::Verdict::ham, "w:y\t1\n"});
    db.record(rec);

    const auto r = db.prune(100, 500);
    REQUIRE(r.signatures == 1);
    REQUIRE(r.features == 2);  // 2 (spam) and 4 (ham); 1 is seen twice, 3 twice in one message, 5 recently
    REQUIRE(r.occurrences.spam == 1);
    REQUIRE(r.occurrences.ham == 1);
    REQUIRE(r.presences.spam == 1);
    REQUIRE(r.presences.ham == 1);
    REQUIRE_FALSE(db.find_scan(digest(50)));
    REQUIRE(db.find_scan(digest(60)));
    const auto c = db.load_counts(model::TermFrequency::raw);
    REQUIRE(c.features.size() == 3);
    REQUIRE(c.features.count(2) == 0);
    REQUIRE(c.features.count(4) == 0);
    REQUIRE(c.feature_totals.spam == 4);  // 1 + 2 + 1 of features 1, 3, 5
    REQUIRE(c.feature_totals.ham == 1);
    REQUIRE(c.messages.spam == 2);  // messages are not pruned
    require_consistent(path);

    SECTION("pruning again finds nothing more") {
        const auto again = db.prune(100, 500);
        REQUIRE(again.signatures == 0);
        REQUIRE(again.features == 0);
    }
}

TEST_CASE("Unlearning a message whose features were pruned takes off only what the rows hold", "[store][long]") {
    FOR_EACH_BACKEND(path);
    const auto opened = path.open();
    store::Database& db = *opened;
    {
        store::TrainingBatch b(db);
        b.learn(digest(1), Class::spam, terms({{1, 1}, {2, 1}, {3, 2}}), 100);
        b.learn(digest(2), Class::spam, terms({{1, 1}}), 100);
        b.commit();
    }
    REQUIRE(db.prune(0, 500).features == 1);  // feature 2
    require_consistent(path);

    SECTION("unlearning it leaves no negative count and does not bring the feature back") {
        store::TrainingBatch b(db);
        REQUIRE(b.unlearn(digest(1), Class::spam) == store::UnlearnResult::unlearned);
        b.commit();
        const auto c = db.load_counts(model::TermFrequency::raw);
        REQUIRE(c.features.count(2) == 0);
        REQUIRE(c.features.count(3) == 0);
        REQUIRE(c.features.at(1).spam == 1);
        REQUIRE(c.feature_totals.spam == 1);
        REQUIRE(db.load_counts(model::TermFrequency::boolean).feature_totals.spam == 1);
    }
    SECTION("moving it learns the pruned feature anew in the other class only") {
        store::TrainingBatch b(db);
        REQUIRE(b.learn(digest(1), Class::ham, terms({{1, 1}, {2, 1}, {3, 2}}), 600) == store::LearnResult::moved);
        b.commit();
        const auto c = db.load_counts(model::TermFrequency::raw);
        REQUIRE(c.features.at(2).spam == 0);
        REQUIRE(c.features.at(2).ham == 1);
        REQUIRE(c.feature_totals.spam == 1);
        REQUIRE(c.feature_totals.ham == 4);
    }
    SECTION("a pruned feature learned again in the other class keeps what it holds there") {
        {
            store::TrainingBatch b(db);
            b.learn(digest(5), Class::ham, terms({{2, 1}}), 600);
            b.commit();
        }
        store::TrainingBatch b(db);
        REQUIRE(b.unlearn(digest(1), Class::spam) == store::UnlearnResult::unlearned);
        b.commit();
        const auto c = db.load_counts(model::TermFrequency::raw);
        REQUIRE(c.features.at(2).spam == 0);
        REQUIRE(c.features.at(2).ham == 1);
    }
    SECTION("a pruned feature learned again in the same batch as the unlearning keeps the new count") {
        store::TrainingBatch b(db);
        REQUIRE(b.unlearn(digest(1), Class::spam) == store::UnlearnResult::unlearned);
        b.learn(digest(6), Class::spam, terms({{2, 1}}), 600);
        b.commit();
        const auto c = db.load_counts(model::TermFrequency::raw);
        REQUIRE(c.features.at(2).spam == 1);
        REQUIRE(last_seen(path, 2) == 600);
    }
    SECTION("a message learned and unlearned in one batch leaves nothing behind") {
        store::TrainingBatch b(db);
        b.learn(digest(7), Class::ham, terms({{42, 1}, {1, 1}}), 600);
        REQUIRE(b.unlearn(digest(7), Class::ham) == store::UnlearnResult::unlearned);
        b.commit();
        const auto c = db.load_counts(model::TermFrequency::raw);
        REQUIRE(c.features.count(42) == 0);
        REQUIRE(c.features.at(1).ham == 0);
        REQUIRE(c.messages.ham == 0);
    }
    require_consistent(path);
    // Whatever happened, unlearning everything empties the model exactly.
    {
        store::TrainingBatch b(db);
        for (std::uint8_t d : {1, 2, 5, 6}) {
            b.unlearn(digest(d), Class::spam);
            b.unlearn(digest(d), Class::ham);
        }
        b.commit();
    }
    const auto c = db.load_counts(model::TermFrequency::raw);
    REQUIRE(c.features.empty());
    REQUIRE(c.feature_totals.spam == 0);
    REQUIRE(c.feature_totals.ham == 0);
    require_consistent(path);
}

TEST_CASE("An export imported into a new database exports the same bytes and unlearns alike", "[store]") {
    FOR_EACH_BACKEND(store_a);
    mailsift::testing::TestStore store_b(store_a.kind());
    const auto opened_a = store_a.open(), opened_b = store_b.open();
    store::Database &a = *opened_a, &b = *opened_b;
    {
        const std::string odd = "tab\there, newline\nthere, back\\slash, cr\r, bell\x07, caf\xc3\xa9";
        std::vector<store::TrainTerm> t = {{1, 2, "w:plain"}, {0xFFFFFFFFFFFFFFF0ull, 1, odd}, {7, 1, "w:x"}};
        store::TrainingBatch b(a);
        b.learn(digest(1), Class::spam, t, 100);
        b.learn(digest(2), Class::ham, {{7, 3, "w:x"}}, 200);
        b.learn(digest(3), Class::ham, {}, 300);  // a message without features
        b.add_contact("a@example.org", "learned-ham", 300);
        b.commit();
    }
    a.add_contact("odd\tname@example.org", "manual", 400);
    const std::string exported = export_of(a);
    REQUIRE(exported.rfind("mailsift-model\t1\nclass\tspam\t1\t", 0) == 0);
    REQUIRE(exported.find("tab\\there, newline\\nthere, back\\\\slash, cr\\r, bell\\x07, caf\xc3\xa9\n") !=
            std::string::npos);
    REQUIRE(exported.find("\nfeature\tfffffffffffffff0\t1\t0\t1\t0\t300\t") != std::string::npos);
    REQUIRE(exported.find("\ncontact\todd\\tname@example.org\tmanual\t400\n") != std::string::npos);
    REQUIRE(exported.size() >= 10);
    REQUIRE(exported.substr(exported.size() - 10) == "end\t3\t3\t2\n");

    std::istringstream in(exported);
    const auto sum = b.import_model(in, "model.txt");
    REQUIRE(sum.features == 3);
    REQUIRE(sum.messages == 3);
    REQUIRE(sum.contacts == 2);
    REQUIRE(export_of(b) == exported);
    REQUIRE(b.feature_text(0xFFFFFFFFFFFFFFF0ull) == "tab\there, newline\nthere, back\\slash, cr\r, bell\x07, caf\xc3\xa9");
    for (const auto tf : {model::TermFrequency::raw, model::TermFrequency::boolean}) {
        const auto ca = a.load_counts(tf), cb = b.load_counts(tf);
        REQUIRE(ca.messages == cb.messages);
        REQUIRE(ca.feature_totals == cb.feature_totals);
        REQUIRE(ca.features == cb.features);
    }
    require_consistent(store_b);

    // The learned messages came along: learning again is recognised, unlearning is exact.
    for (store::Database* db : {&a, &b}) {
        store::TrainingBatch t(*db);
        REQUIRE(t.learn(digest(2), Class::ham, {{7, 3, "w:x"}}, 900) == store::LearnResult::already_learned);
        REQUIRE(t.unlearn(digest(1), Class::spam) == store::UnlearnResult::unlearned);
        t.commit();
    }
    REQUIRE(export_of(a) == export_of(b));
    REQUIRE(b.load_counts(model::TermFrequency::raw).features.size() == 1);
}

TEST_CASE("The linear scorer's weights and samples are exported and imported exactly", "[store]") {
    FOR_EACH_BACKEND(store_a);
    mailsift::testing::TestStore store_b(store_a.kind());
    const auto opened_a = store_a.open(), opened_b = store_b.open();
    store::Database &a = *opened_a, &b = *opened_b;
    {
        store::TrainingBatch t(a);
        store::TrainingBatch::LinearStep step;
        step.hash_bits = 12;
        step.slots = {3, 1500, 4095};
        step.step = {0.1f / 3, 0.012345678901234};
        t.learn(digest(1), Class::spam, {{1, 1, "w:cheap"}}, 100, &step);
        t.offer_linear_sample(12, Class::spam, 0, digest(1), "From: a@example.org\n\nCheap\tpills\x01\n");
        step.step.feature = -0.25f;
        t.learn(digest(2), Class::ham, {{2, 1, "w:meeting"}}, 100, &step);
        t.offer_linear_sample(12, Class::ham, 0, digest(2), "From: b@example.org\n\nThe meeting\n");
        t.learn_uncounted(digest(9), Class::ham, step);
        t.commit();
    }
    const std::string exported = export_of(a);
    REQUIRE(exported.rfind("mailsift-model\t2\n", 0) == 0);
    REQUIRE(exported.find("\nlinear\t12\t") != std::string::npos);
    REQUIRE(exported.find("\nlinear-page\t1\t") != std::string::npos);
    REQUIRE(exported.find("\nlinear-sample\tspam\t0\t") != std::string::npos);
    REQUIRE(exported.find("Cheap\\tpills\\x01\\n\n") != std::string::npos);
    REQUIRE(exported.find("\nlinear-message\t") != std::string::npos);
    std::istringstream in(exported);
    b.import_model(in, "model.txt");
    REQUIRE(export_of(b) == exported);
    const auto wa = a.linear_weights_since(0), wb = b.linear_weights_since(0);
    REQUIRE(wb.hash_bits == 12);
    REQUIRE(wb.bias == wa.bias);
    REQUIRE(wb.nb_weight == wa.nb_weight);
    REQUIRE(wb.seen_spam == 1);
    REQUIRE(wb.seen_ham == 1);
    // The weights as readers see them: the import holds as pages what the export's store held as slot deltas.
    REQUIRE(mailsift::testing::linear_table(wa) == mailsift::testing::linear_table(wb));
    REQUIRE(wb.deltas.empty());
    {
        store::TrainingBatch t(b);
        REQUIRE(t.learned_class(digest(9)) == Class::ham);  // learned once, known after the import
    }
    const auto sa = a.linear_samples(), sb = b.linear_samples();
    REQUIRE(sb.size() == 2);
    for (std::size_t i = 0; i < sa.size(); ++i) {
        REQUIRE(sa[i].c == sb[i].c);
        REQUIRE(sa[i].prefix == sb[i].prefix);
        REQUIRE(sa[i].terms == sb[i].terms);
    }
    // A page before the state, or beyond the weights, is refused.
    mailsift::testing::TestStore store_c(store_a.kind());
    const auto opened_c = store_c.open();
    auto refused = [&](const std::string& text) {
        std::istringstream bad(text);
        REQUIRE_THROWS_AS(opened_c->import_model(bad, "m.txt"), store::FormatError);
    };
    const std::string page_line = exported.substr(exported.find("linear-page\t"));
    refused("mailsift-model\t2\n" + page_line);
    std::string beyond = exported;
    beyond.replace(beyond.find("linear-page\t1\t"), 14, "linear-page\t4\t");
    refused(beyond);
    REQUIRE(opened_c->linear_weights_since(0).hash_bits == 0);
}

TEST_CASE("The settings a model was trained with travel with its export (version 3)", "[store]") {
    FOR_EACH_BACKEND(store_a);
    mailsift::testing::TestStore store_b(store_a.kind());
    const auto opened_a = store_a.open(), opened_b = store_b.open();
    store::Database &a = *opened_a, &b = *opened_b;
    const std::string settings = "features.words = on\nlinear_learner = logistic\nlinear_step = 2.5\n";
    {
        store::TrainingBatch t(a);
        t.keep_model_settings(settings);
        t.learn(digest(1), Class::spam, {{1, 1, "w:cheap"}}, 100);
        t.commit();
    }
    const std::string exported = export_of(a);
    REQUIRE(exported.rfind("mailsift-model\t3\nsetting\tfeatures.words\ton\nsetting\tlinear_learner\tlogistic\n"
                           "setting\tlinear_step\t2.5\nclass\t", 0) == 0);
    std::istringstream in(exported);
    b.import_model(in, "model.txt");
    REQUIRE(b.model_settings() == settings);
    REQUIRE(export_of(b) == exported);
    // A setting given twice, or in a version 2 file, is refused.
    mailsift::testing::TestStore store_c(store_a.kind());
    const auto opened_c = store_c.open();
    auto refused = [&](const std::string& text, const char* why) {
        std::istringstream bad(text);
        REQUIRE_THROWS_WITH(opened_c->import_model(bad, "m.txt"), Catch::Contains(why));
    };
    std::string twice = exported;
    twice.insert(twice.find("class\t"), "setting\tlinear_step\t4\n");
    refused(twice, "setting linear_step appears twice");
    std::string old = exported;
    old.replace(0, std::string("mailsift-model\t3").size(), "mailsift-model\t2");
    refused(old, "unknown record 'setting'");
    REQUIRE(opened_c->model_settings().empty());
}

TEST_CASE("The last refit's own change travels with the export (version 4)", "[store]") {
    FOR_EACH_BACKEND(store_a);
    mailsift::testing::TestStore store_b(store_a.kind());
    const auto opened_a = store_a.open(), opened_b = store_b.open();
    store::Database &a = *opened_a, &b = *opened_b;
    {
        store::TrainingBatch t(a);
        std::vector<float> delta(std::size_t{1} << 12, 0.0f);
        delta[5] = 0.75f;
        t.learn(digest(1), Class::spam, {{1, 1, "w:cheap"}}, 100);
        t.add_linear_weights(12, std::move(delta), 0.25, 0.0, 0, false,
                             store::RefitLayer{12, 0.125, -0.5, {{5, 0.5f}, {4095, -0.0625f}}});
        t.commit();
    }
    const std::string exported = export_of(a);
    REQUIRE(exported.rfind("mailsift-model\t4\n", 0) == 0);
    REQUIRE(exported.find("\nlinear-refit\t12\t0.125\t-0.5\t") != std::string::npos);
    std::istringstream in(exported);
    b.import_model(in, "model.txt");
    REQUIRE(export_of(b) == exported);
    const auto kept = b.linear_refit_layer();
    REQUIRE(kept);
    REQUIRE(kept->hash_bits == 12);
    REQUIRE(kept->bias == 0.125);
    REQUIRE(kept->nb_weight == -0.5);
    REQUIRE(kept->slots.size() == 2);
    REQUIRE(kept->slots[1].slot == 4095);
    REQUIRE(kept->slots[1].delta == -0.0625f);
    // Refused: in a version 3 file, twice, of another size than the weights, damaged.
    mailsift::testing::TestStore store_c(store_a.kind());
    const auto opened_c = store_c.open();
    auto refused = [&](const std::string& text, const char* why) {
        std::istringstream bad(text);
        REQUIRE_THROWS_WITH(opened_c->import_model(bad, "m.txt"), Catch::Contains(why));
    };
    const std::size_t at = exported.find("linear-refit\t");
    const std::string record = exported.substr(at, exported.find('\n', at) + 1 - at);
    std::string old = exported;
    old.replace(0, std::string("mailsift-model\t4").size(), "mailsift-model\t3");
    refused(old, "unknown record 'linear-refit'");
    std::string twice = exported;
    twice.insert(at, record);
    refused(twice, "a second 'linear-refit' record");
    std::string other = exported;
    other.replace(at, std::string("linear-refit\t12").size(), "linear-refit\t13");
    refused(other, "the last refit has 2^13 weights");
    std::string damaged = exported;
    damaged.replace(exported.find('\n', at) - 2, 2, "zz");
    refused(damaged, "lower-case hex digits only");
    REQUIRE_FALSE(opened_c->linear_refit_layer());
}

TEST_CASE("Import refuses a database that already holds a model", "[store]") {
    FOR_EACH_BACKEND(store_a);
    const auto opened_a = store_a.open();
    store::Database& a = *opened_a;
    {
        store::TrainingBatch b(a);
        b.learn(digest(1), Class::spam, terms({{1, 1}}), 100);
        b.commit();
    }
    const std::string before = export_of(a);
    SECTION("one with learned messages") {
        std::istringstream in(before);
        REQUIRE_THROWS_WITH(a.import_model(in, "m.txt"), Catch::Contains("already holds a model"));
    }
    SECTION("one with only contacts") {
        mailsift::testing::TestStore store_c(store_a.kind());
        const auto opened_c = store_c.open();
        store::Database& c = *opened_c;
        c.add_contact("x@example.org", "manual", 1);
        std::istringstream in(before);
        REQUIRE_THROWS_AS(c.import_model(in, "m.txt"), store::Error);
        REQUIRE(c.load_counts(model::TermFrequency::raw).features.empty());
    }
    REQUIRE(export_of(a) == before);
}

TEST_CASE("A malformed export is refused naming its line, and changes nothing", "[store]") {
    FOR_EACH_BACKEND(store_b);
    TempDir dir;
    std::string good;
    {
        Database a(dir.path / "a.db", Database::Mode::read_write);
        store::TrainingBatch b(a);
        b.learn(digest(1), Class::spam, terms({{1, 1}, {2, 2}}), 100);
        b.add_contact("a@example.org", "learned-ham", 100);
        b.commit();
        good = export_of(a);
    }
    // good: 1 header, 2-3 classes, 4-5 features, 6 message, 7 contact, 8 end
    std::vector<std::string> lines;
    {
        std::istringstream in(good);
        for (std::string l; std::getline(in, l);) lines.push_back(l);
    }
    REQUIRE(lines.size() == 8);
    auto with_line = [&](std::size_t n, const std::string& replacement) {
        std::string out;
        for (std::size_t i = 0; i < lines.size(); ++i) out += (i + 1 == n ? replacement : lines[i]) + "\n";
        return out;
    };
    auto without_line = [&](std::size_t n) {
        std::string out;
        for (std::size_t i = 0; i < lines.size(); ++i) {
            if (i + 1 != n) out += lines[i] + "\n";
        }
        return out;
    };
    const std::string f1 = lines[3].substr(0, lines[3].rfind('\t'));  // feature 1 without its text
    struct Case {
        const char* what;
        std::string text;
        std::string expected;
    };
    const Case cases[] = {
        {"an empty file", "", "m.txt:1: empty file"},
        {"another file", "From: someone\n", "m.txt:1: not a mailsift model export"},
        {"a newer version", with_line(1, "mailsift-model\t5"), "m.txt:1: format version '5' is not supported"},
        {"linear records in version 1", with_line(6, "linear\t18\t0\t1\t0\t0"), "m.txt:6: unknown record 'linear'"},
        {"an unknown record", with_line(6, "mesage\tx"), "m.txt:6: unknown record 'mesage'"},
        {"a missing field", with_line(4, f1), "m.txt:4: a 'feature' record has 8 tab-separated fields, this line 7"},
        {"a bad id", with_line(4, "feature\t12\t1\t0\t1\t0\t100\tw:x"), "m.txt:4: feature id '12' is not 16 hex digits"},
        {"a negative count", with_line(2, "class\tspam\t-1\t3\t2"), "m.txt:2: count '-1' is not a count"},
        {"a duplicate feature", with_line(5, lines[3]), "m.txt:5: feature 0000000000000001 appears twice"},
        {"a bad escape", with_line(4, f1 + "\tw:\\q"), "m.txt:4: feature text: unknown escape \\q"},
        {"a raw control byte", with_line(4, f1 + "\tw:\x01"), "m.txt:4: feature text: unescaped control character"},
        {"a bad feature list", with_line(6, lines[5] + ",zz:1"), "m.txt:6: feature list item 'zz:1'"},
        {"a zero count in a feature list", with_line(6, lines[5].substr(0, lines[5].rfind(':')) + ":0"),
         "m.txt:6: feature list item"},
        {"a bad class", with_line(6, "message\t" + std::string(32, '0') + "\tjunk\t1\t"), "m.txt:6: class 'junk'"},
        {"a missing class", without_line(3), "m.txt:7: no 'class ham' record"},
        {"a truncated file", without_line(8), "m.txt:8: no 'end' line: the file is incomplete"},
        {"a wrong end count", with_line(8, "end\t2\t1\t0"), "m.txt:8: the 'end' line counts 2 features, 1 messages and 0 contacts"},
        {"text after the end", good + "feature\tx\n", "m.txt:9: text after the 'end' line"},
        {"CRLF line ends", with_line(2, lines[1] + "\r"), "m.txt:2: line ends in a carriage return"},
    };
    const auto opened_b = store_b.open();
    store::Database& b = *opened_b;
    for (const auto& c : cases) {
        INFO(c.what);
        std::istringstream in(c.text);
        REQUIRE_THROWS_AS(b.import_model(in, "m.txt"), store::FormatError);
        std::istringstream again(c.text);
        REQUIRE_THROWS_WITH(b.import_model(again, "m.txt"), Catch::StartsWith(c.expected));
        // Rolled back: still empty, so the next import is allowed at all.
        const auto st = b.statistics();
        REQUIRE(st.distinct_features == 0);
        REQUIRE(st.contacts == 0);
        REQUIRE(st.messages.spam == 0);
    }
    std::istringstream in(good);
    b.import_model(in, "m.txt");
    REQUIRE(export_of(b) == good);
}

TEST_CASE("A backup is taken while another connection is writing", "[store]") {
    TempDir dir;
    const auto path = dir.path / "live.db";
    Database writer(path, Database::Mode::read_write);
    {
        store::TrainingBatch b(writer);
        b.learn(digest(1), Class::spam, terms({{1, 1}, {2, 3}}), 100);
        b.commit();
    }
    Database source(path, Database::Mode::read_only, std::chrono::milliseconds(200));
    const std::string committed = export_of(source);
    const auto copy = dir.path / "copy.db";
    {
        // The writer holds the write lock with changes not yet committed.
        store::TrainingBatch open(writer);
        open.learn(digest(2), Class::ham, terms({{3, 1}}), 200);
        source.backup(copy, false);
        open.commit();
    }
    Database restored(copy, Database::Mode::read_only);
    REQUIRE(export_of(restored) == committed);  // the committed state, not the open transaction
    const auto a = restored.statistics();
    REQUIRE(a.messages.spam == 1);
    REQUIRE(a.messages.ham == 0);
    REQUIRE(a.schema_version == store::schema_version);
    REQUIRE(export_of(writer) != committed);
    // No temporary file is left beside it.
    std::size_t files = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir.path)) {
        if (e.path().filename().string().find("partial") != std::string::npos) ++files;
    }
    REQUIRE(files == 0);
}

TEST_CASE("A backup does not replace a file unless asked to", "[store]") {
    TempDir dir;
    const auto path = dir.path / "live.db";
    Database db(path, Database::Mode::read_write);
    db.add_contact("a@example.org", "manual", 1);
    const auto dest = dir.path / "copy.db";
    SECTION("an existing file") {
        std::ofstream(dest) << "precious";
        REQUIRE_THROWS_WITH(db.backup(dest, false), Catch::Contains("already exists"));
        std::ifstream in(dest);
        std::string content;
        std::getline(in, content);
        REQUIRE(content == "precious");
        db.backup(dest, true);
        REQUIRE(Database(dest, Database::Mode::read_only).contacts().size() == 1);
    }
    SECTION("a stale write-ahead log of that name") {
        std::ofstream(dest.string() + "-wal") << "old log";
        REQUIRE_THROWS_WITH(db.backup(dest, false), Catch::Contains("-wal: already exists"));
        REQUIRE_FALSE(std::filesystem::exists(dest));
        db.backup(dest, true);
        REQUIRE_FALSE(std::filesystem::exists(dest.string() + "-wal"));
        REQUIRE(Database(dest, Database::Mode::read_only).contacts().size() == 1);
    }
    SECTION("the database itself or its write-ahead log") {
        REQUIRE_THROWS_WITH(db.backup(path, true), Catch::Contains("is the database itself"));
        REQUIRE(std::filesystem::exists(path.string() + "-wal"));  // open connections keep it
        REQUIRE_THROWS_WITH(db.backup(path.string() + "-wal", true), Catch::Contains("is the database's own wal"));
        REQUIRE(db.contacts().size() == 1);
        REQUIRE(Database(path, Database::Mode::read_only).contacts().size() == 1);
    }
}

TEST_CASE("Contacts added in bulk report how many were new", "[store]") {
    FOR_EACH_BACKEND(store_);
    const auto opened = store_.open();
    store::Database& db = *opened;
    db.add_contact("a@example.org", "manual", 1);
    const std::vector<store::Contact> list = {
        {"a@example.org", "imported", 2}, {"b@example.org", "imported", 2}, {"b@example.org", "imported", 2}};
    REQUIRE(db.add_contacts(list) == 1);
    const auto all = db.contacts();
    REQUIRE(all.size() == 2);
    REQUIRE(all[0].source == "manual");  // an existing contact keeps its source
    REQUIRE(all[1].source == "imported");
}

TEST_CASE("counts_of reads some rows with the totals and the vocabulary visit_counts gives, through learning, "
          "unlearning, prune and import",
          "[store]") {
    FOR_EACH_BACKEND(s);
    auto opened = s.open();
    store::Database& db = *opened;
    // What the whole read says: the class totals and the number of rows.
    auto whole = [&](model::TermFrequency tf) {
        std::size_t n = 0, visited = 0;
        const auto totals = db.visit_counts(tf, [&](std::size_t size) { n = size; }, [&](model::FeatureId, model::ClassCounts) { ++visited; });
        REQUIRE(n == visited);
        return std::pair(totals, n);
    };
    auto agrees = [&](std::vector<model::FeatureId> ids) {
        for (const auto tf : {model::TermFrequency::boolean, model::TermFrequency::raw}) {
            const auto [totals, n] = whole(tf);
            const auto some = db.counts_of(ids, tf);
            REQUIRE(some.vocabulary == n);
            REQUIRE(some.totals.messages == totals.messages);
            REQUIRE(some.totals.feature_totals == totals.feature_totals);
            REQUIRE(some.totals.sequence == totals.sequence);
            const auto counts = db.load_counts(tf);
            REQUIRE(some.features.size() == ids.size());
            for (std::size_t i = 0; i < ids.size(); ++i) {
                const auto it = counts.features.find(ids[i]);
                REQUIRE(some.features[i].id == ids[i]);
                REQUIRE(some.features[i].present == (it != counts.features.end()));
                if (it != counts.features.end()) REQUIRE(some.features[i].counts == it->second);
            }
        }
    };
    agrees({1, 2});
    {
        store::TrainingBatch b(db);
        b.learn(digest(1), Class::spam, terms({{1, 2}, {2, 1}, {3, 1}}), 100);
        b.learn(digest(2), Class::ham, terms({{3, 4}, {4, 1}}), 100);
        b.learn(digest(3), Class::ham, terms({{5, 1}, {static_cast<model::FeatureId>(-7), 1}}), 900);
        b.commit();
    }
    agrees({4, 1, 99, 3, static_cast<model::FeatureId>(-7)});
    REQUIRE(db.counts_of({}, model::TermFrequency::boolean).vocabulary == 6);
    {
        // Unlearning removes rows that held nothing else; learning again in the same batch does not count twice.
        store::TrainingBatch b(db);
        b.unlearn(digest(2), Class::ham);
        b.learn(digest(4), Class::spam, terms({{1, 1}, {6, 1}}), 200);
        // Read mid-batch, through the batch: the rows as they were before it.
        const auto mid = b.stored_counts({6, 4, 1}, model::TermFrequency::raw);
        REQUIRE_FALSE(mid[0]);
        REQUIRE(mid[1] == model::ClassCounts{0, 1});
        REQUIRE(mid[2] == model::ClassCounts{2, 0});
        b.commit();
    }
    agrees({4, 6, 3});
    REQUIRE(db.counts_of({}, model::TermFrequency::boolean).vocabulary == 6);  // 4 went, 6 came
    // A prune of features seen once and not since 500.
    db.prune(0, 500);
    agrees({5, 6, 1, static_cast<model::FeatureId>(-7)});
    // An import fills a new store: its vocabulary is the rows it holds.
    mailsift::testing::TestStore other(s.kind());
    const auto opened_other = other.open();
    std::istringstream in(export_of(db));
    opened_other->import_model(in, "m.txt");
    REQUIRE(opened_other->counts_of({}, model::TermFrequency::raw).vocabulary ==
            db.counts_of({}, model::TermFrequency::raw).vocabulary);
}
