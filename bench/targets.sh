# shellcheck shell=bash disable=SC2034  # read by the scripts that source it
# bench/targets.sh - the performance targets, each stated once, with the issue
# that set it; sourced by the benchmark scripts (run.sh, speed.sh,
# one_message.sh), which report a figure against its target here. Empty: the
# figure is reported as measured, with no target (withdrawn, or none set).

# Batch: classify messages per CPU second, mailsift over bogofilter on the same
# corpus in the same run (speed.sh): at least 5x (issue 33, item 4; issue 32
# kept 3x as a floor).
target_classify_ratio=5
# Batch learn and the database's size beside bogofilter's: withdrawn (issue 32, item 5).
target_learn_ratio=
target_db_ratio=
# Postfix delivering through mailsiftd, messages per second over Postfix with
# no milter (postfix_throughput.sh, medians of five interleaved rounds): at
# least 0.90 (issues 3 and 33).
target_postfix_ratio=0.90
# While the daemon swaps in a model of 10^7 features, no interval's p99 above
# 2x the run's p99 (run.sh, refresh).
target_refresh_ratio=2.0
# The daemon at 16 connections: at least 5,000 messages per second, p99 at
# most 5 ms (run.sh, daemon).
target_daemon_rate=5000
target_daemon_p99=5
# Classifying with 10^7 features within 2x of 10^5 (run.sh, scale).
target_scale_ratio=2
# A recorded scan on disk, indexes included, at most 1,024 bytes (scan_size.sh).
target_scan_bytes=1024
# One message, one process (one_message.sh, issue 33, item 2): classify and
# correct at most 2x bogofilter's wall and CPU, peak memory at most 2x; on a
# model ten times larger within 1.2x of the 20,000-message figure.
target_one_message_ratio=2
target_one_message_scale=1.2
# The move a user makes: N messages moved into Junk (and back) through Dovecot's
# IMAPSieve recipe, at most 1.5x the time with bogofilter in the pipe programs
# (imapsieve_move.sh, issue 33, item 3).
target_imapsieve_ratio=1.5
