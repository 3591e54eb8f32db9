// mailsift-bench-proc — one whole process, timed from outside: wall time from
// its start to its exit, its own user + system CPU and its peak resident set,
// as the kernel accounts for the finished child (wait4), to the microsecond.
// /usr/bin/time gives the same figures in hundredths of a second, too coarse
// for a command that takes a few milliseconds (bench/one_message.sh).
//
// usage: mailsift-bench-proc [--stdin FILE] -- COMMAND [ARG...]
// prints: WALL_MS CPU_MS PEAK_KB EXIT_STATUS
// COMMAND's output goes to /dev/null; its standard input is FILE, else /dev/null.
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

extern char** environ;

int main(int argc, char** argv) {
    std::string input = "/dev/null";
    int i = 1;
    for (; i < argc; ++i) {
        if (std::strcmp(argv[i], "--stdin") == 0 && i + 1 < argc) {
            input = argv[++i];
        } else if (std::strcmp(argv[i], "--") == 0) {
            ++i;
            break;
        } else {
            std::fprintf(stderr, "usage: mailsift-bench-proc [--stdin FILE] -- COMMAND [ARG...]\n");
            return 2;
        }
    }
    if (i >= argc) {
        std::fprintf(stderr, "mailsift-bench-proc: no command\n");
        return 2;
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, input.c_str(), O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
    const auto start = std::chrono::steady_clock::now();
    pid_t pid = 0;
    if (const int rc = posix_spawnp(&pid, argv[i], &actions, nullptr, argv + i, environ); rc != 0) {
        std::fprintf(stderr, "mailsift-bench-proc: cannot start %s: %s\n", argv[i], std::strerror(rc));
        return 2;
    }
    int status = 0;
    rusage usage{};
    if (wait4(pid, &status, 0, &usage) != pid) {
        std::perror("mailsift-bench-proc: wait4");
        return 1;
    }
    const auto end = std::chrono::steady_clock::now();
    const double wall = std::chrono::duration<double, std::milli>(end - start).count();
    const double cpu = (usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1e3 +
                       (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e3;
    std::printf("%.3f %.3f %ld %d\n", wall, cpu, usage.ru_maxrss, WIFEXITED(status) ? WEXITSTATUS(status) : 128);
    return 0;
}
