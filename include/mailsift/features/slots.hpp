// mailsift::features slots — what the linear scorer (model/linear.hpp) reads of
// a message: hashed byte 4-grams of the start of its view (view.hpp: the
// message as the milter saw it, whatever the delivery path added), and the
// message's features (the naive-Bayes vocabulary), folded into 2^bits slots,
// each slot once (binary presence).
//
// The 4-grams are the representation of the TREC 2007 leaders (Cormack's online
// logistic regression, Sculley's relaxed online SVMs; ../shared/ACCURACY.md):
// they see through obfuscated words, encodings, markup and header layout that
// a tokenizer throws away. Computed with a rolling 32-bit window and one
// multiply per byte; nothing is allocated per n-gram.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "mailsift/features/feature_bag.hpp"

namespace mailsift::features {

struct SlotOptions {
    unsigned bits = 18;               // 2^bits slots (the linear model's hash_bits)
    std::size_t ngram_bytes = 3000;   // 4-grams of this many leading bytes of the message's view (0 = none)
    bool bag = true;                  // the FeatureBag's features too
};

// Envelope facts (env:) are known at the milter only, not in a mailbox or the
// CLI: the slots leave them out, so that a message scores the same everywhere.
bool milter_only(std::string_view feature);

// The slot of the 4-gram whose bytes, first byte highest, are `gram`.
std::uint32_t ngram_slot(std::uint32_t gram, unsigned bits);
// The slot of a feature id (features::feature_id).
std::uint32_t feature_slot(std::uint64_t id, unsigned bits);

// Fills `out` with the message's distinct slots, in the order first met. `view`
// is the message's view (view.hpp: message_view(raw, ngram_bytes)), never the
// raw message: what the delivery path adds must not reach the 4-grams.
void message_slots(std::string_view view, const FeatureBag& bag, const SlotOptions& options, std::vector<std::uint32_t>& out);
// What each of the message's slots stands for, readably (for explanations):
// the 4-grams and features that fell in it, comma-separated, in the order met.
// A 4-gram reads as its bytes in quotes, where it starts in the view and the
// bytes around it, the gram in brackets: "n.or" at 1234: domai[n.or]g/fre
// (a byte outside printable ASCII, a quote or a backslash as \xHH).
std::unordered_map<std::uint32_t, std::string> slot_sources(std::string_view view, const FeatureBag& bag,
                                                            const SlotOptions& options);
// The same for the `wanted` slots only, in their order ("" for one the message
// does not touch): cheap enough for the scoring path.
std::vector<std::string> slot_sources(std::string_view view, const FeatureBag& bag, const SlotOptions& options,
                                      std::span<const std::uint32_t> wanted);
// The same from a view (a rehearsal sample keeps one) and the features as learned (id, count).
void message_slots(std::string_view view, const std::vector<std::pair<std::uint64_t, std::uint32_t>>& terms,
                   const SlotOptions& options, std::vector<std::uint32_t>& out);

// A user's layer (per_user, issue 44): the slots of one user's own weight for
// mail from one sender (the From address), in the same table as the site's
// weights. What a user teaches by correcting their copies is which senders
// they want: a learned, bounded personal allow and block list (docs/accuracy.md,
// "Issue 44"). personal_slot_count slots, each taking a share of the layer's
// step: a slot that falls on one the site uses (a collision) moves its weight
// by that share only. None when the user or the sender is empty.
inline constexpr unsigned personal_slot_count = 8;
std::vector<std::uint32_t> personal_slots(std::string_view user, std::string_view sender, unsigned bits);
// `slot` added to sorted, distinct `slots`, which stay so.
void insert_slot(std::uint32_t slot, std::vector<std::uint32_t>& slots);

}  // namespace mailsift::features
