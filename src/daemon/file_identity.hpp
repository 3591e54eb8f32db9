// Which file a database path names now (device and inode): how the daemon's
// connections notice a database replaced, restored or deleted under them
// (the scorer's reader, the correction socket's writer).
#pragma once

#include <sys/stat.h>

#include <cerrno>
#include <filesystem>

#include "mailsift/store/common.hpp"

namespace mailsift::daemon {

struct FileIdentity {
    dev_t device = 0;
    ino_t inode = 0;
    bool operator==(const FileIdentity&) const = default;
};

// The file at `path` now; false, with errno's value in `error`, when there is none or it cannot be looked at.
inline bool identify(const std::filesystem::path& path, FileIdentity& id, int& error) {
    struct stat st{};
    if (::stat(path.c_str(), &st) != 0) {
        error = errno;
        return false;
    }
    id = {st.st_dev, st.st_ino};
    return true;
}

// `open()` of the database at `path`, with its identity taken before and
// after: a file replaced meanwhile is opened again (three times at most).
// Throws store::Error when there is no database there.
template <class Open>
auto open_identified(const std::filesystem::path& path, const Open& open, FileIdentity& id) {
    for (int attempt = 0;; ++attempt) {
        FileIdentity before, after;
        int error = 0;
        if (!identify(path, before, error)) {
            throw store::Error(path, "no such database (train one first with 'mailsift learn')");
        }
        auto opened = open();
        if ((identify(path, after, error) && after == before) || attempt == 2) {
            id = before;
            return opened;
        }
    }
}

}  // namespace mailsift::daemon
