"""Case ids from a script's `--list`, exactly as the script takes them back (runtime/intake/listing.py)."""
from __future__ import annotations

import pytest

from runtime.intake.listing import case_ids, listed


@pytest.mark.parametrize(("listing", "ids"), [
    # `  id. Name` then an indented description (the punctuation is the listing's, not the id's)
    ("  grp::test_one. First Kernel (needs NPU)\n     what it does\n\n  grp::test_two. Second\n",
     ["grp::test_one", "grp::test_two"]),
    # `  id: Name` on one line each
    ("Available:\n  add::test_add: Addition\n  mul::test_mul: Multiplication\n", ["add::test_add", "mul::test_mul"]),
    # `  ID: id` blocks, also behind logging's default prefix, a trailing period dropped
    ("  ID: alpha\n     name: a\nINFO:__main__:  ID: beta.\n", ["alpha", "beta"]),
    # bullets and numbering in front, a dash description after, parametrized ids kept whole
    ("  - grp::bullet\n  2. grp::numbered \u2014 two\n  3) grp::param[x-y]: third\n  grp::v2.1\n",
     ["grp::bullet", "grp::numbered", "grp::param[x-y]", "grp::v2.1"]),
    # a bare id line must not swallow the next line
    ("  grp::one\n  grp::two\n", ["grp::one", "grp::two"]),
    # a numbered description names no id we can give back
    ("  1. the only case\n", []),
])
def test_listing_formats_give_the_ids_the_script_accepts(listing: str, ids: list[str]) -> None:
    assert case_ids(listing) == ids


def test_an_id_followed_by_the_listings_punctuation_is_listed_but_a_longer_word_is_not() -> None:
    assert listed("p0_core", "  p0_core. the core case")
    assert listed("p0_core", "  p0_core: the core case")
    assert not listed("p0", "  p0.core")
    assert not listed("p0", "  p0::case")
