"""The vocabulary a price is written in (pure Python, no torch; imports nothing of the project above it): the
polynomials in d_s (``poly``), the counted parts and the ``Method`` record (``method``), a design's settings
(``config``: ``AdapterConfig``), a base model's shape (``shape``: ``BaseModel``), the ``Family`` record and its
config-field readers (``family``), the symbolic tensors a forward is replayed on (``activations``), the largest
accepted values (``limits``) and the parsing of counts and sizes (``units``). The method packages
(``pals_core/methods/<m>/cost.py``) and family descriptions (``pals_core/families/<f>/description.py``) are written
in it; the calculator (``pals_core.budget``) stands above them.
"""
