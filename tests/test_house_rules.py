"""House rules the code keeps, checked by reading it (``ast``; no broker, a second or two).

Error codes and API keys are written by name, ``Errors.NOT_LEADER_OR_FOLLOWER`` and
``ApiKey.CREATE_TOPICS``, never as numbers, and defined once: ``Errors`` in kafkacore/errors.py,
``ApiKey`` in kafkacore/protocol/api_keys.py.  A number in their place says nothing to a reader and
drifts silently when it is mistyped; a module's own ``NONE = 0`` is a second table to keep right.

The library guards nothing with ``assert``, which ``python -O`` removes.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkacore.errors import Errors

# What the source says does not change with the interpreter that reads it: run once (py312).
pytestmark = pytest.mark.pure_python

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "kafkacore"
#: The two tables themselves.
TABLES = {PACKAGE / "errors.py", PACKAGE / "protocol" / "api_keys.py"}
#: The package, and what newcomers read next to it.
SOURCES = sorted(p for folder in ("kafkacore", "tutorials", "examples", "benchmarks")
                 for p in (ROOT / folder).rglob("*.py") if p not in TABLES)

ERROR_NAMES = frozenset(Errors.__members__)
#: Names that hold an error code: a comparison or assignment of one with a number is flagged.
ERROR_CODE_NAMES = frozenset({"error_code", "error"})


def _is_number(node: ast.AST) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    return (isinstance(node, ast.Constant) and isinstance(node.value, int)
            and not isinstance(node.value, bool))


def _is_api_key(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
            and node.value.id == "ApiKey")


def _names_error_code(node: ast.AST) -> bool:
    """``error_code``, ``x.error_code``, ``body["error_code"]`` and the like."""
    if isinstance(node, ast.Name):
        return node.id in ERROR_CODE_NAMES or node.id.endswith("error_code")
    if isinstance(node, ast.Attribute):
        return node.attr in ERROR_CODE_NAMES or node.attr.endswith("error_code")
    if isinstance(node, ast.Subscript):
        key = node.slice
        return (isinstance(key, ast.Constant) and isinstance(key.value, str)
                and key.value.endswith("error_code"))
    return False


def _parameters(trees: dict[Path, ast.Module]) -> tuple[dict[str, set[int]], dict[str, set[int]]]:
    """For every function of the package with an ``api_key`` (or ``error_code``) parameter, the
    positions of that parameter in a call (``self`` not counted; several when functions of the
    same name have it at different places, like the two clients' ``send``)."""
    api_key: dict[str, set[int]] = {}
    error_code: dict[str, set[int]] = {}
    for tree in trees.values():
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef):
                names = [a.arg for a in node.args.posonlyargs + node.args.args]
                if names and names[0] in ("self", "cls"):
                    names = names[1:]
                if "api_key" in names:
                    api_key.setdefault(node.name, set()).add(names.index("api_key"))
                if "error_code" in names:
                    error_code.setdefault(node.name, set()).add(names.index("error_code"))
    return api_key, error_code


def _called_name(call: ast.Call) -> str | None:
    if isinstance(call.func, ast.Name):
        return call.func.id
    if isinstance(call.func, ast.Attribute):
        return call.func.attr
    return None


def _arguments(call: ast.Call, positions: set[int] | None, name: str) -> list[ast.AST]:
    """What ``call`` passes as the parameter ``name`` (at one of ``positions``)."""
    if positions is None:
        return []
    for kw in call.keywords:
        if kw.arg == name:
            return [kw.value]
    return [call.args[i] for i in positions if i < len(call.args)
            and not any(isinstance(a, ast.Starred) for a in call.args[:i + 1])]


def violations(trees: dict[Path, ast.Module]) -> Iterator[str]:
    api_key_at, error_code_at = _parameters(trees)
    for path, tree in trees.items():
        where = path.relative_to(ROOT)
        for node in ast.walk(tree):
            line = f"{where}:{getattr(node, 'lineno', '?')}"
            if isinstance(node, ast.Assign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                at_top = node in tree.body
                pairs = [(t, node.value) for t in targets]
                for target, value in pairs:
                    # ``done, error = True, 6`` sets each name from its own element.
                    if (isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple)
                            and len(target.elts) == len(value.elts)):
                        pairs.extend(zip(target.elts, value.elts, strict=True))
                for target, value in pairs:
                    # At the top of a module any value is a second name (``X = XError.errno``
                    # too); inside a class or function, only a number is (enums keep theirs).
                    if (isinstance(target, ast.Name) and target.id in ERROR_NAMES
                            and value is not None and (at_top or _is_number(value))):
                        yield f"{line}: {target.id} defined again (use Errors.{target.id})"
                    elif (_names_error_code(target) and value is not None
                          and _is_number(value)):
                        yield f"{line}: an error code set to a number"
            elif isinstance(node, ast.Compare):
                sides = [node.left, *node.comparators]
                if any(_names_error_code(s) for s in sides) and any(_is_number(s) for s in sides):
                    yield f"{line}: an error code compared with a number"
                if (any(isinstance(s, ast.Name | ast.Attribute) and
                        (getattr(s, "id", None) or getattr(s, "attr", None)) == "api_key"
                        for s in sides) and any(_is_number(s) for s in sides)):
                    yield f"{line}: an API key compared with a number"
            elif isinstance(node, ast.Dict):
                for key, value in zip(node.keys, node.values, strict=True):
                    if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                        continue
                    if key.value.endswith("error_code") and _is_number(value):
                        yield f"{line}: {key.value!r} given a number"
                    if key.value == "api_key" and _is_number(value):
                        yield f"{line}: 'api_key' given a number"
            elif isinstance(node, ast.Call):
                name = _called_name(node)
                for kw in node.keywords:
                    if kw.arg is not None and kw.arg.endswith("error_code") and _is_number(kw.value):
                        yield f"{line}: {kw.arg}= given a number"
                keys = _arguments(node, api_key_at.get(name), "api_key")
                # Of the places a same-named function takes its key, one named ApiKey is enough.
                if any(_is_number(a) for a in keys) and not any(_is_api_key(a) for a in keys):
                    yield f"{line}: {name}() given an API key as a number"
                if any(_is_number(arg) for arg in _arguments(node, error_code_at.get(name),
                                                             "error_code")):
                    yield f"{line}: {name}() given an error code as a number"
                if name == "for_code" and node.args and _is_number(node.args[0]):
                    yield f"{line}: for_code() given a number"
            elif isinstance(node, ast.Subscript):
                if (isinstance(node.value, ast.Attribute)
                        and node.value.attr in ("REQUESTS", "RESPONSES")
                        and _is_number(node.slice)):
                    yield f"{line}: codec.{node.value.attr}[] given an API key as a number"


def parse(paths: list[Path]) -> dict[Path, ast.Module]:
    return {p: ast.parse(p.read_text(), str(p)) for p in paths}


def test_error_codes_and_api_keys_are_named() -> None:
    found = list(violations(parse(SOURCES)))
    assert not found, "numbers where names belong:\n" + "\n".join(found)


@pytest.mark.parametrize("source, expected", [
    ("NONE = 0", "NONE defined again"),
    ("UNKNOWN_SERVER_ERROR = -1", "UNKNOWN_SERVER_ERROR defined again"),
    ("INVALID_REQUEST = errors.InvalidRequestError.errno", "INVALID_REQUEST defined again"),
    ("ok = body['error_code'] == 6", "compared with a number"),
    ("if error != 0: pass", "compared with a number"),
    ("x = {'error_code': 35}", "'error_code' given a number"),
    ("part['error_code'] = 3", "set to a number"),
    ("done, error = True, 6", "set to a number"),
    ("respond(error_code=7)", "error_code= given a number"),
    ("def forward(self, api_key, version, body): pass\nforward(19, 7, {})",
     "forward() given an API key as a number"),
    ("def send_error_response(self, request, error_code): pass\n"
     "self.send_error_response(request, 35)", "given an error code as a number"),
    ("def send(self, node, api_key, body): pass\nclient.send(node, 3, {})",
     "send() given an API key as a number"),
    ("m = codec.REQUESTS[3]", "REQUESTS[] given an API key"),
    ("raise errors.for_code(6)()", "for_code() given a number"),
])
def test_the_check_finds_numbers(tmp_path: Path, source: str, expected: str) -> None:
    path = PACKAGE / "example.py"  # never written: parsed from the string
    found = list(violations({path: ast.parse(source)}))
    assert len(found) == 1 and expected in found[0], found


@pytest.mark.parametrize("source", [
    "from kafkacore.errors import Errors\nok = body['error_code'] == Errors.NONE",
    "forward(ApiKey.CREATE_TOPICS, 7, {})",
    "def send(self, node, api_key, body): pass\n"
    "def send(self, api_key, version, body): pass\n"
    "channel.send(ApiKey.ALTER_PARTITION, 3, {})",
    "x = {'error_code': Errors.NOT_LEADER_OR_FOLLOWER, 'partition_index': 0}",
    "MAX_EPOCH = 32766",
    "if version == 3: pass",
])
def test_the_check_passes_names(source: str) -> None:
    path = PACKAGE / "example.py"
    assert list(violations({path: ast.parse(source)})) == []


def test_tests_import_their_helpers_as_tox_runs_them() -> None:
    # tests/ is no package: pytest puts tests/ (and a test's own folder) on sys.path, so a
    # helper is ``waits`` or ``support.topics``.  ``tests.waits`` imports only where the
    # repository root happens to be on the path (a developer's tree), and fails under tox.
    found = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = ([node.module or ""] if isinstance(node, ast.ImportFrom)
                     else [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            if any(n == "tests" or n.startswith("tests.") for n in names):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not found, f"imports of the tests folder as a package: {found}"


#: Modules whose asserts go with the split of the API handlers they hold (to be emptied).
ASSERTS_NOT_YET_CHECKS = {
    PACKAGE / "broker" / "server" / "kafka_apis.py",
    PACKAGE / "broker" / "group" / "consumer_group_apis.py",
    PACKAGE / "broker" / "security" / "authorizer" / "acl_apis.py",
}


def test_the_library_checks_without_assert() -> None:
    # ``python -O`` drops every assert: a guard written as one is gone where it is run that
    # way.  A broken invariant raises IllegalStateError; a type narrowed for a checker is an
    # ``if ... is None: raise`` or an isinstance branch.
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path in ASSERTS_NOT_YET_CHECKS:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Assert):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    for path in sorted(PACKAGE.rglob("*.pyx")):  # Cython: not Python's grammar, read by line
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if line.lstrip().startswith("assert "):
                found.append(f"{path.relative_to(ROOT)}:{number}")
    assert not found, f"asserts in the library: {found}"
