// Message input for the CLI. Plain POSIX reads: one read loop per file, no
// iostreams on the bulk path.
#include "message_source.hpp"

#include "mailsift/engine/message_checks.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <stdexcept>

namespace mailsift::cli {

namespace fs = std::filesystem;

namespace {

// Reads up to `max_bytes` from fd into out; returns the total size (reading on
// past max_bytes only to count), or -1 with errno set.
long long read_fd(int fd, std::string& out, std::size_t max_bytes) {
    out.clear();
    char buf[65536];
    long long total = 0;
    for (;;) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        if (n == 0) break;
        const std::size_t keep = out.size() < max_bytes ? std::min(static_cast<std::size_t>(n), max_bytes - out.size()) : 0;
        out.append(buf, keep);
        total += n;
    }
    return total;
}

std::string errno_text(int e) { return std::strerror(e); }

// Drops an mbox "From " envelope line at the very start.
void drop_from_line(std::string& raw) { raw.erase(0, raw.size() - engine::without_from_line(raw).size()); }

// Splits an mbox into messages at lines starting with "From " (mboxrd/mboxo:
// ">From " quoting inside bodies is left as is; it does not change the features).
bool split_mbox(const std::string& path, std::string& data, std::size_t max_bytes,
                const std::function<bool(InputMessage&)>& sink) {
    std::vector<std::pair<std::size_t, std::size_t>> spans;  // [begin of From line, end)
    std::size_t pos = 0;
    while (pos < data.size()) {
        std::size_t next = data.find("\nFrom ", pos);
        const std::size_t end = next == std::string::npos ? data.size() : next + 1;
        spans.emplace_back(pos, end);
        pos = end;
    }
    const bool single = spans.size() == 1;
    std::size_t index = 0;
    for (const auto& [b, e] : spans) {
        ++index;
        InputMessage m;
        m.label = single ? path : path + "#" + std::to_string(index);
        m.raw.assign(data, b, e - b);
        drop_from_line(m.raw);
        m.size_bytes = m.raw.size();
        if (m.raw.size() > max_bytes) m.raw.resize(max_bytes);
        if (!sink(m)) return false;
    }
    return true;
}

// Reads exactly n bytes from fd into out (fewer if the file ends sooner);
// false with errno set on a read error.
bool read_exactly(int fd, std::string& out, std::size_t n) {
    out.resize(n);
    std::size_t got = 0;
    while (got < n) {
        const ssize_t r = ::read(fd, out.data() + got, n - got);
        if (r < 0) {
            if (errno == EINTR) continue;
            return false;
        }
        if (r == 0) break;
        got += static_cast<std::size_t>(r);
    }
    out.resize(got);
    return true;
}

bool read_directory(const fs::path& dir, std::size_t max_bytes, const std::function<bool(InputMessage&)>& sink);

// A file of one message or an mbox, or a directory of them. One open and one
// fstat per file, and a regular file read straight into the message in one
// read of its size: a path lookup, a bounce buffer and a read to see the end
// cost more than the rest of reading.
bool read_path(const std::string& path, std::size_t max_bytes, const std::function<bool(InputMessage&)>& sink) {
    InputMessage m;
    m.label = path;
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        m.error = errno == ENOENT ? std::string("no such file or directory") : "cannot open: " + errno_text(errno);
        return sink(m);
    }
    struct stat st {};
    if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
        ::close(fd);
        return read_directory(path, max_bytes, sink);
    }
    std::string data;
    long long total = 0;
    bool mbox = false;
    bool ok = true;
    if (S_ISREG(st.st_mode)) {
        // An mbox is read whole (it holds many messages); a message up to the limit.
        const auto size = static_cast<std::size_t>(st.st_size);
        if (size > max_bytes) {
            char head[5] = {};
            mbox = ::pread(fd, head, sizeof head, 0) == 5 && std::memcmp(head, "From ", 5) == 0;
        }
        ok = read_exactly(fd, data, mbox ? size : std::min(size, max_bytes));
        if (size <= max_bytes) mbox = data.rfind("From ", 0) == 0;
        total = static_cast<long long>(std::max(size, data.size()));
    } else {
        // A pipe or device: read to the end, counting what is past the limit.
        char head[5] = {};
        mbox = ::pread(fd, head, sizeof head, 0) == 5 && std::memcmp(head, "From ", 5) == 0;
        total = read_fd(fd, data, mbox ? SIZE_MAX : max_bytes);
        ok = total >= 0;
    }
    const int read_errno = errno;
    ::close(fd);
    if (!ok) {
        m.error = "cannot read: " + errno_text(read_errno);
        return sink(m);
    }
    if (mbox) return split_mbox(path, data, max_bytes, sink);
    m.size_bytes = static_cast<std::size_t>(total);
    m.raw = std::move(data);
    if (m.raw.size() > max_bytes) m.raw.resize(max_bytes);
    return sink(m);
}

bool read_directory(const fs::path& dir, std::size_t max_bytes, const std::function<bool(InputMessage&)>& sink) {
    std::vector<fs::path> folders;
    std::error_code ec;
    if (fs::is_directory(dir / "cur", ec) || fs::is_directory(dir / "new", ec)) {
        folders = {dir / "cur", dir / "new"};
    } else {
        folders = {dir};
    }
    std::vector<std::string> files;
    for (const auto& f : folders) {
        if (!fs::is_directory(f, ec)) continue;
        for (fs::directory_iterator it(f, ec), end; !ec && it != end; it.increment(ec)) {
            if (it->is_regular_file(ec)) files.push_back(it->path().string());
        }
        if (ec) {
            InputMessage m;
            m.label = f.string();
            m.error = "cannot list directory: " + ec.message();
            if (!sink(m)) return false;
            ec.clear();
        }
    }
    std::sort(files.begin(), files.end());
    for (const auto& file : files) {
        if (!read_path(file, max_bytes, sink)) return false;
    }
    return true;
}

}  // namespace

bool for_each_message(const std::vector<std::string>& paths, std::size_t max_bytes,
                      const std::function<bool(InputMessage&)>& sink) {
    for (const auto& path : paths) {
        if (path == "-") {
            InputMessage m;
            m.label = "-";
            const long long total = read_fd(STDIN_FILENO, m.raw, max_bytes);
            if (total < 0) {
                m.error = "cannot read standard input: " + errno_text(errno);
            } else {
                m.size_bytes = static_cast<std::size_t>(total);
                const std::size_t before = m.raw.size();
                drop_from_line(m.raw);
                m.size_bytes -= before - m.raw.size();
            }
            if (!sink(m)) return false;
            continue;
        }
        if (!read_path(path, max_bytes, sink)) return false;
    }
    return true;
}

std::vector<std::string> list_message_files(const std::string& path) {
    std::error_code ec;
    const auto status = fs::status(path, ec);
    if (ec || !fs::exists(status)) throw std::runtime_error(path + ": no such file or directory");
    if (!fs::is_directory(status)) return {path};
    std::vector<fs::path> folders;
    if (fs::is_directory(fs::path(path) / "cur", ec) || fs::is_directory(fs::path(path) / "new", ec)) {
        folders = {fs::path(path) / "cur", fs::path(path) / "new"};
    } else {
        folders = {path};
    }
    std::vector<std::string> files;
    for (const auto& f : folders) {
        if (!fs::is_directory(f, ec)) continue;
        for (fs::directory_iterator it(f, ec), end; !ec && it != end; it.increment(ec)) {
            if (it->is_regular_file(ec)) files.push_back(it->path().string());
        }
        if (ec) throw std::runtime_error(f.string() + ": cannot list directory: " + ec.message());
    }
    std::sort(files.begin(), files.end());
    return files;
}

bool few_message_files(const std::vector<std::string>& paths, std::size_t limit) {
    std::size_t n = 0;
    for (const auto& path : paths) {
        if (path == "-") {
            ++n;
        } else {
            try {
                n += list_message_files(path).size();
            } catch (const std::runtime_error&) {
                ++n;
            }
        }
        if (n > limit) return false;
    }
    return true;
}

bool few_messages_in(const std::vector<std::string>& paths, std::size_t limit) {
    std::size_t n = 0;  // each path listed once: a file counts as it is read, an mbox by its messages
    for (const auto& path : paths) {
        std::vector<std::string> files;
        if (path == "-") {
            ++n;
        } else {
            try {
                files = list_message_files(path);
            } catch (const std::runtime_error&) {
                ++n;  // reading it reports the problem
            }
        }
        for (const auto& f : files) {
            // A file whose first line starts with "From " is an mbox: count its
            // messages, unless it is too large to be a few of them.
            std::error_code ec;
            const auto size = std::filesystem::file_size(f, ec);
            std::ifstream in(f, std::ios::binary);
            char head[5] = {};
            if (ec || !in.read(head, sizeof head) || std::memcmp(head, "From ", 5) != 0) {
                ++n;
            } else if (size > 16 * 1024 * 1024) {
                return false;
            } else {
                in.seekg(0);
                for (std::string line; std::getline(in, line);) n += line.rfind("From ", 0) == 0 ? 1 : 0;
            }
            if (n > limit) return false;
        }
        if (n > limit) return false;
    }
    return true;
}

std::optional<std::string> read_message_file(const std::string& path, std::size_t max_bytes) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return std::nullopt;
    std::string raw;
    const long long total = read_fd(fd, raw, max_bytes);
    ::close(fd);
    if (total < 0) return std::nullopt;
    drop_from_line(raw);
    return raw;
}

std::vector<std::string> read_path_list(const std::string& list) {
    std::vector<std::string> out;
    std::string line;
    auto take = [&](std::istream& in) {
        while (std::getline(in, line)) {
            if (!line.empty() && line.back() == '\r') line.pop_back();
            if (!line.empty()) out.push_back(line);
        }
    };
    if (list == "-") {
        take(std::cin);
    } else {
        std::ifstream in(list);
        if (!in) throw std::runtime_error(list + ": cannot read path list: " + errno_text(errno));
        take(in);
    }
    return out;
}

}  // namespace mailsift::cli
