"""PALs Explorer: `streamlit run app.py` (or `make app`). The page lives in explorer/page.py."""

from explorer.page import main

main()
