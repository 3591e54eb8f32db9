// Where the CLI's messages come from: files, mbox files, maildirs, flat
// folders, --files-from lists and stdin. Yields one message at a time.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mailsift::cli {

struct InputMessage {
    std::string label;        // PATH, PATH#N for the Nth message of an mbox, "-" for stdin
    std::string raw;          // the message bytes (an mbox "From " line removed), at most max_bytes
    std::size_t size_bytes = 0;  // full size of the message, even when raw holds only a prefix
    std::string error;        // non-empty: the message could not be read; raw is empty
};

// Calls `sink` for every message under `paths` ("-" = stdin). A directory with
// cur/ or new/ is a maildir; any other directory holds one message per regular
// file (not recursive). A file whose first line starts with "From " is an mbox.
// Each message is cut to `max_bytes` (size_bytes still tells the full size).
// Returns false when `sink` asked to stop.
bool for_each_message(const std::vector<std::string>& paths, std::size_t max_bytes,
                      const std::function<bool(InputMessage&)>& sink);

// The message files under `path`: the file itself, or a maildir's cur/ and new/,
// or a flat folder's regular files; sorted. Throws std::runtime_error when unreadable.
std::vector<std::string> list_message_files(const std::string& path);

// Whether `paths` name at most `limit` message files: stdin ("-") and a path
// that cannot be listed count as one each (a file may still be an mbox of many
// messages; reading it tells).
bool few_message_files(const std::vector<std::string>& paths, std::size_t limit);

// Whether `paths` hold at most `limit` messages: as few_message_files() counts
// them, except that a file whose first line starts with "From " (an mbox)
// counts as its messages. Stdin counts as one message (a recipe pipes one).
bool few_messages_in(const std::vector<std::string>& paths, std::size_t limit);

// One message file's bytes (an mbox "From " line removed), at most max_bytes; nothing when unreadable.
std::optional<std::string> read_message_file(const std::string& path, std::size_t max_bytes);

// Reads paths one per line from `list` ("-" = stdin). Throws std::runtime_error when unreadable.
std::vector<std::string> read_path_list(const std::string& list);

}  // namespace mailsift::cli
