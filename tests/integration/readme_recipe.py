#!/usr/bin/env python3
"""Print one recipe block of README.md, with paths replaced.

usage: readme_recipe.py README NAME [OLD=NEW...]

A recipe is the fenced code block that follows a "<!-- recipe: NAME -->" line.
Each OLD=NEW replaces every OLD in it, in order (a test puts its own paths in
place of /etc/dovecot/sieve, /usr/bin/mailsift, ...; nothing else changes).
Exit 1 when README has no such recipe.
"""
import sys


def main(argv) -> int:
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[1], encoding="utf-8") as f:
        lines = f.read().split("\n")
    marker = f"<!-- recipe: {argv[2]} -->"
    try:
        i = lines.index(marker)
    except ValueError:
        print(f"{argv[1]}: no recipe '{argv[2]}'", file=sys.stderr)
        return 1
    if i + 1 >= len(lines) or not lines[i + 1].startswith("```"):
        print(f"{argv[1]}: recipe '{argv[2]}' is not followed by a code block", file=sys.stderr)
        return 1
    body = []
    for line in lines[i + 2:]:
        if line.startswith("```"):
            break
        body.append(line)
    text = "\n".join(body) + "\n"
    for pair in argv[3:]:
        old, _, new = pair.partition("=")
        text = text.replace(old, new)
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
