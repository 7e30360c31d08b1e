"""Sphinx configuration for kafkacore's docs.

The pictures are drawn by the scripts in ``docs/pictures/`` (one per chapter, each with a
``draw(out_dir)`` function; files starting with ``_`` are shared helpers) every time the docs
build, so they never drift from the code.
"""

import importlib.util
import os
import pathlib
import sys

import kafkacore

HERE = pathlib.Path(__file__).parent
ROOT = HERE.parent
# Our own small Sphinx extensions (docs/_ext): the settings table directive, the check that the
# files, settings and modules a chapter names exist.
sys.path.insert(0, str(HERE / "_ext"))

project = "kafkacore"
author = "the kafkacore engineers"
copyright = "2026, the kafkacore engineers"
release = kafkacore.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.intersphinx",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
    "kafkacore_settings",
    "kafkacore_bench",
    "kafkacore_names",
]

nitpicky = True
nitpick_ignore_regex = [
    # Cython's embedded signatures name C types that have no Python page.
    (r"py:class", r"(int|bytes|object|Py_ssize_t|size_t|double|float|bint|long|uint\d+_t|int\d+_t)"),
    (r"py:class", r"(optional|callable|bytes-like|buffer|sequence|iterable|iterator)"),
]
intersphinx_mapping = {}
autodoc_member_order = "bysource"
autodoc_typehints = "none"
templates_path = []
exclude_patterns = ["_build"]
# furo: a wide content column, so that code (100-character lines) does not scroll sideways.
html_theme = "furo"
html_title = f"kafkacore {release}"
html_static_path = ["_static"]
html_css_files = ["wide.css"]
os.environ.setdefault("MPLBACKEND", "Agg")


def _draw_pictures(app):
    out = HERE / "_static" / "pictures"
    out.mkdir(parents=True, exist_ok=True)
    for script in sorted((HERE / "pictures").glob("[!_]*.py")):
        spec = importlib.util.spec_from_file_location(f"pictures.{script.stem}", script)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        module.draw(out)


def setup(app):
    app.connect("builder-inited", _draw_pictures)
