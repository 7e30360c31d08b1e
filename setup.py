"""Build kafkacore's compiled core.

Every ``kafkacore/core/*.pyx``, ``kafkacore/broker/*.pyx`` (the broker's timing wheel, its
request header, Produce request and Produce response, and its Request, request queue,
request memory pool, the poller and wake-ups of its threads, and the processor's per-request
path with its connections) and ``kafkacore/broker/log/*.pyx``
(the log's validator) is compiled; a compile error fails the install (there is no pure-Python fallback, docs/design.rst,
principle 3).  ``KAFKACORE_DEBUG=1`` turns on Cython's HTML
annotation and line tracing, for debugging and coverage of the compiled code.
"""

import os
import sys
from glob import glob

from Cython.Build import cythonize
from setuptools import Extension, setup

DEBUG = os.environ.get("KAFKACORE_DEBUG", "") not in ("", "0")

# C sources that ship beside a .pyx and are linked into that one extension only.
EXTRA_SOURCES = {
    "kafkacore.core.crc": ["kafkacore/core/crc32c.c"],
}

macros = []
if DEBUG:
    macros += [("CYTHON_TRACE", "1"), ("CYTHON_TRACE_NOGIL", "1")]

compile_args = ["-O3"] if not DEBUG else ["-O0", "-g"]

# Development aid: KAFKACORE_ONLY=records,batch rebuilds just those modules in place.
ONLY = {m for m in os.environ.get("KAFKACORE_ONLY", "").split(",") if m}

extensions = []
for pyx in sorted(glob("kafkacore/core/*.pyx") + glob("kafkacore/broker/*.pyx")
                  + glob("kafkacore/broker/log/*.pyx")):
    name = pyx[:-4].replace("/", ".")
    if ONLY and name.rsplit(".", 1)[1] not in ONLY:
        continue
    extensions.append(
        Extension(
            name,
            [pyx, *EXTRA_SOURCES.get(name, [])],
            include_dirs=["kafkacore/core"],
            define_macros=macros,
            extra_compile_args=compile_args,
        )
    )

# Said before the long part.  pip shows a build's output only with -v (or when it fails), so
# the README and the Makefile say so before they install; `pip install -v .` shows this line and
# then one "Compiling ..." / "building '...' extension" line per module.
BUILDING = {"build_ext", "build", "bdist_wheel", "editable_wheel", "develop", "install"}
if BUILDING & set(sys.argv[1:]):
    print(f"kafkacore: compiling {len(extensions)} Cython modules to C and then to machine code "
          f"on {os.cpu_count() or 1} cores; a few minutes, longer on a busy machine",
          file=sys.stderr, flush=True)

directives = {
    "language_level": 3,
    "embedsignature": True,
    "binding": True,
    "boundscheck": False,
    "wraparound": False,
    "cdivision": True,
    "initializedcheck": False,
}
if DEBUG:
    directives.update({"linetrace": True, "profile": True, "boundscheck": True})

# Every core translates and compiles at once: cythonize on a thread per core, and build_ext's
# own parallel compile (what ``-j`` sets), so a fresh build takes as long as its slowest module.
CORES = os.cpu_count() or 1

setup(
    ext_modules=cythonize(
        extensions,
        compiler_directives=directives,
        annotate=DEBUG,
        force=DEBUG,
        nthreads=CORES,
    ),
    options={"build_ext": {"parallel": CORES}},
)
