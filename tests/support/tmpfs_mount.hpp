// A small tmpfs of a test's own (a disk that fills up for real), unmounted and
// removed whatever way the test ends. Mounting needs root; CI runs as root.
#pragma once

#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>

namespace test_support {

struct TmpfsMount {
    std::filesystem::path dir;
    bool mounted = false;
    std::string problem;  // why it is not mounted

    explicit TmpfsMount(std::uint64_t bytes) {
        std::string tmpl = "/tmp/mailsift-tmpfs-XXXXXX";
        dir = ::mkdtemp(tmpl.data());
        const std::string options = "size=" + std::to_string(bytes) + ",mode=0755";
        if (::geteuid() != 0) {
            problem = "needs root to mount a tmpfs (CI runs as root)";
        } else if (::mount("tmpfs", dir.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, options.c_str()) != 0) {
            problem = std::string("cannot mount a tmpfs: ") + std::strerror(errno);
        } else {
            mounted = true;
        }
    }
    ~TmpfsMount() {
        if (mounted && ::umount2(dir.c_str(), 0) != 0) ::umount2(dir.c_str(), MNT_DETACH);
        std::error_code ec;
        std::filesystem::remove_all(dir, ec);
    }
    TmpfsMount(const TmpfsMount&) = delete;
    TmpfsMount& operator=(const TmpfsMount&) = delete;
};

}  // namespace test_support
