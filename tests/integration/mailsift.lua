-- miltertest(8) script for mailsiftd: plays the MTA side of the milter
-- protocol against a running mailsiftd and checks what it asks for at
-- end-of-message. Run by miltertest_test.sh; by hand:
--
--   miltertest -s mailsift.lua -D port=8891 -D spam=SPAM.eml -D ham=HAM.eml [-D scenario=reject]
--
-- Globals (all strings, from -D):
--   port      mailsiftd listens on inet:127.0.0.1:<port>
--   spam/ham  message files (headers, blank line, body) of a spam and a ham fixture
--   scenario  "score" (default): reject_threshold is off; spam with a forged
--             X-Mailsift-Status header, then ham on the same connection.
--             "reject": reject_threshold is 0.5; spam must get the SMTP reply
--             "550 5.7.1 Message rejected as spam", ham on the same connection
--             must still be tagged.
--
-- Prints one "ok - ..." or "not ok - ..." line per check and, when the script
-- got to its end, "# lua done: N passed, M failed". A setup step that fails
-- (connect, negotiation) stops the script with an error.

local passed, failed = 0, 0
scenario = scenario or "score"

local function check(cond, what, detail)
    if cond then
        passed = passed + 1
        mt.echo("ok - " .. what)
    else
        failed = failed + 1
        mt.echo("not ok - " .. what .. (detail and (" (" .. tostring(detail) .. ")") or ""))
    end
    return cond
end

local function must(cond, what, detail)
    if not check(cond, what, detail) then
        error("stopping: " .. what .. " failed")
    end
end

local reply_names = {}
for _, n in ipairs({ "SMFIR_CONTINUE", "SMFIR_ACCEPT", "SMFIR_REJECT", "SMFIR_TEMPFAIL", "SMFIR_DISCARD",
                     "SMFIR_REPLYCODE", "SMFIR_SKIP" }) do
    if _G[n] ~= nil then reply_names[_G[n]] = n end
end
local function reply_name(r)
    if reply_names[r] then return reply_names[r] end
    local n = math.floor(tonumber(r) or 0)
    if n >= 32 and n < 127 then return string.format("reply '%s'", string.char(n)) end
    return string.format("reply %d", n)
end

-- Reads a message file: a list of {name, value} headers (value without the
-- space after the colon, folded lines joined with "\n") and the body with CRLF.
local function read_message(path)
    local f = assert(io.open(path, "rb"))
    local text = f:read("*a")
    f:close()
    text = text:gsub("\r\n", "\n")
    local head, body = text:match("^(.-)\n\n(.*)$")
    if head == nil then head, body = text, "" end
    local headers = {}
    for line in (head .. "\n"):gmatch("(.-)\n") do
        if line:match("^[ \t]") and #headers > 0 then
            headers[#headers].value = headers[#headers].value .. "\n" .. line
        else
            local name, value = line:match("^([^:%s]+):[ \t]?(.*)$")
            if name then headers[#headers + 1] = { name = name, value = value } end
        end
    end
    return headers, (body:gsub("\n", "\r\n"))
end

local function basename(path) return (path:gsub("^.*/", "")) end

local function trim_left(s) return (s:gsub("^[ \t]+", "")) end

-- ------------------------------------------------------------------ connect
mt.set_timeout(10)
local conn = mt.connect("inet:" .. port .. "@127.0.0.1", 20, 0.25)
must(conn ~= nil, "connected to mailsiftd at inet:" .. port .. "@127.0.0.1")

-- nil: miltertest's defaults (libmilter's SMFI_PROT_VERSION, SMFI_CURR_PROT, SMFI_CURR_ACTS).
local err = mt.negotiate(conn, nil, nil, nil)
must(err == nil, "option negotiation", err)
must(mt.test_action(conn, SMFIF_ADDHDRS), "negotiation: mailsiftd asks to add headers (SMFIF_ADDHDRS)")
must(mt.test_action(conn, SMFIF_CHGHDRS), "negotiation: mailsiftd asks to change headers (SMFIF_CHGHDRS)")
check(not mt.test_action(conn, SMFIF_CHGBODY), "negotiation: mailsiftd does not ask to replace the body")
local leadspc = SMFIP_HDR_LEADSPC ~= nil and mt.test_option(conn, SMFIP_HDR_LEADSPC)
mt.echo("# SMFIP_HDR_LEADSPC negotiated: " .. tostring(leadspc))

err = mt.conninfo(conn, "client.example.org", "127.0.0.1")
check(err == nil and mt.getreply(conn) == SMFIR_CONTINUE, "connect: continue",
      err or reply_name(mt.getreply(conn)))
err = mt.helo(conn, "client.example.org")
check(err == nil and mt.getreply(conn) == SMFIR_CONTINUE, "helo: continue", err or reply_name(mt.getreply(conn)))

-- ------------------------------------------------------------------ one message
-- Sends MAIL, RCPT, (DATA), the headers (extra ones first), EOH, body, EOM.
-- Returns the EOM reply; the EOM requests stay available to mt.eom_check.
local function send_message(label, path, queue_id, extra)
    local headers, body = read_message(path)
    local all = {}
    for _, h in ipairs(extra or {}) do all[#all + 1] = h end
    for _, h in ipairs(headers) do all[#all + 1] = h end

    mt.macro(conn, SMFIC_MAIL, "i", queue_id)
    err = mt.mailfrom(conn, "<sender@example.org>")
    check(err == nil and mt.getreply(conn) == SMFIR_CONTINUE, label .. ": MAIL FROM: continue",
          err or reply_name(mt.getreply(conn)))
    err = mt.rcptto(conn, "<" .. queue_id .. "@example.test>")
    check(err == nil and mt.getreply(conn) == SMFIR_CONTINUE, label .. ": RCPT TO: continue",
          err or reply_name(mt.getreply(conn)))
    if not (SMFIP_NODATA ~= nil and mt.test_option(conn, SMFIP_NODATA)) then
        err = mt.data(conn)
        check(err == nil and mt.getreply(conn) == SMFIR_CONTINUE, label .. ": DATA: continue",
              err or reply_name(mt.getreply(conn)))
    end

    local bad = {}
    for _, h in ipairs(all) do
        -- With SMFIP_HDR_LEADSPC the MTA sends the value with its leading space.
        err = mt.header(conn, h.name, (leadspc and " " or "") .. h.value)
        if err ~= nil or mt.getreply(conn) ~= SMFIR_CONTINUE then
            bad[#bad + 1] = h.name .. ": " .. (err or reply_name(mt.getreply(conn)))
        end
    end
    check(#bad == 0, label .. ": " .. #all .. " headers: continue", table.concat(bad, "; "))
    err = mt.eoh(conn)
    check(err == nil and mt.getreply(conn) == SMFIR_CONTINUE, label .. ": end of headers: continue",
          err or reply_name(mt.getreply(conn)))
    err = mt.bodystring(conn, body)
    check(err == nil and mt.getreply(conn) == SMFIR_CONTINUE, label .. ": body (" .. #body .. " bytes): continue",
          err or reply_name(mt.getreply(conn)))
    err = mt.eom(conn)
    must(err == nil, label .. ": end of message answered", err)
    return mt.getreply(conn)
end

-- Checks the headers mailsiftd asked to add for a scored (not rejected) message.
local function check_tagged(label, verdict)
    check(mt.eom_check(conn, MT_HDRADD, "X-Mailsift-Status"), label .. ": X-Mailsift-Status added")
    local status = mt.getheader(conn, "X-Mailsift-Status", 0)
    local value = status and trim_left(status) or ""
    check(value:match("^" .. verdict .. ", score=[01]%.%d%d%d%d, uncalibrated%-log%-odds=%-?%d+%.%d%d") ~= nil,
          label .. ": X-Mailsift-Status says " .. verdict, "got " .. string.format("%q", tostring(status)))
    check(mt.getheader(conn, "X-Mailsift-Status", 1) == nil, label .. ": exactly one X-Mailsift-Status added")
    if leadspc then
        -- Negotiated SMFIP_HDR_LEADSPC: the MTA inserts values verbatim after the
        -- colon, so a value without its leading space arrives as "Name:value".
        check(status ~= nil and status:sub(1, 1) == " ",
              label .. ": added X-Mailsift-Status value starts with a space (SMFIP_HDR_LEADSPC negotiated)",
              "got " .. string.format("%q", tostring(status)))
    end
    check(mt.eom_check(conn, MT_HDRADD, "X-Mailsift-Signature"), label .. ": X-Mailsift-Signature added")
    local sig = mt.getheader(conn, "X-Mailsift-Signature", 0)
    check(sig ~= nil and trim_left(sig):match("^%x+$") ~= nil, label .. ": X-Mailsift-Signature is hex",
          "got " .. string.format("%q", tostring(sig)))
end

local spam_label = "spam " .. basename(spam)
local ham_label = "ham " .. basename(ham)

if scenario == "score" then
    -- Message 1: spam carrying a forged verdict.
    local label = spam_label .. " + forged X-Mailsift-Status"
    local r = send_message(label, spam, "MT0001",
                           { { name = "X-Mailsift-Status", value = "No, score=0.0000, log-odds=-99.00" } })
    check(r == SMFIR_CONTINUE or r == SMFIR_ACCEPT, label .. ": end of message: continue/accept", reply_name(r))
    check_tagged(label, "Yes")
    check(mt.eom_check(conn, MT_HDRDELETE, "X-Mailsift-Status"),
          label .. ": forged X-Mailsift-Status deleted (MT_HDRDELETE)")
    check(mt.eom_check(conn, MT_HDRCHANGE, "X-Mailsift-Status", ""),
          label .. ": forged X-Mailsift-Status changed to empty (MT_HDRCHANGE)")

    -- Message 2, same connection: ham, nothing forged.
    r = send_message(ham_label, ham, "MT0002")
    check(r == SMFIR_CONTINUE or r == SMFIR_ACCEPT, ham_label .. ": end of message: continue/accept", reply_name(r))
    check_tagged(ham_label, "No")
    check(not mt.eom_check(conn, MT_HDRDELETE), ham_label .. ": no header deleted (nothing forged this time)")
    check(not mt.eom_check(conn, MT_HDRCHANGE), ham_label .. ": no header changed")
elseif scenario == "reject" then
    local r = send_message(spam_label, spam, "MT0003")
    check(r == SMFIR_REPLYCODE, spam_label .. ": end of message: SMFIR_REPLYCODE", reply_name(r))
    check(mt.eom_check(conn, MT_SMTPREPLY, "550", "5.7.1", "Message rejected as spam"),
          spam_label .. ": SMTP reply is '550 5.7.1 Message rejected as spam'")
    check(not mt.eom_check(conn, MT_HDRADD), spam_label .. ": no header added to a rejected message")

    r = send_message(ham_label, ham, "MT0004")
    check(r == SMFIR_CONTINUE or r == SMFIR_ACCEPT, ham_label .. ": end of message: continue/accept", reply_name(r))
    check_tagged(ham_label, "No")
else
    error("unknown scenario '" .. tostring(scenario) .. "'")
end

mt.disconnect(conn)
mt.echo(string.format("# lua done: %d passed, %d failed", passed, failed))
