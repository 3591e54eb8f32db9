#!/usr/bin/env bash
# The Debian package as an administrator uses it, on this machine, for real:
#   1. scripts/package.sh builds and lints it twice: a "previous release" (the
#      same sources at VERSION~previous) and this one;
#   2. apt installs the previous one: programs, man pages, unit, conffile, the
#      mailsift user and /var/lib/mailsift with their owners and modes;
#   3. it is trained as the mailsift user, its mailsift.conf edited locally,
#      and mailsiftd started exactly as the unit's ExecStart says, as the
#      mailsift user (through systemd where systemd runs, by hand where it does
#      not, with what the unit's User=, Environment= and RuntimeDirectory= give);
#      a private Postfix on loopback has it score mail; mailsift run by root
#      and by a member of group mailsift reads the same model;
#   4. the new package is installed over it: the model, its counts and the
#      edited mailsift.conf are kept, and the daemon comes back and scores;
#   5. apt remove keeps the configuration and the model; apt purge removes
#      both (the mailsift user stays, as Debian leaves system users);
#   6. installing again after the purge gives a working, empty install.
# Purges the package and removes its test user when it ends, whatever happened.
#
# usage: package_test.sh   (as root, from scripts/test.sh; it installs packages)
# Prints "ok - ..." / "not ok - ..." per check and "N passed, M failed" last;
# exits 0 only when nothing failed. Never skipped: without root it fails.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=postfix_base.sh
. "$(dirname "${BASH_SOURCE[0]}")/postfix_base.sh"

REPO=$(cd "$HERE/../.." && pwd)
MESSAGES_SRC=$(cd "$HERE/../data/messages" && pwd)
READER=mailsift-pkgtest   # a member of group mailsift, made for this test
SINKPID=""
PF_STARTED=""
PFETC=""
INSTALLED_BY_US=""
LOGS+=(postfix.log sink.log apt.log package.log)

if [ "$(id -u)" -ne 0 ]; then
    echo "not ok - package_test.sh installs a Debian package: it must run as root"
    echo "0 passed, 1 failed"
    exit 1
fi
if dpkg-query -W -f='${Status}' mailsift 2>/dev/null | grep -q "install ok installed"; then
    echo "not ok - mailsift is already installed from a package here; this test would replace it (remove it first)"
    echo "0 passed, 1 failed"
    exit 1
fi

# Stops our mailsiftd: by PID when we started it, through systemd when it did.
stop_daemon() {
    if [ -n "$DPID" ]; then
        stop_pid "$DPID"
        DPID=""
    elif [ -n "${SYSTEMD:-}" ]; then
        systemctl stop mailsiftd >/dev/null 2>&1 || true
    fi
}
purge_package() {
    [ -n "$INSTALLED_BY_US" ] || return 0
    stop_daemon
    DEBIAN_FRONTEND=noninteractive apt-get purge -y -q mailsift >>"$WORK/apt.log" 2>&1
    userdel "$READER" >/dev/null 2>&1
}
CLEANUP_STEPS+=(stop_postfix stop_sink purge_package)

make_workdir package
chmod 755 "$WORK"   # Postfix runs as postfix below it; mailsift reads the fixtures
MESSAGES="$WORK/messages"
cp -r "$MESSAGES_SRC" "$MESSAGES"
chmod -R a+rX "$MESSAGES"
need_commands --before-install preseed_postfix postfix python3 setpriv=util-linux man=man-db col=bsdextrautils fail2ban-client=fail2ban
[ -d /run/systemd/system ] && SYSTEMD=1 || SYSTEMD=""

# ---------------------------------------------------------------- 1. build and lint
VERSION=$("$REPO/scripts/package.sh" --print-version)
PREVIOUS="$VERSION~previous"
ARCH=$(dpkg-architecture -qDEB_HOST_ARCH 2>/dev/null || dpkg --print-architecture)
OLD_DEB="$REPO/build-deb/mailsift_${PREVIOUS}_$ARCH.deb"
NEW_DEB="$REPO/build-deb/mailsift_${VERSION}_$ARCH.deb"
for v in "$PREVIOUS" "$VERSION"; do
    if "$REPO/scripts/package.sh" --version "$v" >>"$WORK/package.log" 2>&1; then
        ok "scripts/package.sh built mailsift $v and lintian found no error or warning"
    else
        tail -n 30 "$WORK/package.log" | sed 's/^/#   /'
        bail "scripts/package.sh built and linted mailsift $v"
    fi
done
[ -f "$OLD_DEB" ] && [ -f "$NEW_DEB" ] || bail "both packages are in build-deb/ ($OLD_DEB, $NEW_DEB)"
# The license where Debian looks for it: the copyright file names Apache-2.0 for every
# file, and lintian, even at the info level, has nothing to say about it.
copyright=$(dpkg-deb --fsys-tarfile "$NEW_DEB" | tar -xOf - ./usr/share/doc/mailsift/copyright 2>/dev/null)
copyright_tags=$(lintian --display-info "$NEW_DEB" 2>&1 | grep -i 'copyright' || true)
if grep -qx 'Files: \*' <<<"$copyright" && grep -A3 -x 'Files: \*' <<<"$copyright" | grep -qx 'License: Apache-2.0' &&
    [ -z "$copyright_tags" ]; then
    ok "/usr/share/doc/mailsift/copyright licenses every file under Apache-2.0, and lintian has no copyright tag"
else
    not_ok "the package's copyright file names Apache-2.0 for * with no lintian copyright tag (tags: ${copyright_tags:-none}; file: $(head -c 300 <<<"$copyright" | tr '\n' '|'))"
fi
depends=$(dpkg-deb -f "$NEW_DEB" Depends)
if [[ "$depends" == *libsqlite3-0* && "$depends" == *libsodium23* && "$depends" == *libssl3* ]]; then
    ok "its run-time dependencies come from dh_shlibdeps: $depends"
else
    not_ok "Depends names the shared libraries mailsift links (got: $depends)"
fi

install_deb() {  # install_deb FILE: apt installs it; false if apt fails
    INSTALLED_BY_US=1
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q -o DPkg::Lock::Timeout=120 "$1" >>"$WORK/apt.log" 2>&1
}
installed_version() { dpkg-query -W -f='${Version}' mailsift 2>/dev/null; }

# ---------------------------------------------------------------- 2. install
install_deb "$OLD_DEB" && [ "$(installed_version)" = "$PREVIOUS" ] ||
    bail "apt install ./$(basename "$OLD_DEB")"
ok "apt install ./$(basename "$OLD_DEB") installed mailsift $PREVIOUS"

[ "$(/usr/bin/mailsift --version | head -n 1)" = "mailsift $PREVIOUS" ] && [ "$(/usr/sbin/mailsiftd --version | head -n 1)" = "mailsiftd $PREVIOUS" ] &&
    ok "/usr/bin/mailsift and /usr/sbin/mailsiftd print the package's version" ||
    not_ok "the programs print $PREVIOUS (got: $(/usr/bin/mailsift --version) / $(/usr/sbin/mailsiftd --version))"
pages_ok=1
for page in mailsift.1 mailsift.conf.5 mailsiftd.8; do
    name=${page%.*} section=${page##*.}
    rendered=$(MANWIDTH=80 man "$section" "$name" 2>/dev/null | col -b) || rendered=""
    if [ -z "$rendered" ] || ! grep -q "mailsift $PREVIOUS" <<<"$rendered"; then
        pages_ok=""
        note "man $section $name: $(head -c 200 <<<"$rendered")"
    fi
done
[ -n "$pages_ok" ] && ok "man mailsift, man 5 mailsift.conf and man mailsiftd render, with the version in their footers" ||
    not_ok "the man pages render from /usr/share/man"
unit=/lib/systemd/system/mailsiftd.service
if [ -f "$unit" ] && out=$(systemd-analyze verify "$unit" 2>&1) && ! grep -q mailsiftd <<<"$out"; then
    ok "systemd-analyze verify $unit: no complaint"
else
    not_ok "systemd-analyze verify $unit (got: $(tr '\n' '|' <<<"${out:-missing}"))"
fi
dpkg-query -W -f='${Conffiles}\n' mailsift | grep -q '^ /etc/mailsift/mailsift.conf ' &&
    ok "/etc/mailsift/mailsift.conf is a conffile" || not_ok "/etc/mailsift/mailsift.conf is a conffile"
# fail2ban: the filter where fail2ban looks (a conffile, the very file the console
# test runs fail2ban-regex with over a real mailsiftd's lines), the jail as an
# example; the README's recipe (copy the jail into jail.d) passes fail2ban's own
# configuration test, here in a private copy of /etc/fail2ban without Debian's
# default sshd jail (no sshd log on a test machine).
F2B_FILTER=/etc/fail2ban/filter.d/mailsiftd-console.conf
F2B_JAIL=/usr/share/doc/mailsift/examples/fail2ban/jail.d/mailsiftd-console.local
if dpkg-query -W -f='${Conffiles}\n' mailsift | grep -q "^ $F2B_FILTER " &&
    cmp -s "$F2B_FILTER" "$REPO/etc/fail2ban/filter.d/mailsiftd-console.conf" && [ -f "$F2B_JAIL" ]; then
    ok "the fail2ban filter is installed as $F2B_FILTER (a conffile) and the example jail as $F2B_JAIL"
else
    not_ok "the fail2ban filter ($F2B_FILTER, a conffile) and example jail ($F2B_JAIL) are installed"
fi
rm -rf "$WORK/fail2ban"
cp -r /etc/fail2ban "$WORK/fail2ban"
rm -f "$WORK/fail2ban/jail.d/defaults-debian.conf"
cp "$F2B_JAIL" "$WORK/fail2ban/jail.d/" 2>/dev/null || true
if out=$(fail2ban-client -c "$WORK/fail2ban" -t 2>&1) && grep -q "configuration test is successful" <<<"$out" &&
    fail2ban-client -c "$WORK/fail2ban" -d 2>/dev/null | grep -q "'mailsiftd-console'"; then
    ok "fail2ban-client -t: the example jail, copied as the README says, and the installed filter load"
else
    not_ok "fail2ban-client -t with the example jail ($(tail -n 3 <<<"$out" | tr '\n' '|'))"
fi
IFS=: read -r _ _ uid gid _ home shell <<<"$(getent passwd mailsift || true)"
if [ -n "${uid:-}" ] && [ "$uid" -lt 1000 ] && [ "$home" = /var/lib/mailsift ] && [ "$shell" = /usr/sbin/nologin ] &&
    [ "$(getent group mailsift | cut -d: -f3)" = "$gid" ]; then
    ok "system user mailsift ($uid:$gid), home /var/lib/mailsift, no login shell"
else
    not_ok "system user mailsift with group mailsift, home /var/lib/mailsift, nologin (got: $(getent passwd mailsift))"
fi
[ "$(stat -c '%U:%G %a' /var/lib/mailsift 2>/dev/null)" = "mailsift:mailsift 750" ] &&
    ok "/var/lib/mailsift is mailsift:mailsift 0750" ||
    not_ok "/var/lib/mailsift is mailsift:mailsift 0750 (got: $(stat -c '%U:%G %a' /var/lib/mailsift 2>&1))"

# ---------------------------------------------------------------- 3. train, configure, run
as_mailsift() { setpriv --reuid mailsift --regid mailsift --init-groups -- "$@"; }
if as_mailsift mailsift learn --spam "$MESSAGES"/spam_*.eml >"$WORK/learn.log" 2>&1 &&
    as_mailsift mailsift learn --ham "$MESSAGES"/ham_*.eml >>"$WORK/learn.log" 2>&1; then
    ok "trained as the mailsift user into the database mailsift.conf names"
else
    sed 's/^/#   /' "$WORK/learn.log"
    bail "trained as the mailsift user"
fi
[ -f /var/lib/mailsift/mailsift.db ] && [ "$(stat -c %U /var/lib/mailsift/mailsift.db)" = mailsift ] &&
    ok "the model is /var/lib/mailsift/mailsift.db, owned by mailsift" ||
    not_ok "the model is /var/lib/mailsift/mailsift.db, owned by mailsift"

MILTER_PORT=$(free_port)
SINK_PORT=$(free_port)
SMTP_PORT=$(free_port)
# The local edit an upgrade must keep: where mailsiftd listens.
cat >>/etc/mailsift/mailsift.conf <<EOF

# Local edit by package_test.sh
listen = inet:127.0.0.1:$MILTER_PORT
EOF

# The unit's ExecStart, run as its User= with its Environment= and RuntimeDirectory=.
EXEC_START=$(sed -n 's/^ExecStart=//p' "$unit")
UNIT_ENV=$(sed -n 's/^Environment=//p' "$unit")
start_packaged_daemon() {
    LOG_MARK=$(wc -l 2>/dev/null <"$WORK/mailsiftd.log" || echo 0)
    if [ -n "$SYSTEMD" ]; then
        systemctl restart mailsiftd || return 1
        wait_for 20 port_open "$MILTER_PORT"
        return
    fi
    install -d -o mailsift -g mailsift -m 0755 /run/mailsift
    # shellcheck disable=SC2086  # ExecStart and Environment= are word lists
    (umask 0027 && exec env $UNIT_ENV setpriv --reuid mailsift --regid mailsift --init-groups -- $EXEC_START) \
        >>"$WORK/mailsiftd.log" 2>&1 &
    DPID=$!
    wait_for 20 daemon_ready
}
if start_packaged_daemon; then
    ok "mailsiftd started as the unit says ($EXEC_START, user mailsift$([ -n "$SYSTEMD" ] && echo ", by systemd" || echo ", by hand: no systemd here"))"
else
    bail "mailsiftd started as the unit's ExecStart says"
fi
if [ -n "$DPID" ]; then
    [ "$(stat -c %U "/proc/$DPID")" = mailsift ] && ok "mailsiftd runs as user mailsift" ||
        not_ok "mailsiftd runs as user mailsift (got: $(stat -c %U "/proc/$DPID"))"
fi

start_sink
PFETC="$WORK/etc"
mkdir -p "$PFETC"
{
    postfix_base_main_cf "$WORK" "$WORK/queue" "$SINK_PORT" mailsift-package-test
    echo "smtpd_milters = inet:127.0.0.1:$MILTER_PORT"
    echo "milter_default_action = tempfail"
} >"$PFETC/main.cf"
postfix_single_smtpd_master_cf "$SMTP_PORT" >"$PFETC/master.cf"
if postfix_start "$SMTP_PORT"; then
    ok "private Postfix on 127.0.0.1:$SMTP_PORT with smtpd_milters = inet:127.0.0.1:$MILTER_PORT"
else
    sed 's/^/#   /' "$WORK/postfix-cmd.log"
    bail "private Postfix started"
fi

# scored CASE FILE VERDICT: sends FILE through Postfix; it arrives with X-Mailsift-Status VERDICT.
scored() {
    local case=$1 file=$2 verdict=$3 out got=""
    out=$(timeout 60 python3 "$HERE/smtp_send.py" 127.0.0.1 "$SMTP_PORT" sender@example.org "$case@example.test" "$file" 2>&1) ||
        { note "send: $out"; return 1; }
    wait_for 30 compgen -G "$SINK/*-$case@example.test.eml" >/dev/null || { note "$case not delivered"; return 1; }
    got=$(sed -n 's/^X-Mailsift-Status: \([A-Za-z]*\),.*/\1/p' "$SINK"/*-"$case@example.test.eml" | head -n 1)
    [ "$got" = "$verdict" ] || { note "$case: X-Mailsift-Status '$got', expected $verdict"; return 1; }
}
scored before-spam "$MESSAGES/spam_cheap_pills.eml" Yes && scored before-ham "$MESSAGES/ham_meeting_notes.eml" No &&
    ok "the packaged mailsiftd scores mail from the real Postfix (spam Yes, ham No)" ||
    not_ok "the packaged mailsiftd scores mail from the real Postfix"

counts() { "$@" stats --json | python3 -c 'import json, sys; m = json.load(sys.stdin)["messages"]; print(m["spam"], m["ham"])'; }
useradd --system --no-create-home --shell /usr/sbin/nologin -G mailsift "$READER" 2>/dev/null || usermod -a -G mailsift "$READER"
ROOT_COUNTS=$(counts mailsift 2>&1 || true)
READER_COUNTS=$(counts setpriv --reuid "$READER" --regid "$READER" --init-groups -- mailsift 2>&1 || true)
[ "$ROOT_COUNTS" = "3 3" ] && [ "$READER_COUNTS" = "$ROOT_COUNTS" ] &&
    ok "mailsift stats as root and as a member of group mailsift read the same model (3 spam, 3 ham)" ||
    not_ok "root and a member of group mailsift read the same model (root: $ROOT_COUNTS; $READER: $READER_COUNTS)"

# ---------------------------------------------------------------- 4. upgrade
stop_daemon   # by hand (no systemd): what the package's restart does under systemd
if install_deb "$NEW_DEB" && [ "$(installed_version)" = "$VERSION" ]; then
    ok "apt install ./$(basename "$NEW_DEB") upgraded $PREVIOUS to $VERSION"
else
    tail -n 20 "$WORK/apt.log" | sed 's/^/#   /'
    bail "upgrade to $VERSION"
fi
grep -qx "listen = inet:127.0.0.1:$MILTER_PORT" /etc/mailsift/mailsift.conf &&
    ok "the locally edited mailsift.conf was kept" || not_ok "the locally edited mailsift.conf was kept"
[ "$(counts mailsift 2>&1)" = "3 3" ] && ok "the model and its counts were kept (3 spam, 3 ham)" ||
    not_ok "the model was kept (got: $(counts mailsift 2>&1))"
[ "$(/usr/sbin/mailsiftd --version | head -n 1)" = "mailsiftd $VERSION" ] && ok "mailsiftd is now $VERSION" ||
    not_ok "mailsiftd is now $VERSION (got: $(/usr/sbin/mailsiftd --version))"
if start_packaged_daemon && scored after-spam "$MESSAGES/spam_investment.eml" Yes &&
    scored after-ham "$MESSAGES/ham_patch_review.eml" No; then
    ok "after the upgrade mailsiftd comes back on the kept settings and scores mail from Postfix"
else
    not_ok "after the upgrade mailsiftd comes back and scores mail"
fi
stop_daemon

# ---------------------------------------------------------------- 5. remove and purge
DEBIAN_FRONTEND=noninteractive apt-get remove -y -q mailsift >>"$WORK/apt.log" 2>&1 || not_ok "apt remove mailsift"
if [ ! -e /usr/sbin/mailsiftd ] && [ -f /etc/mailsift/mailsift.conf ] && [ -s /var/lib/mailsift/mailsift.db ] &&
    grep -qx "listen = inet:127.0.0.1:$MILTER_PORT" /etc/mailsift/mailsift.conf; then
    ok "apt remove took the programs and kept mailsift.conf (with its edit) and the model"
else
    not_ok "apt remove keeps the configuration and the model ($(ls -l /usr/sbin/mailsiftd /etc/mailsift /var/lib/mailsift 2>&1 | tr '\n' '|'))"
fi
DEBIAN_FRONTEND=noninteractive apt-get purge -y -q mailsift >>"$WORK/apt.log" 2>&1 || not_ok "apt purge mailsift"
if [ ! -e /etc/mailsift/mailsift.conf ] && [ ! -e /var/lib/mailsift ] && getent passwd mailsift >/dev/null; then
    ok "apt purge removed mailsift.conf and /var/lib/mailsift (the model) and left the mailsift user"
else
    not_ok "apt purge removes the configuration and the state directory ($(ls -ld /etc/mailsift /var/lib/mailsift 2>&1 | tr '\n' '|'))"
fi

# ---------------------------------------------------------------- 6. reinstall
if install_deb "$NEW_DEB" && [ "$(stat -c '%U:%G %a' /var/lib/mailsift 2>/dev/null)" = "mailsift:mailsift 750" ] &&
    [ -f /etc/mailsift/mailsift.conf ] && ! grep -q "Local edit" /etc/mailsift/mailsift.conf &&
    [ ! -e /var/lib/mailsift/mailsift.db ]; then
    ok "installed again after the purge: a fresh mailsift.conf, /var/lib/mailsift 0750 and no model yet"
else
    not_ok "reinstall after purge (state: $(stat -c '%U:%G %a' /var/lib/mailsift 2>&1); $(ls /var/lib/mailsift 2>&1))"
fi
if as_mailsift mailsift learn --spam "$MESSAGES/spam_money_offer.eml" >>"$WORK/learn.log" 2>&1 &&
    [ "$(counts mailsift 2>&1)" = "1 0" ]; then
    ok "and a new model is trained from scratch (1 spam)"
else
    not_ok "a new model after the reinstall (counts: $(counts mailsift 2>&1))"
fi
summary_and_exit
