// What undoing a correction takes, as stored: it reads back as written, and
// a damaged or foreign record is refused rather than undone wrongly.
#include <catch2/catch.hpp>

#include "../../src/store/codec.hpp"

using namespace mailsift;

TEST_CASE("A correction's undo record reads back as written, and a damaged one is refused", "[store]") {
    store::CorrectionUndo u;
    u.was = store::Class::spam;
    u.hash_bits = 18;
    u.feature = -0.0421f;
    u.nb_weight = 0.00731;
    u.slots = {262143, 7, 7, 0, 70000, 7};  // unsorted, repeated: a slot listed twice is stepped twice
    u.contact = "friend@example.org";
    u.replays = {{0.0193f, -0.0011, {12, 3, 3}}, {-0.5f, 0.25, {}}};
    u.layer = {0.4999f, {9, 4, 250000}, "bob@example.org", "news@deals.example"};
    const std::string blob = store::encode_correction_undo(u);
    const auto back = store::decode_correction_undo(blob);
    REQUIRE(back);
    REQUIRE(back->was == store::Class::spam);
    REQUIRE(back->hash_bits == 18);
    REQUIRE(back->feature == u.feature);
    REQUIRE(back->nb_weight == u.nb_weight);
    REQUIRE(back->contact == u.contact);
    REQUIRE(back->slots == std::vector<std::uint32_t>{0, 7, 7, 7, 70000, 262143});
    REQUIRE(back->replays.size() == 2);
    REQUIRE(back->replays[0].feature == 0.0193f);
    REQUIRE(back->replays[0].nb_weight == -0.0011);
    REQUIRE(back->replays[0].slots == std::vector<std::uint32_t>{3, 3, 12});
    REQUIRE(back->replays[1].feature == -0.5f);
    REQUIRE(back->replays[1].nb_weight == 0.25);
    REQUIRE(back->replays[1].slots.empty());
    REQUIRE(back->layer.feature == 0.4999f);
    REQUIRE(back->layer.slots == std::vector<std::uint32_t>{4, 9, 250000});
    REQUIRE(back->layer.user == "bob@example.org");
    REQUIRE(back->layer.sender == "news@deals.example");
    REQUIRE_FALSE(back->site_cancelled);
    store::CorrectionUndo cancelled = u;
    cancelled.site_cancelled = true;
    const auto cancelled_back = store::decode_correction_undo(store::encode_correction_undo(cancelled));
    REQUIRE(cancelled_back);
    REQUIRE(cancelled_back->site_cancelled);
    REQUIRE(cancelled_back->layer.user == "bob@example.org");

    store::CorrectionUndo none;  // not learned before, no step, no contact
    const auto plain = store::decode_correction_undo(store::encode_correction_undo(none));
    REQUIRE(plain);
    REQUIRE_FALSE(plain->was);
    REQUIRE(plain->hash_bits == 0);
    REQUIRE(plain->slots.empty());
    REQUIRE(plain->replays.empty());
    REQUIRE(plain->layer.slots.empty());

    // A record of format 3 (mailsift before opposite corrections cancelled):
    // its site part stands. Its last byte is the flag, 0.
    std::string third = store::encode_correction_undo(none);
    REQUIRE(third[0] == 4);
    REQUIRE(third.back() == '\0');
    third[0] = 3;
    third.pop_back();
    const auto before_cancel = store::decode_correction_undo(third);
    REQUIRE(before_cancel);
    REQUIRE_FALSE(before_cancel->site_cancelled);
    REQUIRE_FALSE(store::decode_correction_undo(third + std::string(1, '\0')));  // format 3 ends there
    std::string bad_flag = store::encode_correction_undo(none);
    bad_flag.back() = 2;
    REQUIRE_FALSE(store::decode_correction_undo(bad_flag));

    // A record of format 2 (mailsift before per-user layers): no layer. Its
    // last 7 bytes here are the empty layer: a float, its slots' count, the
    // two texts' lengths.
    std::string second = third;
    second[0] = 2;
    REQUIRE(second.substr(second.size() - 7) == std::string(7, '\0'));
    second.resize(second.size() - 7);
    const auto before_layers = store::decode_correction_undo(second);
    REQUIRE(before_layers);
    REQUIRE(before_layers->layer.slots.empty());
    REQUIRE(before_layers->layer.user.empty());
    REQUIRE_FALSE(store::decode_correction_undo(second + std::string(7, '\0')));  // format 2 ends there

    // A record of format 1 (mailsift before the replays were recorded): no replays.
    std::string first = second;
    first[0] = 1;
    REQUIRE(first.back() == '\0');  // the replays' count, 0, is the last byte
    first.pop_back();
    const auto old = store::decode_correction_undo(first);
    REQUIRE(old);
    REQUIRE(old->replays.empty());

    // Every cut of the record, a later format, a class that is none, bytes after the end.
    for (std::size_t n = 0; n < blob.size(); ++n) REQUIRE_FALSE(store::decode_correction_undo(blob.substr(0, n)));
    std::string later = blob;
    later[0] = 5;
    REQUIRE_FALSE(store::decode_correction_undo(later));
    std::string bad_class = blob;
    bad_class[1] = 3;
    REQUIRE_FALSE(store::decode_correction_undo(bad_class));
    REQUIRE_FALSE(store::decode_correction_undo(blob + "x"));
}
