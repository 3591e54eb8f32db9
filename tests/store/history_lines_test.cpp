// One history line per delivery, on every backend: the same content delivered
// twice is two lines, each found by its own queue ID and recipient and both by
// its signature, its correction shown on each and counted once; and lines of
// one second come back in the order they arrived in every order, paged
// exactly with `after`.
#include <catch2/catch.hpp>

#include <cstdio>
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

store::HistoryEntry delivery(const store::Digest& signature, std::int64_t at, std::string queue_id,
                             std::string recipient) {
    store::HistoryEntry e;
    e.signature = signature;
    e.scanned_at = at;
    e.verdict = model::Verdict::spam;
    e.probability = 0.97;
    e.action = "tagged";
    e.sender = "<promo@shop.example>";
    e.recipients = std::move(recipient);
    e.subject = "Offer";
    e.queue_id = std::move(queue_id);
    e.size = 2000;
    return e;
}

// The queue IDs of the lines, in the order read.
std::vector<std::string> queue_ids(const std::vector<store::HistoryEntry>& lines) {
    std::vector<std::string> out;
    for (const auto& e : lines) out.push_back(e.queue_id);
    return out;
}

}  // namespace

TEST_CASE("Two deliveries of one message are two lines, each found by its queue ID and recipient, corrected once",
          "[store]") {
    FOR_EACH_BACKEND(s);
    auto db = s.open();
    const store::Digest same = digest(7);
    for (const auto& [queue_id, recipient] : {std::pair{"4QxVic3", "<victim3@corp.example>"},
                                              std::pair{"4QxCeo1", "<ceo@corp.example>"}}) {
        store::Recording r;  // one recording each, as the recorder writes them a while apart
        r.history.push_back(delivery(same, 1000, queue_id, recipient));
        db->record(r);
    }
    store::Recording other;
    other.history.push_back(delivery(digest(8), 1000, "4QxOth9", "<victim3@corp.example>"));
    db->record(other);

    const auto all = db->history({});
    REQUIRE(all.size() == 3);
    CHECK(queue_ids(all) == std::vector<std::string>{"4QxOth9", "4QxCeo1", "4QxVic3"});
    CHECK(all[1].signature == same);
    CHECK(all[2].signature == same);
    CHECK(all[1].id != all[2].id);

    auto found = [&](store::HistoryQuery q) {
        CHECK(db->history_count(q) == db->history(q).size());
        return queue_ids(db->history(q));
    };
    using V = std::vector<std::string>;
    store::HistoryQuery q;
    q.queue_id = "4QxVic3";
    CHECK(found(q) == V{"4QxVic3"});
    CHECK(db->history(q)[0].recipients == "<victim3@corp.example>");
    q.queue_id = "4QxCeo1";
    CHECK(found(q) == V{"4QxCeo1"});
    q = {};
    q.recipient = "ceo@";
    CHECK(found(q) == V{"4QxCeo1"});
    q.recipient = "victim3";
    CHECK(found(q) == V{"4QxOth9", "4QxVic3"});
    q = {};
    q.text = "victim3@corp";
    CHECK(found(q) == V{"4QxOth9", "4QxVic3"});
    q = {};
    q.signature = same;  // every delivery of the message
    CHECK(found(q) == V{"4QxCeo1", "4QxVic3"});
    q = {};
    q.id = all[2].id;  // one delivery by its line
    CHECK(found(q) == V{"4QxVic3"});

    // Corrected by its signature (as the console and `mailsift correct` do): shown
    // on both lines, counted once.
    {
        store::TrainingBatch b(*db);
        b.record_correction({model::Verdict::spam, Class::ham, 2000, same, "console:alice", std::nullopt});
        b.commit();
    }
    const auto after = db->history({});
    REQUIRE(after.size() == 3);
    CHECK_FALSE(after[0].corrected);
    REQUIRE(after[1].corrected);
    REQUIRE(after[2].corrected);
    CHECK(after[1].corrected->by == "console:alice");
    CHECK(after[2].corrected->to == Class::ham);
    CHECK(db->corrections_since(0).false_positives == 1);
}

TEST_CASE("Lines of one second keep their arrival order in every order, and pages after a line are exact", "[store]") {
    FOR_EACH_BACKEND(s);
    auto db = s.open();
    // Sent 000, 001, ... 011 within one second, all of one probability, with
    // signatures in no particular order, each its own recording; then one the
    // second before and one the second after.
    constexpr int n = 12;
    for (int k = 0; k < n; ++k) {
        store::Recording r;
        char name[4];
        std::snprintf(name, sizeof name, "%03d", k);
        r.history.push_back(delivery(digest(static_cast<std::uint8_t>((k * 5) % n + 1)), 5000, name, "<a@example.org>"));
        db->record(r);
    }
    for (const auto& [at, name] : {std::pair{std::int64_t{4999}, "before"}, std::pair{std::int64_t{5001}, "after"}}) {
        store::Recording r;
        auto e = delivery(digest(100), at, name, "<a@example.org>");
        e.probability = at == 4999 ? 0.99 : 0.5;  // the spammiest; the hammiest
        r.history.push_back(e);
        db->record(r);
    }
    std::vector<std::string> sent;
    for (int k = 0; k < n; ++k) {
        char name[4];
        std::snprintf(name, sizeof name, "%03d", k);
        sent.push_back(name);
    }
    std::vector<std::string> reversed(sent.rbegin(), sent.rend());
    auto with = [](std::string first, std::vector<std::string> middle, std::string last) {
        middle.insert(middle.begin(), first);
        middle.push_back(last);
        return middle;
    };
    const std::pair<Order, std::vector<std::string>> orders[] = {
        {Order::oldest, with("before", sent, "after")},
        {Order::newest, with("after", reversed, "before")},
        // Ties in probability in arrival order whichever way.
        {Order::spammiest, with("before", sent, "after")},
        {Order::hammiest, with("after", sent, "before")},
    };
    for (const auto& [order, expected] : orders) {
        INFO("order " << static_cast<int>(order));
        store::HistoryQuery q;
        q.order = order;
        CHECK(queue_ids(db->history(q)) == expected);  // one page
        q.limit = 5;  // pages that end inside the second's lines
        std::vector<std::string> paged;
        int pages = 0;
        for (;;) {
            const auto page = db->history(q);
            if (page.empty()) break;
            REQUIRE(++pages <= 4);
            for (const auto& e : page) paged.push_back(e.queue_id);
            q.after = store::HistoryQuery::After{page.back().scanned_at, page.back().probability, page.back().id};
        }
        CHECK(pages == 3);
        CHECK(paged == expected);
    }
}
