#!/usr/bin/env bash
# systemd_verify.sh REPO_ROOT [MAILSIFTD]
#
# Checks the systemd files in REPO_ROOT/systemd:
#   1. `systemd-analyze verify` on mailsiftd.service. verify insists that
#      ExecStart's program exists, and the daemon is not installed in
#      /usr/sbin when the tests run, so the unit is checked as a copy in a
#      temporary directory in which ExecStart's /usr/sbin/mailsiftd is
#      replaced by the built binary MAILSIFTD (default:
#      REPO_ROOT/build/src/daemon/mailsiftd); nothing else is changed. Its
#      Documentation= man pages are looked up in the repository's man/
#      directory (through a temporary MANPATH), so they must exist there.
#      systemd-analyze verify reports unknown keys and bad values but still
#      exits 0, so any message about our unit is a failure.
#   2. A self-test: the same check on a copy with an unknown key and a bad
#      value must fail, so a change in systemd-analyze's output cannot make
#      check 1 pass silently.
#   3. What the daemon needs from its unit: Type=notify with --foreground
#      (mailsiftd sends READY=1 itself; without --foreground it would fork),
#      ExecReload sending SIGHUP, User=/Group= mailsift, StateDirectory=.
#   4. mailsift.sysusers creates the unit's user, applied to an empty
#      temporary root with systemd-sysusers --root.
#   5. mailsift.tmpfiles creates /var/lib/mailsift mode 0750 in that root
#      (skipped when not root: it has to chown).
# systemd-analyze and friends come from the Debian package systemd, installed
# when missing and we are root with apt-get.
# Prints "ok - ..." / "not ok - ..." with "# " diagnostics, then
# "N passed, M failed"; exits 1 if any check failed.
set -u

if [ $# -lt 1 ] || [ ! -d "$1/systemd" ]; then
    echo "usage: $0 REPO_ROOT [MAILSIFTD]   (REPO_ROOT/systemd must exist)" >&2
    exit 2
fi
root=$(cd "$1" && pwd)
binary=${2:-$root/build/src/daemon/mailsiftd}
case "$binary" in /*) ;; *) binary=$(pwd)/$binary ;; esac
unit=$root/systemd/mailsiftd.service

passed=0
failed=0
ok() { echo "ok - $1"; passed=$((passed + 1)); }
not_ok() {
    echo "not ok - $1"
    failed=$((failed + 1))
    shift
    local line
    for line in "$@"; do echo "#   $line"; done
}

if ! command -v systemd-analyze >/dev/null 2>&1 &&
    [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "# systemd-analyze not found: installing the Debian package systemd"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q --no-install-recommends systemd >/dev/null 2>&1 ||
        { apt-get update -q >/dev/null 2>&1 &&
          apt-get install -y -q --no-install-recommends systemd >/dev/null 2>&1; }
fi
if ! command -v systemd-analyze >/dev/null 2>&1; then
    not_ok "systemd-analyze is available" "install the Debian package systemd"
    echo "$passed passed, $failed failed"
    exit 1
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# A man tree holding the repository's pages, for Documentation=man:... .
man_option=--man=yes
if command -v man >/dev/null 2>&1; then
    for page in "$root"/man/*.[1-9]; do
        [ -e "$page" ] || continue
        mkdir -p "$work/man/man${page##*.}"
        ln -s "$page" "$work/man/man${page##*.}/"
    done
else
    man_option=--man=no
    echo "# man(1) not installed: Documentation= pages not checked"
fi

# verify_unit FILE: runs systemd-analyze verify on FILE (named
# mailsiftd.service); prints the messages that concern it, one per line, and
# "note, ..." lines for the ones set aside.
#
# Environment noise. Observed here (Debian 12, systemd 252, in a container
# whose PID 1 is not systemd, as root and as nobody): for a correct unit
# verify prints nothing at all, so nothing below is filtered for that reason.
# The one class of messages set aside is about *other* unit files that
# verify loads because ours names them (Before=postfix.service, After=
# network.target, WantedBy=multi-user.target): such lines start with that
# unit's file path or name, and are about the host's installation, not this
# unit. They are shown as notes. Everything else counts against the unit.
verify_unit() {
    local file=$1 out rc line
    out=$(MANPATH="$work/man" SYSTEMD_PAGER='' systemd-analyze verify --no-pager \
        "$man_option" "$file" 2>&1)
    rc=$?
    # "NAME.TYPE: ..." or "/path/NAME.TYPE:LINE: ...", NAME.TYPE not ours.
    local other='^(/[^[:space:]:]+/)?[^/[:space:]:]+\.(service|socket|target|device|mount|automount|swap|path|timer|slice|scope):'
    while IFS= read -r line; do
        [ -z "$line" ] && continue
        if [[ "$line" == "$file:"* || "$line" == mailsiftd.service:* ]]; then
            echo "$line"
        elif [[ "$line" =~ $other ]]; then
            echo "note, about another unit: $line"
        else
            echo "$line"
        fi
    done <<<"$out"
    if [ $rc -ne 0 ]; then echo "systemd-analyze verify exited with $rc"; fi
}

# The unit as installed, but with ExecStart pointing at the built binary.
prepare_unit() {  # DESTINATION
    sed "s|^ExecStart=/usr/sbin/mailsiftd\([[:space:]]\)|ExecStart=$binary\1|" "$unit" >"$1"
}

# 1. systemd-analyze verify
if [ ! -f "$unit" ]; then
    not_ok "systemd/mailsiftd.service: systemd-analyze verify" "missing: $unit"
elif [ ! -x "$binary" ]; then
    not_ok "systemd/mailsiftd.service: systemd-analyze verify" \
        "the daemon is not built: $binary (build it, or pass its path as the second argument)"
else
    mkdir -p "$work/unit"
    prepare_unit "$work/unit/mailsiftd.service"
    if [ "$(grep -c "^ExecStart=$binary " "$work/unit/mailsiftd.service")" != 1 ]; then
        not_ok "systemd/mailsiftd.service: systemd-analyze verify" \
            "expected exactly one 'ExecStart=/usr/sbin/mailsiftd ...' line to point at the built binary"
    else
        all=$(verify_unit "$work/unit/mailsiftd.service")
        messages=$(grep -v '^note, ' <<<"$all")
        if [ -z "$messages" ]; then
            ok "systemd/mailsiftd.service: systemd-analyze verify (ExecStart=$binary)"
        else
            mapfile -t lines <<<"$messages"
            not_ok "systemd/mailsiftd.service: systemd-analyze verify (ExecStart=$binary)" "${lines[@]}"
        fi
        grep '^note, ' <<<"$all" | sed 's/^/#   /'
    fi

    # 2. Self-test: a broken copy must be reported.
    mkdir -p "$work/broken"
    prepare_unit "$work/broken/mailsiftd.service"
    printf '[Service]\nNoSuchDirective=yes\nRestart=sometimes\n' >>"$work/broken/mailsiftd.service"
    messages=$(verify_unit "$work/broken/mailsiftd.service" | grep -v '^note, ')
    if grep -q "NoSuchDirective" <<<"$messages" && grep -q "sometimes" <<<"$messages"; then
        ok "self-test: verify reports an unknown key and a bad value"
    else
        mapfile -t lines <<<"$messages"
        not_ok "self-test: verify reports an unknown key and a bad value" "got:" "${lines[@]}"
    fi
fi

# 3. What mailsiftd needs from its unit.
if [ -f "$unit" ]; then
    need=(
        "^Type=notify\$"
        "^ExecStart=/usr/sbin/mailsiftd .*--foreground"
        "^ExecReload=/bin/kill -HUP \\\$MAINPID\$"
        "^User=mailsift\$"
        "^Group=mailsift\$"
        "^StateDirectory=mailsift\$"
        "^ReadWritePaths=/var/lib/mailsift\$"
    )
    missing=()
    for pattern in "${need[@]}"; do
        grep -q -- "$pattern" "$unit" || missing+=("no line matching: $pattern")
    done
    if [ ${#missing[@]} -eq 0 ]; then
        ok "systemd/mailsiftd.service: Type=notify, --foreground, SIGHUP reload, user mailsift"
    else
        not_ok "systemd/mailsiftd.service: Type=notify, --foreground, SIGHUP reload, user mailsift" "${missing[@]}"
    fi
fi

# 4. sysusers: the unit's user, created in an empty root.
sysroot=$work/root
mkdir -p "$sysroot/etc"
sysusers=$root/systemd/mailsift.sysusers
if [ ! -f "$sysusers" ]; then
    echo "# no systemd/mailsift.sysusers"
elif ! command -v systemd-sysusers >/dev/null 2>&1; then
    not_ok "systemd/mailsift.sysusers" "systemd-sysusers is not installed"
else
    out=$(systemd-sysusers --root="$sysroot" "$sysusers" 2>&1)
    rc=$?
    entry=$(grep '^mailsift:' "$sysroot/etc/passwd" 2>/dev/null)
    group=$(grep '^mailsift:' "$sysroot/etc/group" 2>/dev/null)
    if [ $rc -eq 0 ] && [ "$(cut -d: -f6 <<<"$entry")" = /var/lib/mailsift ] && [ -n "$group" ]; then
        ok "systemd/mailsift.sysusers: creates user and group mailsift (home /var/lib/mailsift)"
    else
        mapfile -t lines <<<"$out"
        not_ok "systemd/mailsift.sysusers: creates user and group mailsift (home /var/lib/mailsift)" \
            "systemd-sysusers exited with $rc" "${lines[@]}" "passwd entry: ${entry:-none}"
    fi
fi

# 5. tmpfiles: /var/lib/mailsift in the same root.
tmpfiles=$root/systemd/mailsift.tmpfiles
if [ ! -f "$tmpfiles" ]; then
    echo "# no systemd/mailsift.tmpfiles"
elif ! command -v systemd-tmpfiles >/dev/null 2>&1; then
    not_ok "systemd/mailsift.tmpfiles" "systemd-tmpfiles is not installed"
elif [ "$(id -u)" != 0 ]; then
    # Creating the directory means chown to mailsift, which needs root.
    ok "systemd/mailsift.tmpfiles # SKIP not root"
else
    out=$(systemd-tmpfiles --root="$sysroot" --create "$tmpfiles" 2>&1)
    rc=$?
    mode=$(stat -c %a "$sysroot/var/lib/mailsift" 2>/dev/null)
    owner=$(stat -c %u "$sysroot/var/lib/mailsift" 2>/dev/null)
    uid=$(grep '^mailsift:' "$sysroot/etc/passwd" 2>/dev/null | cut -d: -f3)
    if [ $rc -eq 0 ] && [ "$mode" = 750 ] && [ -n "$uid" ] && [ "$owner" = "$uid" ]; then
        ok "systemd/mailsift.tmpfiles: creates /var/lib/mailsift 0750 owned by mailsift"
    else
        mapfile -t lines <<<"$out"
        not_ok "systemd/mailsift.tmpfiles: creates /var/lib/mailsift 0750 owned by mailsift" \
            "systemd-tmpfiles exited with $rc" "${lines[@]}" "mode ${mode:-none}, owner ${owner:-none}, mailsift uid ${uid:-none}"
    fi
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
