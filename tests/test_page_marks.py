"""The page draws no emoji: every mark it shows is in a font it ships (``explorer/icons.py``: Material Symbols) or a
plain character, because a machine without a colour-emoji font (Chromium on a bare Linux) draws an empty box. The
sources of the page are read for the emoji code points (the browser test, tests/test_browser_every_view.py, looks at
the drawn page)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# emoji blocks: pictographs and symbols (U+1F000–1FAFF), miscellaneous symbols and dingbats (U+2600–27BF, ✅ ⛔ ⚠),
# arrows and stars drawn as emoji (U+2B00–2BFF), the emoji presentation selector and joiner
EMOJI = re.compile("[\U0001f000-\U0001faff\u2600-\u27bf\u2b00-\u2bff\ufe0f\u200d]")


def test_the_page_sources_hold_no_emoji():
    sources = [ROOT / "app.py", *sorted((ROOT / "explorer").rglob("*.py"))]
    found = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for path in sources
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if EMOJI.search(line)
    ]
    assert found == []


def test_the_page_icons_are_material_symbols():
    from streamlit.material_icon_names import ALL_MATERIAL_ICONS

    from explorer import icons

    marks = {k: v for k, v in vars(icons).items() if k.isupper()}
    assert marks and all(re.fullmatch(r":material/[a-z0-9_]+:", v) for v in marks.values()), marks
    assert {v.split("/")[1].rstrip(":") for v in marks.values()} <= set(ALL_MATERIAL_ICONS)
