from shelf.tags import add_tag, merge, normalize


def test_normalize():
    assert normalize("  Science  Fiction ") == "science-fiction"


def test_add_tag_keeps_each_tag_once():
    assert add_tag("Poetry", ["poetry", "french"]) == ["poetry", "french"]


def test_records_without_tags_do_not_share_a_list():
    first = add_tag("poetry")
    second = add_tag("history")
    assert first == ["poetry"]
    assert second == ["history"]


def test_merge_keeps_first_seen_order():
    assert merge(["b", "a"], ["a", "c"]) == ["b", "a", "c"]
