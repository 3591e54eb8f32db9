// RFC 5322 date-times, as Date: and the end of Received: write them.
#include <catch2/catch.hpp>

#include "mailsift/mime/date.hpp"

using mailsift::mime::parse_date_time;
using mailsift::mime::received_time;

TEST_CASE("A date-time of RFC 5322, with its zone, in seconds since the epoch", "[mime][date]") {
    // date -u -d '2026-12-03 12:37:02' +%s
    CHECK(parse_date_time("Thu, 03 Dec 2026 12:37:02 +0000") == 1796301422);
    CHECK(parse_date_time("3 Dec 2026 12:37:02 +0000") == 1796301422);           // no day name
    CHECK(parse_date_time("Thu, 3 Dec 2026 13:37:02 +0100 (CET)") == 1796301422);  // a comment after
    CHECK(parse_date_time("Thu, 3 Dec 2026 07:37:02 EST") == 1796301422);          // obsolete zone
    CHECK(parse_date_time("Thu, 3 dec 2026 12:37:02 GMT") == 1796301422);
    CHECK(parse_date_time("Thu, 3 Dec 2026 12:37 -0000") == 1796301420);           // no seconds
    CHECK(parse_date_time("Mon, 29 Feb 2016 00:00:00 -0930") == 1456738200);       // a leap day, minutes east
    CHECK(parse_date_time("1 Jan 70 00:00:00 +0000") == 0);                        // obsolete two-digit year
}

TEST_CASE("What is not a date-time is nothing", "[mime][date]") {
    for (const char* bad : {"", "Thu", "Thu, 03 Dec 2026", "03 Foo 2026 12:37:02 +0000", "32 Dec 2026 12:37:02 +0000",
                            "03 Dec 2026 24:00:00 +0000", "03 Dec 2026 12:61:00 +0000", "03 Dec 2026 12:37:02",
                            "03 Dec 2026 12:37:02 +00", "03 Dec 2026 12:37:02 +0099", "03 Dec 2026 12:37:02 XYZ",
                            "Thu 03 Dec 2026 12:37:02 +0000"}) {
        CAPTURE(bad);
        CHECK_FALSE(parse_date_time(bad));
    }
}

TEST_CASE("A Received field's time is the date-time after its last semicolon", "[mime][date]") {
    CHECK(received_time("from mx.example.org (mx.example.org [192.0.2.1]) by mail.example.org (Postfix) with ESMTP id "
                        "4AB; Thu, 3 Dec 2026 12:37:02 +0000 (UTC)") == 1796301422);
    CHECK(received_time("from a;b by c; Thu, 3 Dec 2026 12:37:02 +0000") == 1796301422);
    CHECK_FALSE(received_time("from mx.example.org by mail.example.org with LMTP id 4AB"));
    CHECK_FALSE(received_time("from x; not a date"));
}
