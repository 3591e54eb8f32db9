#!/usr/bin/env python3
"""strip_collection_headers.py SRC DST - copy a corpus folder without the header
fields that say where and when it was collected.

Every file under SRC is copied to the same relative path under DST; in messages
the Received, Delivered-To, Date and Message-ID fields (with their continuation
lines) are removed from the header, the body is untouched. A TREC `index` file
is copied as it is. Used by accuracy.sh --without-collection-headers to
show what each filter scores on the mail rather than on the collection
(trec06c-sample's spam all came through one gateway, SpamAssassin's ham and spam
from different years: see ../shared/corpus/README.md).
"""
import os
import re
import sys

DROP = {b"received", b"delivered-to", b"date", b"message-id"}
HEADER_END = re.compile(rb"\r?\n\r?\n")
FIELD_NAME = re.compile(rb"^([!-9;-~]+)[ \t]*:")


def strip(data: bytes) -> bytes:
    end = HEADER_END.search(data)
    header, body = (data[: end.start()], data[end.start():]) if end else (data, b"")
    kept, dropping = [], False
    for line in header.splitlines(keepends=True):
        if line[:1] in (b" ", b"\t"):  # continuation of the field before
            if not dropping:
                kept.append(line)
            continue
        m = FIELD_NAME.match(line)
        dropping = bool(m) and m.group(1).lower() in DROP
        if not dropping:
            kept.append(line)
    return b"".join(kept) + body


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        return 2
    src, dst = sys.argv[1], sys.argv[2]
    for root, _, files in os.walk(src, followlinks=True):
        out_dir = os.path.join(dst, os.path.relpath(root, src))
        os.makedirs(out_dir, exist_ok=True)
        for name in files:
            with open(os.path.join(root, name), "rb") as f:
                data = f.read()
            is_index = root == src and name == "index"
            with open(os.path.join(out_dir, name), "wb") as f:
                f.write(data if is_index else strip(data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
