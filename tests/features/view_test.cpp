// The scorer's view of a message: the same wherever the message is met.
#include "mailsift/features/view.hpp"

#include <catch2/catch.hpp>
#include <algorithm>
#include <string>
#include <vector>

#include "mailsift/features/feature_bag.hpp"
#include "mailsift/features/slots.hpp"

using namespace mailsift::features;

namespace {

// As a client sent it (LF line ends, as a file holds it).
const std::string sent =
    "From: Lottery <win@prize.example>\n"
    "Subject: You WON a FREE\n"
    "\tprize!!!\n"
    "Message-ID: <1@prize.example>\n"
    "\n"
    "CONGRATULATIONS! You have WON $250,000.\n"
    "Claim your FREE prize now.\n";

// The same message as the milter rebuilds it: the MTA's own Received first,
// "Name: value" with CRLF line ends, the folding as CRLF.
const std::string at_milter =
    "Received: from client.example (client.example [192.0.2.7])\r\n"
    "\tby mx.example.org (Postfix) with ESMTP id 4AB12\r\n"
    "\tfor <you@example.org>; Mon, 2 Sep 2002 10:00:00 +0000\r\n"
    "From: Lottery <win@prize.example>\r\n"
    "Subject: You WON a FREE\r\n"
    "\tprize!!!\r\n"
    "Message-ID:<1@prize.example>\r\n"
    "\r\n"
    "CONGRATULATIONS! You have WON $250,000.\r\n"
    "Claim your FREE prize now.\r\n";

// And as a Junk folder holds it after delivery: an mbox From line, the
// delivery path's fields in front, mailsift's own at the end of the header.
const std::string in_junk =
    "From win@prize.example Mon Sep  2 10:00:05 2002\n"
    "Return-Path: <win@prize.example>\n"
    "Delivered-To: you@example.org\n"
    "X-Original-To: you@example.org\n"
    "Received: from mx.example.org by imap.example.org; Mon, 2 Sep 2002 10:00:05 +0000\n"
    "Received: from client.example (client.example [192.0.2.7])\n"
    "\tby mx.example.org (Postfix) with ESMTP id 4AB12\n"
    "From: Lottery <win@prize.example>\n"
    "Subject: You WON a FREE\n"
    "\tprize!!!\n"
    "Message-ID: <1@prize.example>\n"
    "X-Mailsift-Status: Yes, score=0.9990, log-odds=3.10\n"
    "X-Mailsift-Signature: 0123456789abcdef0123456789abcdef\n"
    "\n"
    "CONGRATULATIONS! You have WON $250,000.\n"
    "Claim your FREE prize now.\n";

}  // namespace

TEST_CASE("the view is the same at the milter, in a mailbox and in a file", "[view]") {
    const std::string view = message_view(sent, 3000);
    CHECK(view ==
          "From:Lottery <win@prize.example>\n"
          "Subject:You WON a FREE\tprize!!!\n"
          "Message-ID:<1@prize.example>\n"
          "\n"
          "CONGRATULATIONS! You have WON $250,000.\n"
          "Claim your FREE prize now.\n");
    CHECK(message_view(at_milter, 3000) == view);
    CHECK(message_view(in_junk, 3000) == view);
    // Our own verdict never reaches the view a Junk folder is learned from.
    CHECK(message_view(in_junk, 3000).find("Mailsift") == std::string::npos);
    // The view of a whole view is itself.
    CHECK(message_view(view, 3000) == view);
    // Cut at max_bytes.
    CHECK(message_view(in_junk, 40) == view.substr(0, 40));
    CHECK(message_view(in_junk, 0).empty());
}

TEST_CASE("the view keeps what is not a header field as body", "[view]") {
    // No header at all: everything is body, nothing added.
    CHECK(message_view("abcdabcd", 100) == "abcdabcd");
    // An empty header block.
    CHECK(message_view("\nbody\n", 100) == "\nbody\n");
    // A header block that ends without a blank line, in broken mail.
    CHECK(message_view("Subject: x\nnot a field line\nmore\n", 100) == "Subject:x\n\nnot a field line\nmore\n");
    // Which fields are left out, in any case of their names.
    CHECK(left_out_of_view("received"));
    CHECK(left_out_of_view("RETURN-PATH"));
    CHECK(left_out_of_view("X-Mailsift-Reasons"));
    CHECK_FALSE(left_out_of_view("From"));
    CHECK_FALSE(left_out_of_view("X-Mailer"));
}

TEST_CASE("the slots of a message are the same wherever it is met, envelope facts left out", "[view]") {
    SlotOptions o;
    FeatureBag bag;
    bag.add("w:prize");
    std::vector<std::uint32_t> a, b, c;
    message_slots(message_view(sent, o.ngram_bytes), bag, o, a);
    message_slots(message_view(in_junk, o.ngram_bytes), bag, o, b);
    FeatureBag at_milter_bag = bag;
    at_milter_bag.add("env:helo:", "client.example");  // known at the milter only
    message_slots(message_view(at_milter, o.ngram_bytes), at_milter_bag, o, c);
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    std::sort(c.begin(), c.end());
    CHECK(a == b);
    CHECK(a == c);
    CHECK(milter_only("env:helo:client.example"));
    CHECK_FALSE(milter_only("hdr:from_domain:prize.example"));
}
