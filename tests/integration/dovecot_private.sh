# shellcheck shell=bash
# A private Dovecot's main configuration, for dovecot_test.sh and
# bench/imapsieve_move.sh: IMAP on loopback only, plain passwords from a
# passwd-file, one virtual user's maildir, Junk and Trash, and the README's
# lines included at the end. Nothing in it refers to /etc/dovecot.
#
# dovecot_private_conf DOVE WORK MAIL UID GID PORT: prints it; DOVE holds
# run/, state/, users and the README's dovecot.conf; logs go to
# WORK/dovecot.log and WORK/dovecot-info.log; maildirs are MAIL/USER.
dovecot_private_conf() {
    local dove=$1 work=$2 mail=$3 uid=$4 gid=$5 port=$6
    cat <<CONF
protocols = imap
listen = 127.0.0.1
base_dir = $dove/run
state_dir = $dove/state
log_path = $work/dovecot.log
info_log_path = $work/dovecot-info.log
ssl = no
disable_plaintext_auth = no
auth_mechanisms = plain
mail_location = maildir:$mail/%n
first_valid_uid = $uid
last_valid_uid = $uid
passdb {
  driver = passwd-file
  args = scheme=PLAIN username_format=%n $dove/users
}
userdb {
  driver = static
  args = uid=$uid gid=$gid home=$mail/%n
}
service imap-login {
  inet_listener imap {
    address = 127.0.0.1
    port = $port
  }
  inet_listener imaps {
    port = 0
  }
}
namespace inbox {
  inbox = yes
  mailbox Junk {
    auto = create
    special_use = \\Junk
  }
  mailbox Trash {
    auto = create
    special_use = \\Trash
  }
}
# The README's lines:
!include $dove/dovecot.conf
CONF
}

# dovecot_readme_recipes HERE README DOVE SIEVE MAILSIFT CONF RUN GROUP MAIL_USER [QUEUE]:
# the README's recipe blocks (dovecot.conf, the sieve scripts, the two pipe
# programs, sieve-setup, mailsift.conf's correction socket, and delivery over
# LMTP: postfix-lmtp, dovecot-lmtp.conf, junk.sieve) into DOVE, with this
# instance's paths for the scripts' folder, the mailsift binary, its
# configuration, /run/mailsift and Postfix's queue (QUEUE, default
# /var/spool/postfix), GROUP for the group mailsift and MAIL_USER for the mail
# user vmail
# (readme_recipe.py in HERE). On a block the README lacks: its name on
# standard output, and status 1.
dovecot_readme_recipes() {
    local here=$1 readme=$2 dove=$3 sieve=$4 mailsift=$5 conf=$6 run=$7 group=$8 mail_user=$9 queue=${10:-/var/spool/postfix} name
    for name in dovecot.conf report-spam.sieve report-ham.sieve learn-spam learn-ham sieve-setup mailsift.conf \
        postfix-lmtp dovecot-lmtp.conf junk.sieve; do
        python3 "$here/readme_recipe.py" "$readme" "$name" "/etc/dovecot/sieve=$sieve" \
            "/usr/bin/mailsift=$mailsift" "/etc/mailsift/mailsift.conf=$conf" "/run/mailsift=$run" \
            "/var/spool/postfix=$queue" \
            >"$dove/$name" || { echo "$name"; return 1; }
    done
    sed -i "s/^correct_socket_group = mailsift\$/correct_socket_group = $group/" "$dove/mailsift.conf"
    sed -i "s/^correct_trusted = root vmail\$/correct_trusted = root $mail_user/" "$dove/mailsift.conf"
    grep -qx "correct_trusted = root $mail_user" "$dove/mailsift.conf" || { echo "mailsift.conf (correct_trusted)"; return 1; }
}
