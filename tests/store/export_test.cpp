// Store tests of the model's export and import, on every backend (FOR_EACH_BACKEND): the same bytes
// back, the learned messages, the linear scorer's weights and samples, the settings (version 3) and
// the last refit's own change (version 4) along; a store that already holds a model, and a malformed
// export, refused, changing nothing.
#include "mailsift/store/training_batch.hpp"
#include "mailsift/store/sqlite_database.hpp"

#include <catch2/catch.hpp>
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "../support/backends.hpp"
#include "../support/temp_dir.hpp"
#include "store_support.hpp"

using namespace mailsift;
using TempDir = mailsift::testing::TempDir;
using mailsift::testing::digest;
using mailsift::testing::terms;
using mailsift::testing::require_consistent;
using mailsift::testing::export_of;
using store::Class;
using Database = store::SqliteDatabase;

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
