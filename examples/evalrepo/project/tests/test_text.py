from shelf.text import slugify


def test_plain_titles():
    assert slugify("The Name of the Rose") == "the-name-of-the-rose"
    assert slugify("  1984!  ") == "1984"


def test_accented_letters_keep_their_base_letter():
    assert slugify("Crème Brûlée for Beginners") == "creme-brulee-for-beginners"
    assert slugify("Die Blechtrommel — Günter Grass") == "die-blechtrommel-gunter-grass"


def test_titles_in_other_scripts_keep_their_letters():
    assert slugify("Война и мир") == "война-и-мир"


def test_long_titles_are_cut_at_a_word():
    assert len(slugify("word " * 40)) <= 60
