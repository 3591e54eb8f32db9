// libFuzzer harness: the milter codec (protocol.hpp) and session state machine
// (session.hpp), driven the way mailsiftd drives them.
//
// The input is the byte stream an MTA would send. It is fed to a Decoder in
// pieces cut at points derived from the input (whole, a few random cuts, or one
// byte at a time), every decoded command goes to a Session, and every
// end-of-body is answered by a trivial deterministic stand-in for the daemon's
// verdict. Invariants, all from the headers' contracts:
//  codec
//   - the decoder agrees with a reference reading of the wire format: the same
//     commands with the same fields, the same error (frame over the cap, empty
//     frame, unknown letter, malformed layout) for the same frame, whatever the
//     cut points;
//   - each command or error is reported at the first next() after the bytes
//     that decide it arrived (a length over the cap as soon as its 4 bytes are
//     in, before the frame is waited for); after an error it stays failed and
//     keeps nothing; buffered_bytes() is the incomplete tail;
//   - every reply encodes to exactly one well-formed frame whose fields read
//     back (strings cut at their first NUL); the negotiate reply decodes back
//     through the Decoder itself;
//   - format_smtp_reply accepts exactly the valid code/status/text triples and
//     formats them as documented.
//  session
//   - a reference model of the documented rules: which commands get a reply,
//     negotiation results, close and judge, and at each end of body the whole
//     Transaction (client, HELO, sender, recipients, macros by stage, headers,
//     the rebuilt message, its size, the cap and `truncated`);
//   - handle() never returns anything but NegotiateReply and Continue: edits
//     and verdicts go out only after EndOfBody, from the owner;
//   - prepare() gives header values their leading space exactly when
//     header_leading_space was negotiated.
//
// Where the parts are (headers beside this file, in namespace fuzz_milter, and
// compiled only here):
//   milter_wire_reference.hpp     the reference reading of the wire format and
//                                 the canonical text of a command (dump);
//   milter_reply_checks.hpp       reply frames read back, format_smtp_reply's rules;
//   milter_session_reference.hpp  the session model and the checks against it;
//   milter_stand_in_verdict.hpp   the owner's stand-in verdict and prepare()'s check;
//   this file                     the options, the cut points and the driving loop
//                                 (LLVMFuzzerTestOneInput).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_support.hpp"
#include "mailsift/milter/protocol.hpp"
#include "mailsift/milter/session.hpp"
#include "milter_reply_checks.hpp"
#include "milter_session_reference.hpp"
#include "milter_stand_in_verdict.hpp"
#include "milter_wire_reference.hpp"

namespace milter = mailsift::milter;
using fuzz_milter::check_prepare;
using fuzz_milter::check_reply_frame;
using fuzz_milter::check_session_step;
using fuzz_milter::check_transaction;
using fuzz_milter::dump;
using fuzz_milter::Expected;
using fuzz_milter::Model;
using fuzz_milter::reference_decode;
using fuzz_milter::stand_in_verdict;
using mailsift::fuzz::Choices;
using mailsift::fuzz::printable;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view input(reinterpret_cast<const char*>(data), size);
    Choices choices(mailsift::fuzz::fnv1a(input));

    // Options derived from the input: mostly the daemon's defaults.
    static constexpr std::size_t frame_caps[] = {1024 * 1024, 1024 * 1024, 1024 * 1024, 64, 4096};
    static constexpr std::size_t message_caps[] = {4 * 1024 * 1024, 4 * 1024 * 1024, 0, 1, 40, 300};
    const std::size_t frame_cap = frame_caps[choices.below(std::size(frame_caps))];
    milter::SessionOptions options;
    options.max_message_bytes = message_caps[choices.below(std::size(message_caps))];
    switch (choices.below(4)) {
        case 0: options.steps = 0xffffffffu; break;
        case 1: options.steps = 0; break;
        default: break;
    }
    if (choices.below(4) == 0) options.actions = 0xffffffffu;

    // Cut points: whole, a few, or every byte (short inputs only).
    std::vector<std::size_t> cuts;
    const auto mode = choices.below(8);
    if (mode == 0 && size <= 4096) {
        for (std::size_t i = 1; i < size; ++i) cuts.push_back(i);
    } else if (mode >= 2) {
        const auto n = 1 + choices.below(4);
        for (std::uint64_t i = 0; i < n; ++i) cuts.push_back(static_cast<std::size_t>(choices.below(size + 1)));
        std::sort(cuts.begin(), cuts.end());
    }
    cuts.push_back(size);

    const Expected expected = reference_decode(input, frame_cap);
    milter::Decoder decoder(frame_cap);
    milter::Session session(options);
    Model model;
    model.options = options;

    std::size_t fed = 0, previous_fed = 0;
    std::size_t event = 0;
    bool failed = false, closed = false;
    std::size_t chunk_start = 0;
    for (const std::size_t cut : cuts) {
        previous_fed = fed;
        decoder.feed(input.substr(chunk_start, cut - chunk_start));
        chunk_start = cut;
        fed = cut;
        if (closed) continue;  // the owner stopped reading; the stream is still fed to the decoder
        for (;;) {
            milter::Command command;
            const auto status = decoder.next(command);
            if (status == milter::Decoder::Status::need_more) break;
            const std::string where = "after " + std::to_string(fed) + " of " + std::to_string(size) + " bytes";
            FUZZ_CHECK("decode-extra-event", event < expected.events.size(),
                       where + ": decoder reported more than the reference reading");
            const auto& want = expected.events[event++];
            // Decided no later than the first next() after the deciding bytes, never before them.
            FUZZ_CHECK("decode-timing", want.decided_at <= fed && previous_fed < want.decided_at,
                       where + ": event decided at byte " + std::to_string(want.decided_at) + " reported late or early");
            if (status == milter::Decoder::Status::error) {
                FUZZ_CHECK("decode-error-kind", !want.command && decoder.error() == want.error,
                           where + ": error '" + milter::describe(decoder.error()) + "', expected " +
                               (want.command ? "command " + printable(want.dump) : std::string(milter::describe(want.error))));
                FUZZ_CHECK("decode-error-frees", decoder.buffered_bytes() == 0,
                           std::to_string(decoder.buffered_bytes()) + " bytes kept after an error");
                failed = true;
                break;
            }
            const std::string got = dump(command);
            FUZZ_CHECK("decode-command", want.command && got == want.dump,
                       where + ": decoded " + printable(got) + ", expected " +
                           (want.command ? printable(want.dump) : std::string(milter::describe(want.error))));

            const auto outcome = session.handle(command);
            const auto predicted = model.handle(command);
            check_session_step(session, outcome, predicted, model, got);
            for (const auto& r : outcome.replies) check_reply_frame(r);
            if (outcome.close) {
                closed = true;
                break;
            }
            if (outcome.judge) {
                check_transaction(session, model);
                auto replies = stand_in_verdict(session, choices);
                const auto before = replies;
                session.prepare(replies);
                check_prepare(session, before, replies);
                for (const auto& r : replies) check_reply_frame(r);
            }
        }
        if (failed) break;
    }
    if (failed) {
        // A failed decoder stays failed and drops input.
        decoder.feed(input);
        milter::Command command;
        FUZZ_CHECK("decode-stays-failed",
                   decoder.next(command) == milter::Decoder::Status::error && decoder.buffered_bytes() == 0,
                   "decoder recovered after an error");
    } else if (!closed) {
        FUZZ_CHECK("decode-missed-event", event == expected.events.size(),
                   std::to_string(event) + " events reported, the reference reading has " +
                       std::to_string(expected.events.size()));
        FUZZ_CHECK("decode-tail", decoder.buffered_bytes() == expected.tail,
                   std::to_string(decoder.buffered_bytes()) + " bytes buffered, expected " + std::to_string(expected.tail));
    }
    return 0;
}
