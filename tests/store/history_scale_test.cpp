// The history at a provider's scale (issue 41, item 10), on every backend:
// expiry deletes a bounded batch per call and, called until it says no more
// is old, removes everything before the cut-off and nothing after it; an
// explanation is kept compressed and read back as written, and a line kept
// in the earlier text form still reads as it was; scans packed before the
// database had a dictionary are stored with the first one trained.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "../../src/store/codec.hpp"
#include "../support/backends.hpp"
#include "../support/typical_scan.hpp"
#include "store_support.hpp"

using namespace mailsift;

namespace {

// A digest for each of many scans (store_support's digest() tells 256 apart).
store::Digest many(int n) {
    store::Digest d{};
    d[0] = static_cast<std::uint8_t>(n & 0xff);
    d[1] = static_cast<std::uint8_t>(n >> 8);
    d[15] = 0x5a;
    return d;
}

store::HistoryEntry line(std::optional<store::Digest> signature, std::int64_t at, std::string queue_id) {
    store::HistoryEntry e;
    e.signature = signature;
    e.scored = signature.has_value();
    e.scanned_at = at;
    e.verdict = model::Verdict::ham;
    e.probability = 0.02;
    e.action = signature ? "accepted" : "skipped";
    e.sender = "<a@example.org>";
    e.recipients = "<b@example.net>";
    e.queue_id = std::move(queue_id);
    e.size = 1000;
    return e;
}

// An explanation as engine::encode writes one: nine-digit numbers, feature names, quoted fragments.
std::string explanation(int n) {
    std::string t = "mailsift-parts\t1\t-6.81872511\t0.0125004\t-9.23498115";
    for (int i = 0; i < 20; ++i) {
        t += "\n" + std::string(i % 2 ? "+" : "-") + "\t" + std::to_string(-1.23456789 + i * 0.0731 + n) + "\t" +
             std::to_string(i * 3) + "\t" + std::to_string(i + n) + "\tw:word" + std::to_string(i * 7 + n);
    }
    return t + "\nL\t-0.5\t1.25\t-2.7\t-3.125\t-9.1\t0.42\t0\t812\t772\nS\t0.61\t4242\t\"ab cd\" in Subject";
}

}  // namespace

TEST_CASE("Expiry deletes a batch per call and, called until no more is old, everything old and nothing new",
          "[store]") {
    FOR_EACH_BACKEND(s);
    auto db = s.open();
    store::Recording r;
    // 25 old scans with their lines, an old line let through unscored, and 5 new of each.
    for (int n = 0; n < 30; ++n) {
        const std::int64_t at = n < 25 ? 1000 + n : 2000 + n;
        r.scans.push_back({many(n), at, model::Verdict::ham, mailsift::testing::typical_scan(n)});
        r.history.push_back(line(many(n), at, "Q" + std::to_string(n)));
    }
    r.history.push_back(line(std::nullopt, 1010, "Qskipped"));
    db->record(r);

    std::vector<store::ScanPrune> calls;
    do {
        calls.push_back(db->prune_scans(1500, 10));
        REQUIRE(calls.size() <= 5);
    } while (calls.back().more);
    // 25 scans and 26 lines, 10 of each a call: 10 + 10 + 5 scans, 10 + 10 + 6 lines.
    REQUIRE(calls.size() == 3);
    CHECK(calls[0].scans == 10);
    CHECK(calls[0].lines == 10);
    CHECK(calls[0].more);
    CHECK(calls[2].scans == 5);
    CHECK(calls[2].lines == 6);
    const auto left = db->history({});
    REQUIRE(left.size() == 5);
    for (const auto& e : left) CHECK(e.scanned_at >= 2000);
    CHECK(db->history_count({}) == 5);
    for (int n = 0; n < 30; ++n) {
        INFO(n);
        CHECK(db->find_scan(many(n)).has_value() == (n >= 25));
    }
    // The oldest go first: one batch past a cut-off leaves the newer old ones.
    store::Recording again;
    for (int n = 0; n < 4; ++n) again.history.push_back(line(many(100 + n), 3000 + n, "R" + std::to_string(n)));
    db->record(again);
    // Before 4000: the 5 new lines above (2025-2029) and 4 here; a batch of 7 leaves the last 2.
    const auto one = db->prune_scans(4000, 7);
    CHECK(one.lines == 7);
    CHECK(one.more);
    store::HistoryQuery q;
    q.order = store::HistoryQuery::Order::oldest;
    q.since = 3000;
    const auto after = db->history(q);
    REQUIRE(after.size() == 2);
    CHECK(after[0].queue_id == "R2");
}

TEST_CASE("An explanation is kept compressed and read back as written, and one kept as text reads as it was",
          "[store]") {
    FOR_EACH_BACKEND(s);
    const bool sqlite = s.kind() == "sqlite";
    auto db = s.open();
    store::Recording r;
    for (int n = 1; n <= 3; ++n) {
        auto e = line(mailsift::testing::digest(static_cast<std::uint8_t>(n)), 1000 + n, "Q" + std::to_string(n));
        e.explanation = n == 3 ? "" : explanation(n);
        r.history.push_back(e);
    }
    db->record(r);
    const std::string bytes = sqlite ? "length(CAST(explanation AS BLOB))" : "octet_length(explanation)";
    // On disk: well under the text's bytes (about 0.6 of them, as on real mail).
    const auto stored = s.value("SELECT " + bytes + " FROM history WHERE queue_id = 'Q1'");
    REQUIRE(stored);
    CHECK(*stored * 4 < static_cast<std::int64_t>(explanation(1).size()) * 3);
    store::HistoryQuery q;
    q.explanations = true;
    q.order = store::HistoryQuery::Order::oldest;
    auto read = db->history(q);
    REQUIRE(read.size() == 3);
    CHECK(read[0].explanation == explanation(1));
    CHECK(read[1].explanation == explanation(2));
    CHECK(read[2].explanation.empty());
    CHECK(s.value("SELECT " + bytes + " FROM history WHERE queue_id = 'Q3'") == 0);

    // A line written before (the text itself) reads as it was; a damaged frame reads as none.
    const std::string old = "mailsift-parts\t1\t2.5\t-0.25\t1.75\n+\t0.5\t3\t1\tsubject:Ünïcode";
    s.exec(sqlite ? "UPDATE history SET explanation = '" + old + "' WHERE queue_id = 'Q1'"
                  : "UPDATE history SET explanation = convert_to(E'" + old + "', 'UTF8') WHERE queue_id = 'Q1'");
    s.exec(sqlite ? "UPDATE history SET explanation = x'28b52ffd0000ff' WHERE queue_id = 'Q2'"
                  : "UPDATE history SET explanation = '\\x28b52ffd0000ff'::bytea WHERE queue_id = 'Q2'");
    read = db->history(q);
    REQUIRE(read.size() == 3);
    CHECK(read[0].explanation == old);
    CHECK(read[1].explanation.empty());
}

TEST_CASE("An explanation's stored form gives the text back byte for byte, and the text form is read as it is", "[store]") {
    for (const std::string& text : {explanation(7), std::string("mailsift-parts\t1\t0\t0\t0"), std::string()}) {
        const std::string packed = store::pack_explanation(text);
        CHECK(store::unpack_explanation(packed) == text);
        if (text.size() > 200) CHECK(packed.size() * 4 < text.size() * 3);
        CHECK(store::unpack_explanation(text) == text);  // written before: read as it is
    }
}

TEST_CASE("Scans packed before the database had a dictionary are stored with the first one trained", "[store]") {
    FOR_EACH_BACKEND(s);
    auto db = s.open();
    const store::ScanPacker bare;  // what the recorder packs with until its first write
    store::Recording r;
    constexpr int scans = static_cast<int>(store::min_dictionary_samples) + 50;
    for (int n = 0; n < scans; ++n) {
        r.packed.push_back(bare.pack(many(n), 1000 + n, model::Verdict::spam, mailsift::testing::typical_scan(n)));
    }
    const std::size_t bare_bytes = [&] {
        std::size_t b = 0;
        for (const auto& p : r.packed) b += p.blob.size();
        return b;
    }();
    db->record(r);
    CHECK(s.value("SELECT count(*) FROM signatures WHERE dictionary IS NULL") == 0);
    CHECK(s.value("SELECT count(*) FROM scan_dictionaries") == 1);
    const std::string bytes = s.kind() == "sqlite" ? "length(features)" : "octet_length(features)";
    const auto stored = s.value("SELECT sum(" + bytes + ") FROM signatures");
    REQUIRE(stored);
    CHECK(static_cast<std::size_t>(*stored) < bare_bytes);
    for (int n : {0, 17, scans - 1}) {
        INFO(n);
        const auto scan = db->find_scan(many(n));
        REQUIRE(scan);
        CHECK(scan->features == mailsift::testing::typical_scan(n));
        CHECK(scan->scanned_at == 1000 + n);
    }
}
