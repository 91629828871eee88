"""The page's icons, each a Material Symbol: the icon font Streamlit serves with the page, so every browser draws them.
Never an emoji — it needs a colour-emoji font the reader's machine may not have (Chromium without one draws an empty
box); ``tests/test_page_marks.py`` keeps emoji out of the page."""

PAGE = ":material/calculate:"  # the browser tab
RECOMMENDED = ":material/check_circle:"  # the answer: the recommended design
NOTHING_FITS = ":material/block:"  # the answer: no design fits the budget
NEXT_RUN = ":material/target:"  # the run worth measuring next
STUDY = ":material/science:"  # an empty study storage: start a study
WARNING = ":material/warning:"  # over the budget, untrained tasks, no GLUE folder
