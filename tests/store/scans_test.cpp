// Recorded scans on real SQLite files: the compact form gives back exactly the
// lines mailsiftd scored, is much smaller than them, and a schema 3 database
// with scans as text migrates to it.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "mailsift/store/training_batch.hpp"
#include "../support/typical_scan.hpp"
#include "../support/backends.hpp"
#include "../support/temp_dir.hpp"
#include "mailsift/store/sqlite_database.hpp"
#include "store_support.hpp"

#include <sqlite3.h>

using namespace mailsift;
using mailsift::testing::digest;
using mailsift::testing::Raw;
using mailsift::testing::TempDir;
using Database = store::SqliteDatabase;

namespace {

std::vector<std::string> sorted_lines(const std::string& text) {
    std::vector<std::string> out;
    std::size_t start = 0;
    while (start < text.size()) {
        const std::size_t nl = text.find('\n', start);
        out.push_back(text.substr(start, nl - start));
        start = nl == std::string::npos ? text.size() : nl + 1;
    }
    std::sort(out.begin(), out.end());
    return out;
}

using mailsift::testing::typical_scan;

store::Recording scans_at(int first, int count, std::int64_t at) {
    store::Recording rec;
    for (int i = first; i < first + count; ++i) {
        store::Digest id{};
        id[0] = static_cast<std::uint8_t>(i);
        id[1] = static_cast<std::uint8_t>(i >> 8);
        rec.scans.push_back({id, at, model::Verdict::ham, typical_scan(i)});
    }
    return rec;
}

}  // namespace

TEST_CASE("A recorded scan gives back every line it was given, whatever the feature text holds", "[store]") {
    FOR_EACH_BACKEND(store_);
    const auto opened = store_.open();
    store::Database& db = *opened;
    const std::string lines =
        "w:zebra\t1\n"
        "hdr:from:a@example.org\t1\n"
        "w:zeb\t300\n"               // a count past one varint byte; a prefix of the line above
        "w:caf\xc3\xa9\t2\n"         // UTF-8
        "w:tab\there\t7\n"           // a tab inside the text: the count follows the last one
        "url:example.com/a\t1\n"
        "url:example.com/ab\t4294967295\n"
        "\t1\n";                      // empty text
    store::Recording rec;
    rec.scans.push_back({digest(1), 100, model::Verdict::unsure, lines});
    db.record(rec);

    const auto scan = db.find_scan(digest(1));
    REQUIRE(scan);
    REQUIRE(scan->scanned_at == 100);
    REQUIRE(scan->verdict == model::Verdict::unsure);
    REQUIRE(sorted_lines(scan->features) == sorted_lines(lines));

    SECTION("recording the same signature again replaces the scan") {
        store::Recording again;
        again.scans.push_back({digest(1), 200, model::Verdict::spam, "w:other\t1\n"});
        db.record(again);
        const auto now = db.find_scan(digest(1));
        REQUIRE(now);
        REQUIRE(now->verdict == model::Verdict::spam);
        REQUIRE(now->features == "w:other\t1\n");
    }
    SECTION("an empty scan stays empty") {
        store::Recording empty;
        empty.scans.push_back({digest(2), 300, model::Verdict::ham, ""});
        db.record(empty);
        REQUIRE(db.find_scan(digest(2))->features.empty());
    }
}

TEST_CASE("A recorded scan is stored in well under half the bytes of its lines", "[store]") {
    FOR_EACH_BACKEND(raw);
    std::size_t text_bytes = 0;
    {
        const auto opened = raw.open();
        store::Database& db = *opened;
        store::Recording rec;
        for (int i = 0; i < 50; ++i) {
            rec.scans.push_back({digest(static_cast<std::uint8_t>(i)), i, model::Verdict::ham, typical_scan(i)});
            text_bytes += rec.scans.back().features.size();
        }
        db.record(rec);
        for (int i = 0; i < 50; ++i) {
            REQUIRE(sorted_lines(db.find_scan(digest(static_cast<std::uint8_t>(i)))->features) ==
                    sorted_lines(typical_scan(i)));
        }
    }
    if (raw.kind() == "sqlite") REQUIRE(raw.value("SELECT count(*) FROM signatures WHERE typeof(features) <> 'blob'") == 0);
    const auto stored = raw.value("SELECT sum(length(features)) FROM signatures");
    REQUIRE(stored);
    INFO("text " << text_bytes << " B, stored " << *stored << " B");
    REQUIRE(static_cast<std::size_t>(*stored) * 2 < text_bytes);
}

TEST_CASE("A damaged scan is an error naming it, and the other scans still read", "[store]") {
    FOR_EACH_BACKEND(raw);
    const auto opened = raw.open();
    store::Database& db = *opened;
    store::Recording rec;
    rec.scans.push_back({digest(1), 1, model::Verdict::spam, "w:a\t1\n"});
    rec.scans.push_back({digest(2), 2, model::Verdict::spam, "w:b\t1\n"});
    db.record(rec);
    raw.exec(raw.kind() == "sqlite" ? "UPDATE signatures SET features = x'01ff0000' WHERE scanned_at = 1"
                                    : "UPDATE signatures SET features = '\\x01ff0000'::bytea WHERE scanned_at = 1");
    REQUIRE_THROWS_WITH(db.find_scan(digest(1)), Catch::Contains("recorded scan") && Catch::Contains("damaged"));
    REQUIRE(db.find_scan(digest(2))->features == "w:b\t1\n");
}

TEST_CASE("A schema 3 database with scans as text lines migrates to the compact form, and its scans read", "[store]") {
    TempDir dir;
    const auto path = dir.path / "old.db";
    { Database db(path, Database::Mode::read_write); }
    {
        // What schema 3 wrote: the signatures table with a TEXT column of lines.
        Raw raw(path);
        raw.exec(std::string(mailsift::testing::scans_as_schema_3) +
            "INSERT INTO signatures VALUES (x'01000000000000000000000000000000', 10, 2, 'w:money\t3\nhdr:from:a@b.c\t1\n');"
            "INSERT INTO signatures VALUES (x'02000000000000000000000000000000', 20, 0, 'w:hello\t1\n');"
            "PRAGMA user_version = 3;");
    }
    {
        Database db(path, Database::Mode::read_write);
        const auto one = db.find_scan(digest(1));
        REQUIRE(one);
        REQUIRE(one->scanned_at == 10);
        REQUIRE(one->verdict == model::Verdict::spam);
        REQUIRE(sorted_lines(one->features) == sorted_lines("w:money\t3\nhdr:from:a@b.c\t1\n"));
        REQUIRE(db.find_scan(digest(2))->features == "w:hello\t1\n");
        REQUIRE(db.prune(15, 0).signatures == 1);  // the index on scanned_at serves prune as before
        REQUIRE_FALSE(db.find_scan(digest(1)));
    }
    Raw raw(path);
    REQUIRE(raw.value("PRAGMA user_version") == store::schema_version);
    REQUIRE(raw.value("SELECT count(*) FROM signatures WHERE typeof(features) <> 'blob'") == 0);
    REQUIRE(raw.value("SELECT count(*) FROM sqlite_schema WHERE name = 'signatures_scanned_at'") == 1);
    REQUIRE(raw.value("SELECT count(*) FROM sqlite_schema WHERE name = 'signatures_compact'") == 0);
}

TEST_CASE("Once enough scans are recorded, new ones are compressed against a dictionary of them", "[store]") {
    FOR_EACH_BACKEND(raw);
    const auto opened = raw.open();
    store::Database& db = *opened;
    db.record(scans_at(0, 150, 1000));  // too few to learn a dictionary from
    REQUIRE(raw.value("SELECT count(*) FROM scan_dictionaries") == 0);
    db.record(scans_at(150, 100, 1010));
    REQUIRE(raw.value("SELECT count(*) FROM scan_dictionaries") == 1);
    REQUIRE(raw.value("SELECT count(*) FROM signatures WHERE dictionary IS NULL") == 150);
    REQUIRE(raw.value("SELECT count(*) FROM signatures WHERE dictionary IS NOT NULL") == 100);
    const auto without = raw.value("SELECT CAST(avg(length(features)) AS BIGINT) FROM signatures WHERE dictionary IS NULL");
    const auto with = raw.value("SELECT CAST(avg(length(features)) AS BIGINT) FROM signatures WHERE dictionary IS NOT NULL");
    INFO("average scan " << *without << " B without a dictionary, " << *with << " B with");
    REQUIRE(*with < *without);

    const auto other_opened = raw.open(Database::Mode::read_only);  // a connection that loads the dictionary anew
    store::Database& other = *other_opened;
    for (int i = 0; i < 250; ++i) {
        const auto rec = scans_at(i, 1, 0);
        const auto scan = other.find_scan(rec.scans[0].id);
        REQUIRE(scan);
        REQUIRE(sorted_lines(scan->features) == sorted_lines(rec.scans[0].features));
    }

    SECTION("a week later a new one is learned, and pruning drops the old one with its last scan") {
        const std::int64_t week_later = 1010 + 8 * 86400;
        db.record(scans_at(250, 200, week_later));  // enough new scans to learn from
        REQUIRE(raw.value("SELECT count(*) FROM scan_dictionaries") == 2);
        REQUIRE(raw.value("SELECT count(*) FROM signatures WHERE dictionary = (SELECT max(id) FROM scan_dictionaries)") == 200);
        REQUIRE(db.prune(1005, 0).signatures == 150);  // the scans of the first dictionary are left
        REQUIRE(raw.value("SELECT count(*) FROM scan_dictionaries") == 2);
        REQUIRE(db.prune(week_later, 0).signatures == 100);
        REQUIRE(raw.value("SELECT count(*) FROM scan_dictionaries") == 1);
        const auto rec = scans_at(255, 1, 0);
        REQUIRE(sorted_lines(db.find_scan(rec.scans[0].id)->features) == sorted_lines(rec.scans[0].features));
        REQUIRE(sorted_lines(raw.open(Database::Mode::read_only)->find_scan(rec.scans[0].id)->features) ==
                sorted_lines(rec.scans[0].features));
    }
    SECTION("the newest dictionary stays when every scan is pruned") {
        REQUIRE(db.prune(2000, 0).signatures == 250);
        REQUIRE(raw.value("SELECT count(*) FROM scan_dictionaries") == 1);
        db.record(scans_at(300, 1, 2000));
        REQUIRE(raw.value("SELECT count(*) FROM signatures WHERE dictionary IS NOT NULL") == 1);
    }
}

TEST_CASE("A schema 3 database with many text scans gets a dictionary as it migrates", "[store]") {
    TempDir dir;
    const auto path = dir.path / "old.db";
    { Database db(path, Database::Mode::read_write); }
    {
        Raw raw(path);
        raw.exec(mailsift::testing::scans_as_schema_3);
        raw.exec("PRAGMA user_version = 3");
    }
    {
        // Written as schema 3 did: the lines as text.
        sqlite3* db = nullptr;
        REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
        sqlite3_stmt* ins = nullptr;
        REQUIRE(sqlite3_prepare_v2(db, "INSERT INTO signatures VALUES (?1, 100, 2, ?2)", -1, &ins, nullptr) == SQLITE_OK);
        sqlite3_exec(db, "BEGIN", nullptr, nullptr, nullptr);
        for (const auto& scan : scans_at(0, 300, 100).scans) {
            sqlite3_bind_blob(ins, 1, scan.id.data(), static_cast<int>(scan.id.size()), SQLITE_TRANSIENT);
            sqlite3_bind_text(ins, 2, scan.features.data(), static_cast<int>(scan.features.size()), SQLITE_TRANSIENT);
            REQUIRE(sqlite3_step(ins) == SQLITE_DONE);
            sqlite3_reset(ins);
        }
        sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr);
        sqlite3_finalize(ins);
        sqlite3_close(db);
    }
    Database db(path, Database::Mode::read_write);
    Raw raw(path);
    REQUIRE(raw.value("SELECT count(*) FROM scan_dictionaries") == 1);
    REQUIRE(raw.value("SELECT count(*) FROM signatures WHERE dictionary IS NOT NULL AND typeof(features) = 'blob'") == 300);
    for (const auto& scan : scans_at(0, 300, 100).scans) {
        REQUIRE(sorted_lines(db.find_scan(scan.id)->features) == sorted_lines(scan.features));
    }
}

TEST_CASE("Scans packed where they were scored are written as they are, or packed again for another database",
          "[store]") {
    FOR_EACH_BACKEND(raw);
    mailsift::testing::TestStore other_raw(raw_kind);  // another database: its own dictionary under the same id
    const auto opened = raw.open();
    store::Database& db = *opened;
    const auto other_opened = other_raw.open();
    store::Database& other = *other_opened;

    // Before a database has a dictionary, scans are packed without one.
    const auto lines = scans_at(400, 1, 0).scans[0].features;
    const auto packed_id = [](std::uint8_t n) {
        store::Digest id{};
        id[0] = n;
        id[2] = 1;  // apart from scans_at()'s
        return id;
    };
    store::Recording first;
    first.packed.push_back(store::ScanPacker().pack(packed_id(1), 900, model::Verdict::spam, lines));
    db.record(first);
    REQUIRE(raw.value("SELECT count(*) FROM signatures WHERE dictionary IS NULL") == 1);

    db.record(scans_at(0, 250, 1000));
    other.record(scans_at(1000, 250, 1000));
    const store::ScanPacker packer = db.scan_packer(1000);
    REQUIRE(raw.value("SELECT count(*) FROM scan_dictionaries") == 1);
    REQUIRE(other_raw.value("SELECT count(*) FROM scan_dictionaries") == 1);  // id 1 too, other bytes

    const auto packed = packer.pack(packed_id(2), 1001, model::Verdict::ham, lines);
    store::Recording here, there;
    here.packed.push_back(packed);
    there.packed.push_back(packed);
    db.record(here);
    other.record(there);
    // Here: its dictionary, the bytes as packed. There: packed again with that database's own.
    REQUIRE(raw.value("SELECT dictionary FROM signatures WHERE scanned_at = 1001") ==
            raw.value("SELECT max(id) FROM scan_dictionaries"));
    REQUIRE(raw.value("SELECT length(features) FROM signatures WHERE scanned_at = 1001") ==
            static_cast<std::int64_t>(packed.blob.size()));
    REQUIRE(other_raw.value("SELECT dictionary FROM signatures WHERE scanned_at = 1001") ==
            other_raw.value("SELECT max(id) FROM scan_dictionaries"));
    REQUIRE(raw.value("SELECT last_used FROM scan_dictionaries") == 1001);
    REQUIRE(other_raw.value("SELECT last_used FROM scan_dictionaries") == 1001);
    for (auto* d : {&db, &other}) {
        const auto scan = d->find_scan(packed_id(2));
        REQUIRE(scan);
        REQUIRE(scan->verdict == model::Verdict::ham);
        REQUIRE(sorted_lines(scan->features) == sorted_lines(lines));
    }
    const auto fresh = raw.open(Database::Mode::read_only);  // loads the dictionary anew
    REQUIRE(sorted_lines(fresh->find_scan(packed_id(2))->features) == sorted_lines(lines));
    REQUIRE(sorted_lines(fresh->find_scan(packed_id(1))->features) == sorted_lines(lines));
}

TEST_CASE("The console's history is written with the scans and is searched and paged and pruned with them", "[store]") {
    FOR_EACH_BACKEND(s);
    auto db = s.open();
    auto entry = [](std::uint8_t n, std::int64_t at, model::Verdict v, std::string subject) {
        store::HistoryEntry e;
        e.signature = digest(n);
        e.scanned_at = at;
        e.verdict = v;
        e.probability = v == model::Verdict::spam ? 0.998 : 0.0125;
        e.action = v == model::Verdict::spam ? "tagged" : "accepted";
        e.sender = "<bounce-" + std::to_string(n) + "@lists.example>";
        e.recipients = "<alice@example.org>, <Bob@Example.org>";
        e.from = "Ünïcode Sender <news@shop.example>";
        e.subject = std::move(subject);
        e.size = 1000u + n;
        return e;
    };
    store::Recording r;
    r.history.push_back(entry(1, 1000, model::Verdict::ham, "Minutes of the meeting"));
    r.history.push_back(entry(2, 2000, model::Verdict::spam, "100% FREE <img src=x onerror=alert(1)>"));
    r.history.push_back(entry(3, 3000, model::Verdict::ham, "Re: 50_50 split"));
    db->record(r);

    auto all = db->history({});
    REQUIRE(all.size() == 3);
    CHECK(all[0].signature == digest(3));  // newest first
    CHECK(all[2].signature == digest(1));
    const auto& spam = all[1];
    CHECK(spam.scanned_at == 2000);
    CHECK(spam.verdict == model::Verdict::spam);
    CHECK(spam.probability == 0.998);
    CHECK(spam.action == "tagged");
    CHECK(spam.sender == "<bounce-2@lists.example>");
    CHECK(spam.recipients == "<alice@example.org>, <Bob@Example.org>");
    CHECK(spam.from == "Ünïcode Sender <news@shop.example>");
    CHECK(spam.subject == "100% FREE <img src=x onerror=alert(1)>");
    CHECK(spam.size == 1002);

    store::HistoryQuery q;
    q.verdict = model::Verdict::ham;
    CHECK(db->history(q).size() == 2);
    q = {};
    q.text = "bounce-3";  // sender
    REQUIRE(db->history(q).size() == 1);
    CHECK(db->history(q)[0].signature == digest(3));
    q.text = "BOB@example";  // recipients, ASCII case ignored
    CHECK(db->history(q).size() == 3);
    q.text = "100%";  // LIKE's wildcards are searched as themselves
    REQUIRE(db->history(q).size() == 1);
    CHECK(db->history(q)[0].signature == digest(2));
    q.text = "50_50";
    CHECK(db->history(q).size() == 1);
    q.text = "Minutes_of";  // as a wildcard, '_' would match the blank
    CHECK(db->history(q).empty());
    q = {};
    q.limit = 2;
    CHECK(db->history(q).size() == 2);
    q.before = 2000;  // the next page
    REQUIRE(db->history(q).size() == 1);
    CHECK(db->history(q)[0].signature == digest(1));

    // The same signature again (the same message delivered again): a line of its own, the first kept.
    store::Recording again;
    again.history.push_back(entry(1, 4000, model::Verdict::spam, "Minutes of the meeting"));
    db->record(again);
    all = db->history({});
    REQUIRE(all.size() == 4);
    CHECK(all[0].signature == digest(1));
    CHECK(all[0].verdict == model::Verdict::spam);
    CHECK(all[3].signature == digest(1));
    CHECK(all[3].verdict == model::Verdict::ham);
    CHECK(all[0].id != all[3].id);

    CHECK(db->prune_scans(2500, 1000).scans == 0);  // no scans, but the history before goes with them
    all = db->history({});
    REQUIRE(all.size() == 2);
    CHECK(all[1].signature == digest(3));
    db->prune(3500, 0);
    REQUIRE(db->history({}).size() == 1);
    CHECK(db->history({})[0].scanned_at == 4000);
}

TEST_CASE("History pages go on from the last line read, time then id, and never skip the lines of one second",
          "[store]") {
    FOR_EACH_BACKEND(s);
    auto db = s.open();
    // 250 messages scanned within one second, between lines of the seconds around it.
    store::Recording r;
    std::set<store::Digest> expected;
    for (int n = 0; n < 252; ++n) {
        store::HistoryEntry e;
        e.signature = digest(static_cast<std::uint8_t>(n % 256));
        (*e.signature)[1] = static_cast<std::uint8_t>((n * 37) % 251);  // signatures in no particular order
        e.scanned_at = n == 0 ? 999 : n == 251 ? 1001 : 1000;
        e.action = "accepted";
        r.history.push_back(e);
        expected.insert(*e.signature);
    }
    db->record(r);
    std::set<store::Digest> seen;
    std::vector<store::HistoryEntry> order;
    store::HistoryQuery q;
    q.limit = 100;
    int pages = 0;
    for (;;) {
        const auto page = db->history(q);
        if (page.empty()) break;
        ++pages;
        REQUIRE(pages <= 3);
        for (const auto& e : page) {
            REQUIRE(seen.insert(*e.signature).second);  // never the same line twice
            order.push_back(e);
        }
        q.after = store::HistoryQuery::After{page.back().scanned_at, page.back().probability, page.back().id};
    }
    CHECK(pages == 3);
    CHECK(seen == expected);
    REQUIRE(order.size() == 252);
    CHECK(order.front().scanned_at == 1001);
    CHECK(order.back().scanned_at == 999);
    for (std::size_t i = 1; i < order.size(); ++i) {
        const bool in_order = order[i - 1].scanned_at > order[i].scanned_at ||
                              (order[i - 1].scanned_at == order[i].scanned_at && order[i - 1].id > order[i].id);
        REQUIRE(in_order);
    }
    // And the lines of that second as they arrived (recorded n = 1 ... 250), last first.
    std::vector<int> arrival;
    for (const auto& e : order) arrival.push_back((*e.signature)[0]);
    std::vector<int> recorded(252);
    for (int n = 0; n < 252; ++n) recorded[static_cast<std::size_t>(n)] = 251 - n;
    CHECK(arrival == recorded);
    // A page by time alone (before = a whole second) still starts below that second.
    q = {};
    q.before = 1000;
    REQUIRE(db->history(q).size() == 1);
}

TEST_CASE("A history line keeps its explanation, read only when asked for, and lines from before it have none", "[store]") {
    FOR_EACH_BACKEND(s);
    const std::string kept = "mailsift-parts\t1\t2.5\t-0.25\t1.75\n+\t0.5\t3\t1\tsubject:Ünïcode";
    {
        auto db = s.open();
        store::Recording r;
        for (std::uint8_t n = 1; n <= 2; ++n) {
            store::HistoryEntry e;
            e.signature = digest(n);
            e.scanned_at = 1000 + n;
            e.action = "accepted";
            e.explanation = n == 1 ? kept : "";
            r.history.push_back(e);
        }
        db->record(r);
        CHECK(db->history({})[1].explanation.empty());  // a page of the list does not carry them
        store::HistoryQuery q;
        q.signature = digest(1);
        q.explanations = true;
        const auto one = db->history(q);
        REQUIRE(one.size() == 1);
        CHECK(one[0].signature == digest(1));
        CHECK(one[0].explanation == kept);
        q.signature = digest(2);
        REQUIRE(db->history(q).size() == 1);
        CHECK(db->history(q)[0].explanation.empty());
        q.signature = digest(3);
        CHECK(db->history(q).empty());
    }
    // A store written before explanations were kept (SQLite schema 8, PostgreSQL 3) is brought up to date.
    s.exec("ALTER TABLE history DROP COLUMN explanation");
    s.exec(s.kind() == "sqlite" ? "PRAGMA user_version = 8" : "UPDATE mailsift_schema SET version = 3");
    auto db = s.open();
    store::HistoryQuery q;
    q.signature = digest(1);
    q.explanations = true;
    const auto migrated = db->history(q);
    REQUIRE(migrated.size() == 1);
    CHECK(migrated[0].scanned_at == 1001);
    CHECK(migrated[0].explanation.empty());
    CHECK(s.value(s.kind() == "sqlite" ? "PRAGMA user_version" : "SELECT version FROM mailsift_schema") ==
          (s.kind() == "sqlite" ? store::schema_version : db->statistics().schema_version));
}

TEST_CASE("The settings a model is trained with are recorded by the first commit that changes it, and never rewritten",
          "[store]") {
    FOR_EACH_BACKEND(s);
    auto db = s.open();
    REQUIRE(db->model_settings().empty());
    const store::TrainTerm term{42, 1, "w:word"};
    {
        // A batch that changes nothing records nothing.
        store::TrainingBatch b(*db);
        b.keep_model_settings("linear_step = 2\n");
        b.commit();
    }
    REQUIRE(db->model_settings().empty());
    {
        store::TrainingBatch b(*db);
        b.keep_model_settings("linear_step = 2\nfeatures.words = on\n");
        b.learn(digest(1), store::Class::spam, {term}, 1000);
        b.commit();
    }
    REQUIRE(db->model_settings() == "linear_step = 2\nfeatures.words = on\n");
    {
        store::TrainingBatch b(*db);
        b.keep_model_settings("linear_step = 8\n");
        b.learn(digest(2), store::Class::ham, {term}, 1000);
        b.commit();
    }
    REQUIRE(db->model_settings() == "linear_step = 2\nfeatures.words = on\n");
    // Another connection reads the same.
    REQUIRE(s.open()->model_settings() == "linear_step = 2\nfeatures.words = on\n");
}
