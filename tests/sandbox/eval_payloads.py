"""Payload families for library code that evaluates strings or resolves names on a cell's behalf (hole 1).

Each escape payload, if it ever ran its string as code, would print or raise the canary (the fake API key from
the environment, or the secret file's text); each must end in a refusal or an ordinary error. Controls are
honest uses of the same machinery that must keep working. Run in-process by test_string_eval.py and through a
real kernel by test_string_eval_kernel.py.
"""
# ruff: noqa: E501 - a table of code snippets reads best one payload per line

from __future__ import annotations

from tests.sandbox.payloads import BLOCKED, OK, REFUSED, Payload

__all__ = ["EVAL_PAYLOADS", "LEAK_ENV", "LEAK_FILE"]

# Unrestricted code that reaches the real `os` through a subclass walk and reads the canary key / file.
_WALK = "[c for c in ().__class__.__base__.__subclasses__() if c.__name__ == '_wrap_close'][0].__init__.__globals__"
LEAK_ENV = f"{_WALK}['environ']['OPENAI_API_KEY']"
LEAK_FILE = f"{_WALK}['sys'].modules['io'].open('{{secret_file}}').read()"

_P = Payload
_SD = "import functools\n@functools.singledispatch\ndef f(x):\n    return 'base'\n"

# fmt: off
EVAL_PAYLOADS: list[Payload] = [
    # -- functools.singledispatch(...).register → typing.get_type_hints → eval in the cell's globals ---------
    _P("sdispatch", "decorator_env", _SD + f'@f.register\ndef g(x: "{LEAK_ENV}"):\n    return 1', REFUSED),
    _P("sdispatch", "decorator_file", _SD + f'@f.register\ndef g(x: "{LEAK_FILE}"):\n    return 1', REFUSED),
    _P("sdispatch", "call_form", _SD + f'def g(x: "{LEAK_ENV}"):\n    return 1\nf.register(g)', REFUSED),
    _P("sdispatch", "list_generic", _SD + f'@f.register\ndef g(x: list["{LEAK_ENV}"]):\n    return 1', REFUSED),
    _P("sdispatch", "optional_str", _SD + f'import typing\n@f.register\ndef g(x: typing.Optional["{LEAK_ENV}"]):\n    return 1', REFUSED),
    _P("sdispatch", "union_str", _SD + f'import typing\n@f.register\ndef g(x: typing.Union[int, "{LEAK_ENV}"]):\n    return 1', REFUSED),
    _P("sdispatch", "return_only", _SD + f'@f.register\ndef g(x) -> "{LEAK_ENV}":\n    return 1', REFUSED),
    _P("sdispatch", "callable_object", _SD + f'class C:\n    x: "{LEAK_ENV}"\n    def __call__(self, x):\n        return 1\nf.register(C())', REFUSED),
    _P("sdispatch", "register_via_getattr", _SD + f'def g(x: "{LEAK_ENV}"):\n    return 1\ngetattr(f, "register")(g)', REFUSED),
    _P("sdispatch", "register_via_methodcaller", _SD + f'import operator\ndef g(x: "{LEAK_ENV}"):\n    return 1\noperator.methodcaller("register", g)(f)', REFUSED),
    _P("sdispatch", "register_via_partial", _SD + f'def g(x: "{LEAK_ENV}"):\n    return 1\nfunctools.partial(f.register)(g)', REFUSED),
    _P("sdispatch", "register_via_map", _SD + f'def g(x: "{LEAK_ENV}"):\n    return 1\nlist(map(f.register, [g]))', REFUSED),
    _P("sdispatch", "method_decorator", f'import functools\nclass A:\n    @functools.singledispatchmethod\n    def m(self, x):\n        return 0\n    @m.register\n    def _(self, x: "{LEAK_ENV}"):\n        return 1', REFUSED),
    _P("sdispatch", "method_dispatcher", f'import functools\ndef base(self, x):\n    return 0\nm = functools.singledispatchmethod(base)\ndef g(self, x: "{LEAK_ENV}"):\n    return 1\nm.dispatcher.register(g)', REFUSED),
    _P("sdispatch", "method_bound_register", f'import functools\nclass A:\n    @functools.singledispatchmethod\n    def m(self, x):\n        return 0\ndef g(self, x: "{LEAK_ENV}"):\n    return 1\nA().m.register(g)', REFUSED),
    _P("sdispatch", "not_a_class", _SD + "@f.register\ndef g(x: 3):\n    return 1", REFUSED),
    # controls: honest singledispatch
    _P("control", "sdispatch_annotation", _SD + "@f.register\ndef g(x: int):\n    return 'int'\nprint(f(1), f('a'))", OK, match="int base"),
    _P("control", "sdispatch_explicit", _SD + "@f.register(str)\ndef g(x):\n    return 'str'\nf.register(float, lambda x: 'float')\nprint(f('a'), f(1.0), f(1))", OK, match="str float base"),
    _P("control", "sdispatch_union", _SD + "@f.register\ndef g(x: int | str):\n    return 'either'\nprint(f(1), f('a'), f(1.0))", OK, match="either either base"),
    _P("control", "sdispatch_none", _SD + "@f.register\ndef g(x: None):\n    return 'none'\nprint(f(None))", OK, match="none"),
    _P("control", "sdispatch_user_class", _SD + "class A:\n    pass\n@f.register\ndef g(x: A):\n    return 'A'\nprint(f(A()), len(f.registry))", OK, match="A 2"),
    _P("control", "sdispatch_method", "import functools\nclass A:\n    @functools.singledispatchmethod\n    def m(self, x):\n        return 'base'\n    @m.register\n    def one(self, x: int):\n        return 'int'\n    @m.register(str)\n    def two(self, x):\n        return 'str'\nprint(A().m(1), A().m('a'), A().m(1.0))", OK, match="int str base"),
    # -- typing: string annotations become ForwardRefs that are compiled, never evaluated --------------------
    _P("typing_str", "get_type_hints", "import typing\ntyping.get_type_hints", BLOCKED),
    _P("typing_str", "forward_ref_name", "from typing import ForwardRef", BLOCKED),
    _P("typing_str", "forward_ref_evaluate", f'import typing\na = typing.get_args(typing.List["{LEAK_ENV}"])[0]\na._evaluate(None, None, frozenset())', REFUSED),
    _P("control", "typing_forward_ref_inert", f'import typing\nprint(typing.get_args(typing.Optional["{LEAK_ENV}"])[0] is not None)', OK, match="True"),
    _P("control", "typing_namedtuple_str", f'import typing\nclass P(typing.NamedTuple):\n    x: "{LEAK_ENV}"\n    y: int = 2\nprint(P(1))', OK, match="P(x=1, y=2)"),
    _P("control", "typing_namedtuple_functional", f'import typing\nP = typing.NamedTuple("P", [("x", "{LEAK_ENV}")])\nprint(P(3))', OK, match="P(x=3)"),
    _P("control", "typing_typeddict_str", f'import typing\nclass T(typing.TypedDict):\n    x: "{LEAK_ENV}"\nprint(T(x=1))', OK, match="{'x': 1}"),
    _P("control", "typing_typevar_bound_str", f'import typing\nT = typing.TypeVar("T", bound="{LEAK_ENV}")\nprint(T)', OK, match="~T"),
    _P("control", "typing_annotated_str", f'import typing\nA = typing.Annotated[int, "{LEAK_ENV}"]\nprint(typing.get_origin(A) is typing.Annotated)', OK, match="True"),
    # -- dataclasses: generated methods come from field names only; string annotations are never evaluated --
    _P("control", "dataclass_str_annotation", f'import dataclasses\n@dataclasses.dataclass\nclass D:\n    x: "{LEAK_ENV}" = 1\nprint(D())', OK, match="D(x=1)"),
    _P("control", "dataclass_classvar_str", 'import dataclasses, typing\nfrom typing import ClassVar\n@dataclasses.dataclass\nclass D:\n    n: ClassVar[int] = 3\n    x: int = 1\nprint(D(), [f.name for f in dataclasses.fields(D)])', OK, match="['x']"),
    _P("control", "dataclass_initvar_str", 'import dataclasses\nfrom dataclasses import InitVar\n@dataclasses.dataclass\nclass D:\n    x: int\n    y: InitVar[int] = 0\n    def __post_init__(self, y):\n        self.x += y\nprint(D(1, 2))', OK, match="D(x=3)"),
    _P("control", "dataclass_field_defaults", 'import dataclasses\n@dataclasses.dataclass(frozen=True, order=True)\nclass D:\n    x: int = dataclasses.field(default=1)\n    y: list = dataclasses.field(default_factory=list)\nprint(D(), D() < D(2))', OK, match="D(x=1, y=[]) True"),
    _P("dataclass", "make_dataclass", 'import dataclasses\ndataclasses.make_dataclass("D", [("x", int)])', BLOCKED),
    _P("dataclass", "library_class", 'import dataclasses, fractions\ndataclasses.dataclass(fractions.Fraction)', REFUSED),
    # -- collections.namedtuple: it builds `__new__` with eval; names are checked before they reach it -------
    _P("namedtuple", "field_injection", 'import collections\ncollections.namedtuple("P", ["a, b=print(1)"])', BLOCKED),
    _P("namedtuple", "field_paren", 'import collections\ncollections.namedtuple("P", "a): (0,")', BLOCKED),
    _P("namedtuple", "typename_injection", 'import collections\ncollections.namedtuple("P(): pass\\nimport os", "a")', BLOCKED),
    _P("namedtuple", "str_subclass_names", 'import collections\nclass S(str):\n    def isidentifier(self):\n        return True\n    def startswith(self, p):\n        return False\ncollections.namedtuple("P", [S("a): 0\\nx = (")])', BLOCKED),
    _P("namedtuple", "str_subclass_str_is_self", 'import collections\nclass S(str):\n    def __str__(self):\n        return self\n    def isidentifier(self):\n        return True\n    def startswith(self, p):\n        return False\ncollections.namedtuple("P", [S("a): 0\\nx = (")])', BLOCKED),
    _P("namedtuple", "str_subclass_typename_str_is_self", 'import collections\nclass S(str):\n    def __str__(self):\n        return self\n    def isidentifier(self):\n        return True\ncollections.namedtuple(S("P(): 0\\n"), ["a"])', BLOCKED),
    _P("namedtuple", "str_subclass_typename", 'import collections\nclass S(str):\n    def isidentifier(self):\n        return True\ncollections.namedtuple(S("P(): 0\\n"), ["a"])', BLOCKED),
    _P("control", "namedtuple_rename_defaults", 'import collections\nP = collections.namedtuple("P", ["a", "def", "a"], rename=True, defaults=[2], module="os")\nprint(P(1, 2), P._fields)', OK, match="('a', '_1', '_2')"),
    # -- enum: functional API names become members, never code ----------------------------------------------
    _P("enum", "functional_dunder", 'import enum\nenum.Enum("E", ["__init_subclass__"])', REFUSED),
    _P("enum", "functional_mapping_dunder", 'import enum\nenum.Enum("E", {"__reduce_ex__": 1})', REFUSED),
    _P("control", "enum_functional", 'import enum\nE = enum.Enum("E", "a b", module="os", qualname="x.E")\nprint(E.a, E["b"].value)', OK, match="E.a 2"),
    # -- operator: dotted names walk through the attribute guard ---------------------------------------------
    _P("operator", "attrgetter_dotted_dunder", 'import operator\noperator.attrgetter("real.__class__")(1)', REFUSED),
    _P("operator", "attrgetter_frame", 'import operator\ndef gen():\n    yield 1\noperator.attrgetter("gi_frame")(gen())', REFUSED),
    _P("operator", "attrgetter_globals", 'import operator\noperator.attrgetter("__globals__")(lambda: 0)', REFUSED),
    _P("operator", "methodcaller_dunder", 'import operator\noperator.methodcaller("__reduce_ex__", 2)(1)', REFUSED),
    _P("control", "attrgetter_dotted", 'import operator\nclass A:\n    pass\na = A()\na.b = A()\na.b.c = 7\nprint(operator.attrgetter("b.c")(a))', OK, match="7"),
    # -- format strings and specs: fields walk through the guards --------------------------------------------
    _P("format_str", "format_dunder", '"{0.__class__}".format(1)', REFUSED),
    _P("format_str", "format_map_dunder", '"{a.__class__.__base__}".format_map({"a": 1})', REFUSED),
    _P("format_str", "format_frame", 'def gen():\n    yield 1\n"{0.gi_frame}".format(gen())', REFUSED),
    _P("format_str", "format_globals", '"{0.__globals__}".format(lambda: 0)', REFUSED),
    _P("format_str", "userstring_format", 'import collections\ncollections.UserString("{0.__class__}").format(1)', REFUSED),
    _P("format_str", "str_format_unbound", 'str.format("{0.__class__}", 1)', REFUSED),
    _P("format_str", "formatter_class", 'import string\nstring.Formatter().vformat("{0.__class__}", (1,), {})', BLOCKED),
    _P("format_str", "format_nested_spec", '"{0:{1.__class__}}".format(1, 2)', REFUSED),
    _P("control", "format_item_and_attr", 'class A:\n    pass\na = A()\na.v = 5\nprint("{0.v} {1[k]} {2:>4}".format(a, {"k": 6}, 7))', OK, match="5 6    7"),
    # -- string.Template: placeholders are mapping keys, never attribute paths -------------------------------
    _P("template", "dunder_key_is_a_key", 'import string\nprint(string.Template("${__class__}").safe_substitute({}))', OK, match="${__class__}"),
    _P("template", "dotted_idpattern", 'import string\nclass T(string.Template):\n    idpattern = r"[a-z_.]+"\nT("$a.__class__").substitute({"a": 1})', BLOCKED),
    _P("control", "template_substitute", 'import string\nclass T(string.Template):\n    delimiter = "%"\nprint(T("%who likes %what").substitute({"who": "tim"}, what="kung pao"))', OK, match="tim likes kung pao"),
    # -- re, json, copy, pprint, csv: callbacks and hooks are the cell's own (restricted) code ---------------
    _P("control", "re_sub_callback", 'import re\nprint(re.sub(r"\\d", lambda m: str(int(m.group(0)) * 2), "a1b2"), re.sub("(a)", r"\\g<1>!", "a"))', OK, match="a2b4 a!"),
    _P("control", "json_hooks", 'import json\nclass E(json.JSONEncoder):\n    def default(self, o):\n        return sorted(o)\nprint(json.loads(\'{"a": 1}\', object_hook=lambda d: len(d)), json.dumps({1, 2}, cls=E))', OK, match="1 [1, 2]"),
    _P("control", "copy_pprint_csv", 'import copy, pprint, csv, io\nclass A:\n    def __init__(self):\n        self.v = [1]\n    def __repr__(self):\n        return "A" + repr(self.v)\nb = copy.deepcopy(A())\nb.v.append(2)\npprint.pprint(b)\nclass D(csv.Dialect):\n    delimiter = ";"\n    quotechar = \'"\'\n    lineterminator = "\\n"\n    quoting = csv.QUOTE_MINIMAL\nprint(list(csv.reader(io.StringIO("a;b"), D)))', OK, match="[['a', 'b']]"),
    _P("copyhook", "reduce_method", 'class A:\n    def __reduce__(self):\n        return (print, ("x",))', REFUSED),
    _P("copyhook", "deepcopy_method", 'class A:\n    def __deepcopy__(self, memo):\n        return 1', REFUSED),
    _P("copyhook", "reduce_setattr", 'class A:\n    pass\nsetattr(A, "__reduce_ex__", lambda self, p: (print, ("x",)))', REFUSED),
    _P("copyhook", "reduce_class_attr", 'def r(self, p):\n    return (print, ("x",))\nclass A:\n    __reduce_ex__ = r', REFUSED),
    _P("copyhook", "csv_register_dialect", 'import csv\ncsv.register_dialect("x", delimiter=";")', BLOCKED),
    # -- parsers of strings: numbers and dates are parsed, never evaluated ----------------------------------
    _P("parse", "decimal_code", 'import decimal\ndecimal.Decimal("__import__(\'os\')")', BLOCKED),
    _P("parse", "fraction_code", 'import fractions\nfractions.Fraction("1/0 or __import__(\'os\')")', BLOCKED),
    _P("parse", "int_code", 'int("__import__(\'os\')")', BLOCKED),
    _P("control", "parse_numbers_dates", 'import decimal, fractions, datetime, time\nprint(decimal.Decimal("1.5") + 1, fractions.Fraction("3/6"), datetime.datetime.strptime("2024-01-02", "%Y-%m-%d").day, time.strptime("2024", "%Y").tm_year, datetime.date(2024, 3, 4).timetuple().tm_mday)', OK, match="2.5 1/2 2 2024 4"),
    _P("parse", "codec_by_name", '"x".encode("rot_13")', BLOCKED),
]
# fmt: on
