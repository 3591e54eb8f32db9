// The console's history and corrections on every backend: each filter finds
// what it should and no more, every order pages through lines that tie on
// their time or probability without skipping or repeating one, a skipped
// (unscored) line keeps why, a line shows its latest correction and the error
// rates count each scan's net effect, and a store from before these columns
// keeps its lines and corrections through the upgrade.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "mailsift/store/training_batch.hpp"
#include "../support/backends.hpp"
#include "store_support.hpp"

using namespace mailsift;
using mailsift::testing::digest;
using Class = store::Class;
using Order = store::HistoryQuery::Order;

namespace {

// A history line with the fields every test sets.
store::HistoryEntry line(std::uint8_t n, std::int64_t at, model::Verdict v, double probability, std::string action) {
    store::HistoryEntry e;
    e.signature = digest(n);
    e.scanned_at = at;
    e.verdict = v;
    e.probability = probability;
    e.action = std::move(action);
    e.size = 1000;
    return e;
}

// The first byte of each line's signature (digest(n) gives n), in the order read.
std::vector<int> numbers(const std::vector<store::HistoryEntry>& lines) {
    std::vector<int> out;
    for (const auto& e : lines) out.push_back(e.signature ? (*e.signature)[0] : -1);
    return out;
}

const char* name(Order o) {
    switch (o) {
        case Order::newest: return "newest";
        case Order::oldest: return "oldest";
        case Order::spammiest: return "spammiest";
        case Order::hammiest: return "hammiest";
    }
    return "?";
}

}  // namespace

TEST_CASE("Each history filter finds the lines it should and no others, and the count agrees whatever the limit",
          "[store]") {
    FOR_EACH_BACKEND(s);
    auto db = s.open();
    store::Recording r;
    auto a = line(1, 1000, model::Verdict::ham, 0.01, "accepted");
    a.sender = "<alice@example.org>";
    a.recipients = "<bob@example.net>";
    a.from = "Alice <alice@example.org>";
    a.to = "Bob <bob@example.net>";
    a.subject = "Lunch on Friday";
    a.message_id = "<lunch.1@example.org>";
    a.queue_id = "4QxAbC1";
    a.client_address = "192.0.2.1";
    a.helo = "mx.example.org";
    r.history.push_back(a);
    auto b = line(2, 2000, model::Verdict::spam, 0.99, "rejected");
    b.sender = "<promo@shop.example>";
    b.recipients = "<carol@example.net>";
    b.from = "Shop <promo@shop.example>";
    b.to = "undisclosed-recipients:;";
    b.subject = "CHEAP watches";
    b.message_id = "<9f8e@shop.example>";
    b.queue_id = "4QxAbC2";
    r.history.push_back(b);
    auto c = line(3, 3000, model::Verdict::unsure, 0.5, "tagged");
    c.sender = "<list@lists.example>";
    c.recipients = "<members@lists.example>";
    c.from = "List Robot <robot@lists.example>";
    c.to = "Dave <dave@example.net>";  // the only place Dave is named
    c.subject = "Re: minutes";
    c.message_id = "<minutes@lists.example>";
    c.queue_id = "4qxabc2";  // B's queue ID in other case
    r.history.push_back(c);
    auto d = line(4, 4000, model::Verdict::unsure, 0.0, "skipped");
    d.scored = false;
    d.reason = "authenticated sender";
    d.sender = "<erin@example.org>";
    d.recipients = "<frank@example.com>";
    d.to = "Frank <frank@example.com>";
    d.subject = "Report";
    d.message_id = "<report@example.org>";
    d.queue_id = "4QxAbC4";
    r.history.push_back(d);
    db->record(r);

    // The lines `q` finds, newest first; history_count() must say as many.
    auto found = [&](const store::HistoryQuery& q) {
        const auto lines = db->history(q);
        CHECK(db->history_count(q) == lines.size());
        return numbers(lines);
    };
    using V = std::vector<int>;
    store::HistoryQuery q;
    CHECK(found(q) == V{4, 3, 2, 1});
    const auto all = db->history(q);
    CHECK(all[3].to == "Bob <bob@example.net>");
    CHECK(all[3].message_id == "<lunch.1@example.org>");
    CHECK(all[3].queue_id == "4QxAbC1");
    CHECK(all[3].client_address == "192.0.2.1");
    CHECK(all[3].helo == "mx.example.org");
    CHECK(all[3].reason.empty());
    CHECK_FALSE(all[3].corrected);

    q = {};
    q.verdict = model::Verdict::spam;
    CHECK(found(q) == V{2});
    q.verdict = model::Verdict::unsure;  // not the skipped line, which has no verdict
    CHECK(found(q) == V{3});

    q = {};
    q.action = "skipped";
    CHECK(found(q) == V{4});
    q.action = "tagged";
    CHECK(found(q) == V{3});
    q.action = "skip";  // the whole action
    CHECK(found(q).empty());

    q = {};
    q.text = "4QXABC1";  // the queue ID, case ignored
    CHECK(found(q) == V{1});
    q.text = "9F8E@";  // the Message-ID
    CHECK(found(q) == V{2});
    q.text = "dave@";  // the To: header field
    CHECK(found(q) == V{3});
    q.text = "robot";  // the From: header field
    CHECK(found(q) == V{3});
    q.text = "example.net";  // recipients of A and B, To: of C
    CHECK(found(q) == V{3, 2, 1});
    q.text = "192.0.2.1";  // the client's address (issue 41: shown, so searchable)
    CHECK(found(q) == V{1});
    q.text = "MX.example";  // its HELO
    CHECK(found(q) == V{1});
    q = {};
    q.client = "192.0.2.1";  // the client filter: address or HELO
    CHECK(found(q) == V{1});
    q.client = "mx.EXAMPLE.org";
    CHECK(found(q) == V{1});
    q.client = "example.net";
    CHECK(found(q).empty());

    q = {};
    q.sender = "ALICE";
    CHECK(found(q) == V{1});
    q.sender = "example.org";
    CHECK(found(q) == V{4, 1});
    q.sender = "robot";  // in From: only
    CHECK(found(q).empty());

    q = {};
    q.recipient = "DAVE";  // in To: only
    CHECK(found(q) == V{3});
    q.recipient = "bob";  // in both
    CHECK(found(q) == V{1});
    q.recipient = "frank@";
    CHECK(found(q) == V{4});
    q.recipient = "alice";  // the sender's
    CHECK(found(q).empty());

    q = {};
    q.subject = "MINUTES";
    CHECK(found(q) == V{3});
    q.subject = "example";  // in every other field, in no subject
    CHECK(found(q).empty());

    q = {};
    q.queue_id = "4QxAbC2";
    CHECK(found(q) == V{2});
    q.queue_id = "4qxabc2";  // case kept
    CHECK(found(q) == V{3});
    q.queue_id = "4QxAbC";  // the whole queue ID only
    CHECK(found(q).empty());

    q = {};
    q.message_id = "<minutes@lists.example>";
    CHECK(found(q) == V{3});
    q.message_id = "minutes@lists.example";  // without its angle brackets
    CHECK(found(q) == V{3});
    q.message_id = "minutes";  // the whole Message-ID only
    CHECK(found(q).empty());
    q.message_id = "<MINUTES@lists.example>";
    CHECK(found(q).empty());

    q = {};
    q.since = 2000;
    CHECK(found(q) == V{4, 3, 2});
    q = {};
    q.before = 3000;
    CHECK(found(q) == V{2, 1});
    q.since = 2000;
    CHECK(found(q) == V{2});
    q.since = 2001;
    CHECK(found(q).empty());

    q = {};
    q.signature = digest(2);
    CHECK(found(q) == V{2});
    q = {};
    q.id = all[1].id;  // a line by its own id
    CHECK(found(q) == V{3});
    q.id = all[0].id + 1;  // no line has it yet
    CHECK(found(q).empty());

    q = {};
    q.verdict = model::Verdict::ham;  // filters go together
    q.text = "example.net";
    CHECK(found(q) == V{1});

    q = {};
    q.text = "example";
    q.limit = 1;
    CHECK(db->history(q).size() == 1);
    CHECK(db->history_count(q) == 4);
    q.order = Order::spammiest;  // without the skipped line
    CHECK(numbers(db->history(q)) == V{2});
    CHECK(db->history_count(q) == 3);
}

TEST_CASE("Every history order pages through lines of one second and of one probability, each line once and in order",
          "[store]") {
    FOR_EACH_BACKEND(s);
    auto db = s.open();
    // 230 lines of one second (each its own probability), 230 of one
    // probability (each its own second; a third has no short exact digits),
    // the two probabilities nearest that one, and 20 skipped lines in that second.
    const double third = 1.0 / 3.0;
    std::vector<store::HistoryEntry> lines;
    auto add = [&](std::int64_t at, double probability, bool scored) {
        store::HistoryEntry e;
        const int n = static_cast<int>(lines.size());
        e.signature.emplace();
        (*e.signature)[0] = static_cast<std::uint8_t>((n * 37) % 251);  // signatures in no particular order
        (*e.signature)[1] = static_cast<std::uint8_t>(n & 0xff);
        (*e.signature)[2] = static_cast<std::uint8_t>(n >> 8);
        e.id = n;  // the order of arrival, for the expectation (the store numbers them itself)
        e.scanned_at = at;
        e.scored = scored;
        e.verdict = probability > 0.9 ? model::Verdict::spam : model::Verdict::ham;
        e.probability = scored ? probability : 0.0;
        e.action = scored ? "accepted" : "skipped";
        lines.push_back(e);
    };
    for (int k = 0; k < 230; ++k) add(5000, 0.4 + (k + 1) / 1000.0, true);
    for (int k = 0; k < 230; ++k) add(6000 + k, third, true);
    add(4999, std::nextafter(third, 1.0), true);
    add(7000, std::nextafter(third, 0.0), true);
    for (int k = 0; k < 20; ++k) add(5000, 0.0, false);
    store::Recording r;
    r.history = lines;
    db->record(r);

    for (const Order order : {Order::newest, Order::oldest, Order::spammiest, Order::hammiest}) {
        INFO("order: " << name(order));
        const bool by_probability = order == Order::spammiest || order == Order::hammiest;
        std::vector<store::HistoryEntry> expected;
        for (const auto& e : lines) {
            if (e.scored || !by_probability) expected.push_back(e);
        }
        std::sort(expected.begin(), expected.end(), [&](const auto& a, const auto& b) {
            switch (order) {
                case Order::newest:  // oldest reversed: a second's lines last arrived first
                    return a.scanned_at != b.scanned_at ? a.scanned_at > b.scanned_at : a.id > b.id;
                case Order::oldest:
                    return a.scanned_at != b.scanned_at ? a.scanned_at < b.scanned_at : a.id < b.id;
                case Order::spammiest:
                    return a.probability != b.probability ? a.probability > b.probability : a.id < b.id;
                case Order::hammiest:
                    return a.probability != b.probability ? a.probability < b.probability : a.id < b.id;
            }
            return false;
        });
        store::HistoryQuery q;
        q.order = order;
        q.limit = 100;
        std::vector<store::HistoryEntry> read;
        int pages = 0;
        for (;;) {
            const auto page = db->history(q);
            if (page.empty()) break;
            ++pages;
            REQUIRE(pages <= 5);
            read.insert(read.end(), page.begin(), page.end());
            const auto& last = page.back();
            q.after = store::HistoryQuery::After{last.scanned_at, last.probability, last.id};
        }
        CHECK(pages == 5);
        REQUIRE(read.size() == expected.size());
        for (std::size_t i = 0; i < read.size(); ++i) {
            INFO("line " << i);
            REQUIRE(read[i].signature == expected[i].signature);
            REQUIRE(read[i].probability == expected[i].probability);  // exactly, as written
        }
        CHECK(db->history_count(q) == expected.size());  // `after` aside
    }
}

TEST_CASE("A skipped line keeps why it was not scored, has no verdict or probability, and is left out of the "
          "probability orders",
          "[store]") {
    FOR_EACH_BACKEND(s);
    auto db = s.open();
    store::Recording r;
    auto skipped = line(1, 1000, model::Verdict::spam, 0.9, "skipped");  // the verdict and probability are not kept
    skipped.scored = false;
    skipped.reason = "authenticated sender";
    r.history.push_back(skipped);
    r.history.push_back(line(2, 900, model::Verdict::ham, 0.0, "accepted"));
    db->record(r);

    const auto all = db->history({});
    REQUIRE(all.size() == 2);
    CHECK_FALSE(all[0].scored);
    CHECK(all[0].probability == 0.0);
    CHECK(all[0].action == "skipped");
    CHECK(all[0].reason == "authenticated sender");
    CHECK(all[1].scored);
    CHECK(all[1].verdict == model::Verdict::ham);
    CHECK(all[1].reason.empty());

    store::HistoryQuery q;
    q.verdict = model::Verdict::spam;
    CHECK(db->history(q).empty());
    for (const Order order : {Order::spammiest, Order::hammiest}) {
        INFO("order: " << name(order));
        q = {};
        q.order = order;
        CHECK(numbers(db->history(q)) == std::vector<int>{2});
        CHECK(db->history_count(q) == 1);
    }
    q = {};
    q.order = Order::oldest;
    CHECK(numbers(db->history(q)) == std::vector<int>{2, 1});
}

TEST_CASE("A history line shows its latest correction, and the error rates count each scan's net effect", "[store]") {
    FOR_EACH_BACKEND(s);
    auto db = s.open();
    store::Recording r;
    r.history.push_back(line(1, 1000, model::Verdict::ham, 0.02, "accepted"));
    r.history.push_back(line(2, 1001, model::Verdict::ham, 0.03, "accepted"));
    r.history.push_back(line(3, 1002, model::Verdict::spam, 0.97, "tagged"));
    db->record(r);
    auto correct = [&](const store::Correction& c) {
        store::TrainingBatch b(*db);
        b.record_correction(c);
        b.commit();
    };
    auto latest = [&](std::uint8_t n) {
        store::HistoryQuery q;
        q.signature = digest(n);
        const auto one = db->history(q);
        REQUIRE(one.size() == 1);
        return one[0].corrected;
    };
    CHECK_FALSE(latest(1));

    // Line 1, said ham: corrected to spam, then back to ham.
    correct({model::Verdict::ham, Class::spam, 2000, digest(1), "console:alice", std::nullopt});
    auto corrected = latest(1);
    REQUIRE(corrected);
    CHECK(corrected->to == Class::spam);
    CHECK(corrected->at == 2000);
    CHECK(corrected->by == "console:alice");
    CHECK(db->corrections_since(0).false_negatives == 1);
    correct({model::Verdict::ham, Class::ham, 2100, digest(1), "cli:bob", std::nullopt});
    corrected = latest(1);
    REQUIRE(corrected);
    CHECK(corrected->to == Class::ham);
    CHECK(corrected->at == 2100);
    CHECK(corrected->by == "cli:bob");
    auto counts = db->corrections_since(0);
    CHECK(counts.false_negatives == 0);  // the message was right after all
    CHECK(counts.false_positives == 0);
    CHECK(counts.unsure_to_ham == 0);

    // Line 2, said ham: corrected to spam once.
    correct({model::Verdict::ham, Class::spam, 2200, digest(2), "console:alice", std::nullopt});
    // A tagged message corrected without its scan counts as it always did.
    correct({model::Verdict::spam, Class::ham, 2300, std::nullopt, "", std::nullopt});
    correct({model::Verdict::spam, Class::ham, 2400, std::nullopt, "", std::nullopt});
    counts = db->corrections_since(0);
    CHECK(counts.false_negatives == 1);
    CHECK(counts.false_positives == 2);
    CHECK_FALSE(latest(3));  // a correction without a signature is no line's

    // Only where the latest correction of a scan is in the period.
    correct({model::Verdict::spam, Class::ham, 1500, digest(3), "", std::nullopt});
    CHECK(db->corrections_since(2000).false_positives == 2);
    CHECK(db->corrections_since(1500).false_positives == 3);
    CHECK(db->corrections_since(2250).false_negatives == 0);
    CHECK(db->corrections_since(2250).false_positives == 2);
    corrected = latest(3);
    REQUIRE(corrected);
    CHECK(corrected->by.empty());
}

TEST_CASE("A deferred correction keeps who asked for it, and a later one of the same scan replaces it", "[store]") {
    FOR_EACH_BACKEND(s);
    auto db = s.open();
    {
        store::TrainingBatch b(*db);
        b.defer_correction(digest(2), Class::spam, 10, "console:alice");
        b.defer_correction(digest(1), Class::spam, 15, "cli:carol");
        b.commit();
    }
    {
        store::TrainingBatch b(*db);
        b.defer_correction(digest(2), Class::ham, 20, "cli:bob");  // its label, time and asker
        b.defer_correction(digest(3), Class::spam, 21, "socket:vmail for dave@example.org");
        b.commit();
    }
    {
        // Dropped (withdrawn, or a later correction has its say): its label and asker said.
        store::TrainingBatch b(*db);
        const auto dropped = b.drop_deferred_correction(digest(3));
        REQUIRE(dropped);
        CHECK(dropped->to == Class::spam);
        CHECK(dropped->by == "socket:vmail for dave@example.org");
        CHECK_FALSE(b.drop_deferred_correction(digest(3)));
        b.commit();
    }
    store::Recording r;
    r.scans.push_back({digest(1), 30, model::Verdict::ham, "w:hello\t1\n"});
    r.scans.push_back({digest(2), 31, model::Verdict::spam, "w:money\t2\n"});
    db->record(r);
    store::TrainingBatch b(*db);
    const auto ready = b.take_ready_corrections(10);
    REQUIRE(ready.size() == 2);
    CHECK(ready[0].scan.id == digest(1));  // oldest request first: digest(2)'s is now at 20
    CHECK(ready[0].to == Class::spam);
    CHECK(ready[0].by == "cli:carol");
    CHECK(ready[1].scan.id == digest(2));
    CHECK(ready[1].scan.features == "w:money\t2\n");
    CHECK(ready[1].to == Class::ham);
    CHECK(ready[1].by == "cli:bob");
    b.commit();
    CHECK_FALSE(db->has_deferred_corrections());
}

TEST_CASE("A store from before the history's new columns keeps its lines, corrections and deferred corrections",
          "[store]") {
    FOR_EACH_BACKEND(s);
    s.open();  // the current schema, its three tables then made what the release before wrote
    const bool sqlite = s.kind() == "sqlite";
    const std::string blob = sqlite ? "x'01000000000000000000000000000000'" : "'\\x01000000000000000000000000000000'";
    const std::string other = sqlite ? "x'02000000000000000000000000000000'" : "'\\x02000000000000000000000000000000'";
    const std::vector<std::string> older = {
        "DROP TABLE history",
        "DROP TABLE corrections",
        "DROP TABLE deferred_corrections",
        sqlite ? "CREATE TABLE history (id BLOB PRIMARY KEY, scanned_at INTEGER NOT NULL, verdict INTEGER NOT NULL,"
                 " probability REAL NOT NULL, action TEXT NOT NULL, sender TEXT NOT NULL, recipients TEXT NOT NULL,"
                 " from_header TEXT NOT NULL, subject TEXT NOT NULL, size INTEGER NOT NULL,"
                 " explanation TEXT NOT NULL DEFAULT '') WITHOUT ROWID"
               : "CREATE TABLE history (id bytea PRIMARY KEY, scanned_at bigint NOT NULL, verdict smallint NOT NULL,"
                 " probability double precision NOT NULL, action text NOT NULL, sender text NOT NULL,"
                 " recipients text NOT NULL, from_header text NOT NULL, subject text NOT NULL, size bigint NOT NULL,"
                 " explanation text NOT NULL DEFAULT '')",
        "CREATE INDEX history_scanned_at ON history (scanned_at)",
        sqlite ? "CREATE TABLE corrections (at INTEGER NOT NULL, verdict INTEGER NOT NULL CHECK (verdict IN (0, 1, 2)),"
                 " corrected_to INTEGER NOT NULL CHECK (corrected_to IN (0, 1)))"
               : "CREATE TABLE corrections (at bigint NOT NULL, verdict smallint NOT NULL CHECK (verdict IN (0, 1, 2)),"
                 " corrected_to smallint NOT NULL CHECK (corrected_to IN (0, 1)))",
        "CREATE INDEX corrections_at ON corrections (at)",
        sqlite ? "CREATE TABLE deferred_corrections (signature BLOB PRIMARY KEY, corrected_to INTEGER NOT NULL"
                 " CHECK (corrected_to IN (0, 1)), requested_at INTEGER NOT NULL) WITHOUT ROWID"
               : "CREATE TABLE deferred_corrections (signature bytea PRIMARY KEY, corrected_to smallint NOT NULL"
                 " CHECK (corrected_to IN (0, 1)), requested_at bigint NOT NULL)",
        "INSERT INTO history VALUES (" + blob +
            ", 1000, 2, 0.75, 'tagged', '<a@example.org>', '<b@example.net>', 'A <a@example.org>', 'Offer', 1234, '')",
        // Scanned before it but its id after: numbered by time, not by id.
        "INSERT INTO history VALUES (" + other +
            ", 990, 0, 0.25, 'accepted', '<c@example.org>', '<d@example.net>', 'C <c@example.org>', 'Hello', 99, '')",
        "INSERT INTO corrections VALUES (1100, 2, 0)",
        "INSERT INTO corrections VALUES (1200, 0, 1)",
        "INSERT INTO corrections VALUES (1300, 2, 0)",
        "INSERT INTO deferred_corrections VALUES (" + blob + ", 0, 1050)",
        sqlite ? "PRAGMA user_version = 12" : "UPDATE mailsift_schema SET version = 7",
    };
    for (const auto& sql : older) s.exec(sql);

    auto db = s.open();
    CHECK(s.value(sqlite ? "PRAGMA user_version" : "SELECT version FROM mailsift_schema") ==
          (sqlite ? store::schema_version : db->statistics().schema_version));
    auto both = db->history({});
    REQUIRE(both.size() == 2);
    // Each keeps its digest as its signature, and lines are numbered in the order they were scanned.
    CHECK(both[1].signature == digest(2));
    CHECK(both[1].id == 1);
    CHECK(both[1].subject == "Hello");
    CHECK(both[0].id == 2);
    {
        store::HistoryQuery only;
        only.signature = digest(2);
        REQUIRE(db->history(only).size() == 1);
        s.exec("DELETE FROM history WHERE scanned_at = 990");
    }
    const auto all = db->history({});
    REQUIRE(all.size() == 1);
    CHECK(all[0].signature == digest(1));
    CHECK(all[0].scored);
    CHECK(all[0].verdict == model::Verdict::spam);
    CHECK(all[0].probability == 0.75);
    CHECK(all[0].subject == "Offer");
    CHECK(all[0].size == 1234);
    CHECK(all[0].to.empty());
    CHECK(all[0].queue_id.empty());
    CHECK(all[0].message_id.empty());
    CHECK_FALSE(all[0].corrected);  // the old corrections name no scan
    const auto counts = db->corrections_since(0);  // each counted, as before
    CHECK(counts.false_positives == 2);
    CHECK(counts.false_negatives == 1);
    store::HistoryQuery q;
    q.text = "offer";  // searched as before
    CHECK(db->history_count(q) == 1);

    // New corrections go on after the old ones.
    {
        store::TrainingBatch b(*db);
        b.record_correction({model::Verdict::spam, Class::ham, 1400, digest(1), "console:alice", std::nullopt});
        b.commit();
    }
    const auto corrected = db->history({})[0].corrected;
    REQUIRE(corrected);
    CHECK(corrected->at == 1400);
    CHECK(db->corrections_since(0).false_positives == 3);

    store::Recording r;
    r.scans.push_back({digest(1), 1000, model::Verdict::spam, "w:offer\t1\n"});
    r.history.push_back(line(1, 1000, model::Verdict::spam, 0.75, "tagged"));  // delivered again, in the same second
    db->record(r);
    both = db->history({});
    REQUIRE(both.size() == 2);
    CHECK(both[0].id == 3);  // numbered after the lines migrated (and the one deleted): last in its second
    CHECK(both[0].signature == digest(1));
    CHECK(both[1].id == 2);
    REQUIRE(both[0].corrected);  // the message's correction shows on each of its lines
    CHECK(both[0].corrected->at == 1400);
    CHECK(db->corrections_since(0).false_positives == 3);  // still once
    store::TrainingBatch b(*db);
    const auto ready = b.take_ready_corrections(10);
    REQUIRE(ready.size() == 1);
    CHECK(ready[0].scan.id == digest(1));
    CHECK(ready[0].to == Class::ham);
    CHECK(ready[0].by.empty());
}
