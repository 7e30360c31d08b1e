"""Build kafkacore's compiled core.

Every ``kafkacore/core/*.pyx`` and every ``.pyx`` under ``kafkacore/broker/`` (the broker's
timing wheel in ``server_common``; its request header, Produce request and Produce response,
Request, request queue, request memory pool, the poller and wake-ups of its threads, and the
processor's per-request path with its connections in ``network``; the log's validator in
``log``) is compiled; a compile error fails the install (there is no pure-Python fallback, docs/design.rst,
principle 3).  Cython's bounds checks are on for every module but those ``UNCHECKED`` names,
below.  ``KAFKACORE_DEBUG=1`` turns on Cython's HTML annotation and line tracing (and the
checks everywhere), for debugging and coverage of the compiled code.
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

# -O2 and no debug information (Python's own CFLAGS ask for -O3 -g): at -O2 the record builder's
# path runs as many instructions as at -O3 (callgrind, 400,000 appends: 631.6 M against
# 634.8 M), and a build takes 42 % less CPU (109 s against 187 s for every module, Python 3.11
# on this machine).  CI builds the core once per interpreter, four times a run.
compile_args = ["-O2", "-g0"] if not DEBUG else ["-O0", "-g"]

# Development aid: KAFKACORE_ONLY=records,batch rebuilds just those modules in place.
ONLY = {m for m in os.environ.get("KAFKACORE_ONLY", "").split(",") if m}

# Bounds checks.  Cython checks every index into a buffer or memoryview (boundscheck), negative
# indexes (wraparound) and C division by zero (cdivision off) unless told not to.  The checks are
# on everywhere by default, so that the next indexing line written is checked; a module is
# compiled without them only when it reads nothing from outside the process (no client's bytes,
# no file's) and sits on the producer's per-record path.  Each says why:
UNCHECKED = {
    "kafkacore.core.appender": "the per-record append: the user's own objects, lengths measured here",
    "kafkacore.core.batch": "ProducerBatch and its futures: offsets and counts the producer made",
    "kafkacore.core.buffer_pool": "BufferPool: sizes from the producer's own configuration",
    "kafkacore.core.bytestream": "the producer's output buffer: it checks each write's room itself",
    "kafkacore.core.memory_records_builder": "the V2 writer: it writes, it reads nothing",
    "kafkacore.core.murmur2": "hashes a key the user gave, over its own length",
    "kafkacore.core.partition_map": "CopyOnWriteMap: no indexing into bytes",
    "kafkacore.core.record_sizes": "sizes of records the producer is about to write",
    "kafkacore.broker.network.response_encoder": "encodes the broker's own answers",
    "kafkacore.broker.network.selector": "epoll and eventfd calls: no indexing into bytes",
    "kafkacore.broker.server_common.timer": "the timing wheel: no indexing into bytes",
    "kafkacore.broker.network.request_queue": "a deque of requests: no indexing into bytes",
}
CHECKED_DIRECTIVES = {"boundscheck": True, "wraparound": True, "cdivision": False,
                      "initializedcheck": True}
UNCHECKED_DIRECTIVES = {"boundscheck": False, "wraparound": False, "cdivision": True,
                        "initializedcheck": False}

extensions = []
for pyx in sorted(glob("kafkacore/core/*.pyx") + glob("kafkacore/broker/**/*.pyx", recursive=True)):
    name = pyx[:-4].replace("/", ".")
    if ONLY and name.rsplit(".", 1)[1] not in ONLY:
        continue
    extension = Extension(
        name,
        [pyx, *EXTRA_SOURCES.get(name, [])],
        include_dirs=["kafkacore/core"],
        define_macros=macros,
        extra_compile_args=compile_args,
    )
    # cythonize reads an Extension's own cython_directives over the global ones.
    extension.cython_directives = dict(
        UNCHECKED_DIRECTIVES if name in UNCHECKED and not DEBUG else CHECKED_DIRECTIVES)
    extensions.append(extension)

# Said before each long part.  pip shows a build's output only with -v (or when it fails), so
# the README and the Makefile say so before they install; `pip install -v .` shows these lines,
# then one "Compiling ..." (to C) and one "building '...' extension" (to machine code) per module.
# Cython translates when setup.py is first run (pip's metadata step), gcc compiles in the build.
untranslated = [e.sources[0] for e in extensions
                if not os.path.exists(e.sources[0][:-4] + ".c")
                or os.path.getmtime(e.sources[0]) > os.path.getmtime(e.sources[0][:-4] + ".c")]
if untranslated or DEBUG:
    print(f"kafkacore: translating {len(untranslated) if not DEBUG else len(extensions)} Cython "
          f"modules to C", file=sys.stderr, flush=True)
if {"build_ext", "build", "bdist_wheel", "editable_wheel", "develop", "install"} & set(sys.argv[1:]):
    print(f"kafkacore: compiling {len(extensions)} C extensions on {os.cpu_count() or 1} cores: "
          f"a few minutes, longer on a busy machine", file=sys.stderr, flush=True)

directives = {
    "language_level": 3,
    "embedsignature": True,
    "binding": True,
}
if DEBUG:
    directives.update({"linetrace": True, "profile": True})

# Every core translates and compiles at once: cythonize on a thread per core, and build_ext's
# own parallel compile (what ``-j`` sets), so a fresh build takes as long as its slowest module.
CORES = os.cpu_count() or 1


def _cythonize(group: list, checks: dict) -> list:
    return cythonize(group, compiler_directives={**directives, **checks}, annotate=DEBUG,
                     force=DEBUG, nthreads=CORES)


# In a debugging build every module is checked.
unchecked = [e for e in extensions if e.name in UNCHECKED and not DEBUG]
checked = [e for e in extensions if e not in unchecked]
setup(
    ext_modules=_cythonize(checked, CHECKED_DIRECTIVES) + _cythonize(unchecked, UNCHECKED_DIRECTIVES),
    options={"build_ext": {"parallel": CORES}},
)
