// One input of `mailsift correct` (a signature, or a message) applied to the
// model: the one way a correction from the command line is made, whether the
// command applies it itself or hands it to mailsiftd over its correction
// socket (daemon/correction_server.hpp; the bytes between them:
// correction_wire.hpp). The trainer's commit is the caller's.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "mailsift/engine/trainer.hpp"

namespace mailsift::engine {

enum class CorrectionAction : std::uint8_t { spam, ham, undo };
const char* to_string(CorrectionAction a);

struct CorrectionInput {
    std::optional<store::Digest> signature;  // set: the scan of that signature, without the message
    std::string raw;                         // else the message (at most max_message_bytes of it)
    std::size_t size_bytes = 0;              // the message's whole size (raw may be a prefix)
};

struct CorrectionResult {
    bool undo = false;  // which of the two outcomes holds
    Trainer::CorrectOutcome correct;
    Trainer::UndoOutcome undone;
};

// Corrects (or undoes the correction of) one input in the trainer's open batch.
// A signature whose scan is not written yet is kept for it (deferred).
CorrectionResult apply_correction(Trainer& trainer, CorrectionAction action, const CorrectionInput& input,
                                  std::int64_t now);

}  // namespace mailsift::engine
