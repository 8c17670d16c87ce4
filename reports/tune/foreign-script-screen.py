"""The questions `foreign_script` can touch: requests more than half of whose letters lie
past Latin Extended (Chinese, Thai, Korean, Arabic, Cyrillic), read from the requests alone.

Usage: python foreign-script-screen.py tune|validate IDS_OUT DATA_DIR
Prints the counts per category (and, for tune only, each request); writes the ids to IDS_OUT.
"""

import collections
import sys
from pathlib import Path

from callgate.eval.bfcl_data import CATEGORIES, load_questions

LATIN_END = 0x24F  # the last code point of Latin Extended-B


def foreign(text: str) -> bool:
    letters = [ch for ch in text if ch.isalpha()]
    return bool(letters) and sum(ord(ch) > LATIN_END for ch in letters) > len(letters) / 2


def main() -> None:
    split, ids_out, data = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
    counts: collections.Counter[str] = collections.Counter()
    ids = []
    for category in CATEGORIES:
        for question in load_questions(category, data, split=split):
            said = [m["content"] for m in question.messages if m["role"] == "user"]
            if said and foreign(said[-1]):
                counts[category] += 1
                ids.append(question.id)
                if split == "tune":
                    print(question.id, repr(said[-1][:80]))
    print(dict(counts), len(ids))
    ids_out.write_text("\n".join(ids) + "\n")


if __name__ == "__main__":
    main()
