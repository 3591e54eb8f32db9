// mime::reduce_html: visible text, links, entities and broken markup.
#include <mailsift/mime/message.hpp>

#include <catch2/catch.hpp>

#include <string>

using namespace mailsift::mime;

namespace {

std::string text_of(std::string_view html) { return reduce_html(html).text; }

}  // namespace

TEST_CASE("Inline and block tags become nothing or a break", "[html]") {
    SECTION("inline tags inside a word keep the word whole") {
        CHECK(text_of("F<b>RE</b>E <font color=red>m<span>on</span>ey</font>") == "FREE money");
    }
    SECTION("block tags separate lines") {
        CHECK(text_of("<p>one</p><p>two</p>three<br>four<div>five</div>") == "one\ntwo\nthree\nfour\nfive");
    }
    SECTION("table cells are separated by a space") {
        CHECK(text_of("<table><tr><td>a</td><td>b</td></tr><tr><td>c</td></tr></table>") == "a b\nc");
    }
    SECTION("whitespace runs collapse and the ends are trimmed") {
        CHECK(text_of("  <p>  lots \n\n of \t space  </p>  ") == "lots of space");
    }
}

TEST_CASE("Scripts, styles and comments are dropped but the title is kept", "[html]") {
    const std::string html =
        "<html><head><title>Great offer</title><style>p { color: red }</style>"
        "<script type=\"text/javascript\">var a = '<b>hidden</b>';</script></head>"
        "<body><!-- invisible <b>comment</b> -->Visible<SCRIPT>alert(1)</SCRIPT > text</body></html>";
    CHECK(text_of(html) == "Great offer\nVisible text");
}

TEST_CASE("Entities are decoded to UTF-8", "[html][entities]") {
    SECTION("common named entities") {
        CHECK(text_of("&lt;b&gt; &amp; &quot;q&quot; &apos;a&apos;") == "<b> & \"q\" 'a'");
        CHECK(text_of("&copy; &reg; &euro; &pound;") == "\xC2\xA9 \xC2\xAE \xE2\x82\xAC \xC2\xA3");
    }
    SECTION("nbsp separates words like a space") {
        CHECK(text_of("Buy&nbsp;&nbsp;now&#160;&#xa0;today") == "Buy now today");
    }
    SECTION("decimal and hex references, with the windows-1252 remap browsers apply") {
        CHECK(text_of("&#70;&#x52;&#X45;&#69; &#8364; &#150; &#153;") ==
              "FREE \xE2\x82\xAC \xE2\x80\x93 \xE2\x84\xA2");
    }
    SECTION("invisible soft hyphens do not split words") {
        CHECK(text_of("V&shy;I&shy;A&shy;GRA") == "VIAGRA");
    }
    SECTION("unknown or malformed references stay literal") {
        CHECK(text_of("&bogus; &#; &#xZZ; AT&T") == "&bogus; &#; &#xZZ; AT&T");
        CHECK(text_of("&amp;lt;") == "&lt;");
    }
    SECTION("out-of-range code points become U+FFFD") {
        CHECK(text_of("&#0;&#x110000;&#xD800;") == "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
    }
}

TEST_CASE("Links are collected with their anchor text", "[html][links]") {
    const HtmlText r = reduce_html(
        "<a href=\"http://a.example/?x=1&amp;y=2\">Click <b>here</b></a> "
        "<A HREF='http://b.example/'>second\nline</A> "
        "<a href=http://c.example/path>unquoted</a>"
        "<img src=\"http://img.example/p.gif\" alt=\"x\">"
        "<map><area shape=rect href=\"http://area.example/\"></map>"
        "<form method=post action=\"http://form.example/submit\"><input></form>"
        "<a name=\"anchor-without-href\">no link</a>");
    REQUIRE(r.links.size() == 6);
    CHECK(r.links[0].target == "http://a.example/?x=1&y=2");
    CHECK(r.links[0].text == "Click here");
    CHECK(r.links[1].target == "http://b.example/");
    CHECK(r.links[1].text == "second line");
    CHECK(r.links[2].target == "http://c.example/path");
    CHECK(r.links[2].text == "unquoted");
    CHECK(r.links[3].target == "http://img.example/p.gif");
    CHECK(r.links[3].text.empty());
    CHECK(r.links[4].target == "http://area.example/");
    CHECK(r.links[5].target == "http://form.example/submit");
    CHECK(r.text == "Click here second line unquoted\nno link");
}

TEST_CASE("Broken HTML is read the forgiving way", "[html][broken]") {
    SECTION("a '<' that cannot start a tag is text") {
        CHECK(text_of("1 < 2 and 3<4 <= 5") == "1 < 2 and 3<4 <= 5");
    }
    SECTION("a tag that never ends is text") {
        CHECK(text_of("price is <b") == "price is <b");
    }
    SECTION("unclosed tags do not hide the rest") {
        CHECK(text_of("<b>bold <i>italic <p>para") == "bold italic\npara");
    }
    SECTION("an unmatched quote in an attribute ends at the next '>'") {
        const HtmlText r = reduce_html("<a href=\"http://x.example/>click</a> after");
        REQUIRE(r.links.size() == 1);
        CHECK(r.links[0].target == "http://x.example/");
        CHECK(r.links[0].text == "click");
        CHECK(r.text == "click after");
    }
    SECTION("a '>' inside a quoted attribute does not end the tag") {
        CHECK(text_of("<img alt=\"a > b\" src=x>seen") == "seen");
    }
    SECTION("an unclosed anchor takes the text to the end") {
        const HtmlText r = reduce_html("<a href=http://open.example/>open anchor");
        REQUIRE(r.links.size() == 1);
        CHECK(r.links[0].text == "open anchor");
    }
    SECTION("an unterminated comment or script drops the rest") {
        CHECK(text_of("kept <!-- never closed <p>gone") == "kept");
        CHECK(text_of("kept <script>gone") == "kept");
    }
    SECTION("declarations and CDATA vanish") {
        CHECK(text_of("<!DOCTYPE html><?xml version=\"1.0\"?><![CDATA[x]]>ok") == "ok");
    }
}

TEST_CASE("Pathological markup is processed to a bounded result", "[html][limits]") {
    // Speed belongs in benchmarks; here each input must finish with bounded output.
    const auto bounded = [](const std::string& s) { return reduce_html(s).text.size() <= s.size(); };
    std::string quotes;
    for (int i = 0; i < 200000; ++i) quotes += "<a href=\"x ";
    std::string tags;
    for (int i = 0; i < 200000; ++i) tags += "<b c=";
    std::string comments;
    for (int i = 0; i < 200000; ++i) comments += "<!-";
    std::string scripts;
    for (int i = 0; i < 200000; ++i) scripts += "<script></scrip";
    CHECK(bounded(quotes));
    CHECK(bounded(tags));
    CHECK(bounded(comments));
    CHECK(bounded(scripts));
    CHECK(reduce_html(tags).text.size() > 0);
}
