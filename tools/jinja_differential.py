#!/usr/bin/env python3
"""Differential check of seam's Jinja engine against Python's jinja2, the way
transformers configures it (a development aid; CI does not run it). Each
snippet is rendered by both with the same variables; differing output (or an
error on one side only) is printed.

usage: tools/jinja_differential.py SEAM_BINARY [SNIPPETS.json | --whitespace-fuzz N | --expression-fuzz N]
SNIPPETS.json: [[template, {variables}], ...] (default: the built-in list);
--whitespace-fuzz N: N random nestings of blocks, comments, raw, set and filter
blocks with every whitespace-control sign around text of spaces and newlines;
--expression-fuzz N: N random expressions of operators, filters and tests over mixed
values (jinja2's lazy filters print as <generator ...> there: those differences are expected)."""
import json, os, subprocess, sys, tempfile
from datetime import datetime

import jinja2
from jinja2.ext import Extension, loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment


class Generation(Extension):
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_render", []), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def make_env(raise_exception=raise_exception):
    """jinja2 configured as transformers configures it, strftime_now frozen at the goldens' date."""
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[Generation, loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda f: datetime(2026, 7, 26).strftime(f)
    return env


def python_render(template, variables):
    env = make_env()
    try:
        context = {"messages": [], "tools": None, "documents": None, "add_generation_prompt": False, **variables}
        return {"text": env.from_string(template).render(**context)}
    except Exception as e:  # noqa: BLE001 - any failure is an "error" result
        return {"error": f"{type(e).__name__}: {e}"}


SNIPPETS = [
    ["{{ 1 }} {{ 1.0 }} {{ 1.5e-7 }} {{ 1e16 }} {{ 10/4 }} {{ 7//2 }} {{ -7//2 }} {{ -7 % 3 }} {{ 2**10 }}", {}],
    ["{{ none }} {{ true }} {{ false }} {{ [1, 'a', none, true] }} {{ {'a': 1, 'b': [2.5]} }}", {}],
    ["{{ \"it's\" }} {{ ['it\\'s', \"q\\\"\"] }} {{ ['\\n\\t\\\\'] }}", {}],
    ["{{ x }}|{{ x.y is defined }}|{{ x is undefined }}", {}],
    ["{% for i in range(5) %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.first }}{{ loop.last }},{% endfor %}", {}],
    ["{% for i in [1,2,3] %}{% if i == 2 %}{% continue %}{% endif %}{{ i }}{% endfor %}", {}],
    ["{% for i in [1,2,3] %}{% if i == 2 %}{% break %}{% endif %}{{ i }}{% endfor %}", {}],
    ["{% for i in [] %}x{% else %}empty{% endfor %}", {}],
    ["{% for i in range(10) if i is odd %}{{ i }}{{ loop.length }} {% endfor %}", {}],
    ["{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}", {"d": {"b": 1, "a": 2}}],
    ["{% for k in d %}{{ k }}{% endfor %}{{ d|length }}", {"d": {"b": 1, "a": 2}}],
    ["{% for a in [1,2,3] %}{{ loop.previtem }}-{{ loop.nextitem }}|{{ loop.cycle('x','y') }} {% endfor %}", {}],
    ["{% set ns = namespace(n=0) %}{% for i in range(4) %}{% set ns.n = ns.n + i %}{% endfor %}{{ ns.n }}", {}],
    ["{% set x = 1 %}{% for i in range(3) %}{% set x = i %}{% endfor %}{{ x }}", {}],
    ["{% set x %}  block {{ 1 + 1 }} {% endset %}[{{ x }}]", {}],
    ["{% set x | upper %}abc{% endset %}{{ x }}", {}],
    ["{% macro m(a, b=2) %}{{ a }}-{{ b }}{% endmacro %}{{ m(1) }} {{ m(1, b=5) }} {{ m('x', 'y') }}", {}],
    ["{% macro m() %}<{{ caller() }}>{% endmacro %}{% call m() %}inner{% endcall %}", {}],
    ["{% macro m() %}{% for i in [1,2] %}{{ caller(i) }}{% endfor %}{% endmacro %}{% call(x) m() %}[{{ x }}]{% endcall %}", {}],
    ["{% filter upper %}hello {{ 'x' }}{% endfilter %}", {}],
    ["{% raw %}{{ not }}{% endraw %}", {}],
    ["a\n  {% if true %}\n  b\n  {% endif %}\nc\n", {}],
    ["a\n  {%- if true -%}\n  b\n  {%+ endif %}\nc", {}],
    ["x {# comment #}\n  {#- c2 -#}  y", {}],
    ["  {{- ' a ' -}}  \n{{ 'b' }}\n", {}],
    ["{{ 'Hello World'.lower() }} {{ 'hello world'.title() }} {{ 'hello world'|title }} {{ 'abc'.upper() }}", {}],
    ["{{ '  x  '.strip() }}|{{ 'xxaxx'.strip('x') }}|{{ ' a b  c '.split() }}|{{ 'a,b,,c'.split(',') }}|{{ 'a,b,c'.split(',', 1) }}|{{ 'a,b,c'.rsplit(',', 1) }}", {}],
    ["{{ 'abc'.startswith('a') }} {{ 'abc'.endswith(('x', 'c')) }} {{ 'aaa'.replace('a', 'b', 2) }} {{ 'abc'.find('c') }}", {}],
    ["{{ 'héllo wörld'[1:4] }} {{ 'héllo'|length }} {{ 'héllo'[-1] }} {{ [1,2,3,4,5][::-1] }} {{ [1,2,3,4,5][1:-1:2] }}", {}],
    ["{{ 'a' ~ 1 ~ none ~ [1] }} {{ 'ab' * 3 }} {{ [1] + [2] }}", {}],
    ["{{ 'a' in 'cat' }} {{ 1 in [1,2] }} {{ 'k' in {'k': 1} }} {{ 3 not in [1] }}", {}],
    ["{{ 1 < 2 < 3 }} {{ 1 == 1.0 }} {{ true == 1 }} {{ 'a' < 'b' }} {{ [1,2] == [1,2] }}", {}],
    ["{{ x | default('d') }} {{ '' | default('d', true) }} {{ none | default('d') }}", {}],
    ["{{ [3,1,2]|sort }} {{ ['b','A','c']|sort }} {{ [3,1,2]|sort(reverse=true) }} {{ [{'a':2},{'a':1}]|sort(attribute='a') }}", {}],
    ["{{ [1,2,2,'a','A']|unique|list }} {{ [1,2,3]|first }} {{ [1,2,3]|last }} {{ [1,2,3]|sum }} {{ [1,5,3]|max }} {{ [4,2]|min }}", {}],
    ["{{ [1,2,3]|map('string')|join(',') }} {{ users|map(attribute='name')|join(', ') }}", {"users": [{"name": "a"}, {"name": "b"}]}],
    ["{{ users|selectattr('admin')|map(attribute='name')|list }} {{ users|rejectattr('admin')|list }}", {"users": [{"name": "a", "admin": True}, {"name": "b", "admin": False}]}],
    ["{{ users|selectattr('role', 'equalto', 'x')|list|length }} {{ [1,2,3,4]|select('odd')|list }} {{ [1,2,3,4]|reject('even')|list }} {{ [0,1,'',2]|select|list }}", {"users": [{"role": "x"}, {"role": "y"}]}],
    ["{{ d|dictsort }} {{ d|dictsort(reverse=true) }} {{ d|dictsort(by='value') }} {{ d|items|list }}", {"d": {"b": 1, "a": 3, "C": 2}}],
    ["{{ 'a\nb\n\nc'|indent }}|{{ 'a\nb'|indent(2, true) }}|{{ 'a\n\nb'|indent(2, blank=true) }}|{{ 'x'|indent('> ', first=true) }}", {}],
    ["{{ '42'|int }} {{ '4.7'|int }} {{ 'x'|int }} {{ 'x'|int(7) }} {{ 4.7|int }} {{ '3.5'|float }} {{ 3|float }}", {}],
    ["{{ 2.5|round }} {{ 3.5|round }} {{ 2.675|round(2) }} {{ 7|round }} {{ 2.1|round(0, 'ceil') }} {{ -3|abs }} {{ -2.5|abs }}", {}],
    ["{{ 'hello'|capitalize }} {{ 'HeLLo'|lower }} {{ 'x'|upper }} {{ '  t  '|trim }} {{ 'abc'|replace('b', 'X') }} {{ 'abc'|reverse }}", {}],
    ["{{ d|tojson }} {{ d|tojson(indent=2) }} {{ d|tojson(sort_keys=true) }} {{ d|tojson(separators=(',', ':')) }}", {"d": {"b": [1, 2.5, None, True], "a": "é\"\n", "c": {}}}],
    ["{{ [1, 2]|tojson(indent=4) }} {{ []|tojson(indent=2) }} {{ 'x'|tojson }} {{ 1.0|tojson }} {{ 1e20|tojson }}", {}],
    ["{{ x is string }} {{ x is mapping }} {{ x is iterable }} {{ x is sequence }} {{ x is number }} {{ x is integer }} {{ x is none }}", {"x": "s"}],
    ["{{ x is string }} {{ x is mapping }} {{ x is iterable }} {{ x is sequence }} {{ x is number }} {{ x is integer }} {{ x is boolean }}", {"x": True}],
    ["{{ x is mapping }} {{ x is iterable }} {{ 4 is divisibleby 2 }} {{ 3 is even }} {{ 'a' is lower }} {{ 1 is sameas 1 }} {{ none is sameas none }} {{ 2 is gt 1 }} {{ 1 is in [1] }}", {"x": {"a": 1}}],
    ["{{ 'yes' if x else 'no' }} {{ 'yes' if y }}|{{ x and 'a' or 'b' }} {{ 0 or none }} {{ not x }}", {"x": 1}],
    ["{{ m['role'] }} {{ m.role }} {{ m.get('missing', 'dflt') }} {{ m.get('role') }} {{ m.keys()|list }} {{ m.values()|list }}", {"m": {"role": "user", "items": 3}}],
    ["{{ m.items }}", {"m": {"items": 3}}],
    ["{{ m['items'] }} {{ m.items()|list }}", {"m": {"items": 3}}],
    ["{{ strftime_now('%d %b %Y') }} {{ strftime_now('%B %d, %Y %A %H:%M') }}", {}],
    ["{{ raise_exception('boom: ' ~ 1) }}", {}],
    ["{% for m in messages %}{{ m }}{% endfor %}", {"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]}],
    ["{{ 'a' + 1 }}", {}],
    ["{{ x + 'a' }}", {}],
    ["{{ x.y.z }}", {}],
    ["{{ none.x }}|{{ [1][5] }}|", {}],
    ["{% for x in none %}{% endfor %}", {}],
    ["{{ '%s and %s'|format('a', 'b') }} {{ '{} {}'.format(1, 'x') }} {{ '%d%%' % 5 }}", {}],
    ["{% set a, b = 1, 2 %}{{ a }}{{ b }} {% for a, b in [[1,2],[3,4]] %}{{ a * b }}{% endfor %}", {}],
    ["{% with x = 5 %}{{ x }}{% endwith %}{{ x }}", {}],
    ["{%- for item in tree recursive %}[{{ item.n }}{% if item.c %}{{ loop(item.c) }}{% endif %}{{ loop.depth }}]{%- endfor %}", {"tree": [{"n": 1, "c": [{"n": 2, "c": []}]}, {"n": 3}]}],
    ["{{ (1, 2) }} {{ () }} {{ [1,2,3]|batch(2)|list }} {{ 'a b c'|wordcount }} {{ 'abc'|center(9) }}|", {}],
    ["{{ 'x' if true else 'y' ~ 'z' }} {{ -2 ** 2 }} {{ 2 * 3 + 4 }} {{ 1 + 2 ~ 3 }} {{ not 1 == 2 }} {{ -x|abs }}", {"x": 3}],
    ["{% generation %}gen {{ 1 }}{% endgeneration %}", {}],
    ["{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% else %}{% set loop_messages = messages %}{% endif %}{{ loop_messages|length }}", {"messages": [{"role": "system"}, {"role": "user"}]}],
    ["{%- set content = m.content.split('</think>')[-1].lstrip('\\n') %}[{{ content }}]", {"m": {"content": "<think>\nhm\n</think>\n\nanswer"}}],
    ["{{ messages[::-1]|map(attribute='role')|join }} {{ (messages|last).role }}", {"messages": [{"role": "a"}, {"role": "b"}]}],
    ["{{ d.x | tojson }} {{ d | tojson }}", {"d": {"x": "日本語 😊", "n": -0.0, "i": 12345678901234}}],
    ["{{ 0.1 + 0.2 }} {{ 1/3 }} {{ 100.0 }} {{ 1e-4 }} {{ 0.0001234 }} {{ 123456789012345678.0 }} {{ 3.0 * 2 }}", {}],
    ["{{ ' \u00a0x\u3000 '|trim }}|{{ ' x \u2003y '.split() }}", {}],
    ["{{ ['\u00e9', '\u200b', 'a\u00a0b'] }}", {}],
    ["{% if true %}\n    x\n{% endif %}\n    {{ 'y' }}\n", {}],
    ["{% macro m(a) %}{{ a }}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1, 2, k=3) }}", {}],
    ["{{ 'abc'[5:] }}|{{ [1,2][5:] }}|{{ 'abc'[-10:2] }}", {}],
    ["{{ range(3)|list }} {{ range(1, 10, 3)|list }} {{ range(5, 0, -2)|list }}", {}],
    ["{{ 'A-b c(d'|title }} {{ 'they\\'re bill\\'s'.title() }}", {}],
    ["{{ x|length }} {{ x|list }} {{ x|join }} {{ x|trim }} {{ x|string }}|", {}],
    ["{{ [1, [2, 3]]|tojson }} {{ {'a': none}|tojson(indent=1) }}", {}],
    ["{%- for message in messages %}{%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('alt') }}{%- endif %}{{ message['content'] | trim }}{% endfor %}", {"messages": [{"role": "user", "content": " a "}, {"role": "assistant", "content": "b"}]}],
    ["{{ tool.function.parameters.properties | items | list }}", {"tool": {"function": {"parameters": {"properties": {"a": {"type": "string"}}}}}}],
    ["{% for name, spec in props.items() %}{{ name }}:{{ spec.type }}{% if spec.items is defined %}!{% endif %}{% endfor %}", {"props": {"a": {"type": "array", "items": {"type": "int"}}}}],
    ["{{ x is defined and x }} {{ y is not defined }} {{ z is none }}", {"x": 0, "z": None}],
    ["{{ 'a'.join(['x','y']) }} {{ ', '.join(['x']) }} {{ 'x'.zfill(3) }} {{ 'ab'.count('a') }} {{ 'A1'.isalnum() }} {{ '12'.isdigit() }}", {}],
    ["{{ 'a\\nb\\r\\nc'.splitlines() }} {{ 'aBc'.swapcase is defined }}", {}],
    ["{{ lst|selectattr('type', 'equalto', 'text')|map(attribute='text')|join('\\n') }}", {"lst": [{"type": "text", "text": "a"}, {"type": "image"}, {"type": "text", "text": "b"}]}],
    ["{{ messages|selectattr('role', 'in', ['user', 'system'])|list|length }}", {"messages": [{"role": "user"}, {"role": "system"}, {"role": "tool"}]}],
    ["{{ [1,2,3] | map('tojson') | join(', ') }} {{ ['a'] | map('upper') | first }}", {}],
    ["{{ x[0] }}{{ x.0 }}", {"x": ["first"]}],
]


def whitespace_fuzz(n, seed=11):
    import random
    rng = random.Random(seed)
    texts = ["", " ", "\n", "  \n", "x", "\t", "\n  ", " y \n", "\n\n", "\r\n", "  "]

    def sign():
        return rng.choice(["", "-", "+"])

    def piece(depth):
        r = rng.random()
        if r < 0.3:
            return rng.choice(texts)
        if r < 0.4:
            return "{{%s 'v' %s}}" % (rng.choice(["", "-"]), rng.choice(["", "-"]))
        if r < 0.5:
            return "{#%s c\n %s#}" % (sign(), sign())
        if depth >= 3:
            return "z"
        if r < 0.56:
            # (jinja2 does not accept + on raw tags: a syntax error there, so not generated)
            return "{%%%s raw %s%%}r {{ x }}\n {%%%s endraw %s%%}" % tuple(rng.choice(["", "-"]) for _ in range(4))
        if r < 0.63:
            return "{%%%s set q %s%%}%s{%%%s endset %s%%}{{ q }}" % (sign(), sign(), body(depth + 1), sign(), sign())
        if r < 0.7:
            return "{%%%s filter upper %s%%}%s{%%%s endfilter %s%%}" % (sign(), sign(), body(depth + 1), sign(), sign())
        head = rng.choice(["if true", "for i in [1,2]", "if false", "for i in []"])
        end = "endif" if head.startswith("if") else "endfor"
        other = "{%%%s else %s%%}%s" % (sign(), sign(), body(depth + 1)) if rng.random() < 0.5 else ""
        return "{%%%s %s %s%%}%s%s{%%%s %s %s%%}" % (sign(), head, sign(), body(depth + 1), other, sign(), end, sign())

    def body(depth):
        return "".join(piece(depth) for _ in range(rng.randint(0, 4)))

    return [[body(0) + rng.choice(["", "\n", " \n"]), {}] for _ in range(n)]


def expression_fuzz(n, seed=3):
    import random
    rng = random.Random(seed)
    values = ["0", "1", "-3", "2.5", "'ab'", "''", "[1, 2]", "none", "true", "false", "{'a': 1}", "x", "(1, 'b')",
              "'é'", "3.0", "1e3", "[]", "'A b'"]
    ops = ["+", "-", "*", "/", "//", "%", "**", "~", "==", "!=", "<", ">", "<=", "in", "not in", "and", "or"]
    filters = ["length", "string", "first", "last", "list", "upper", "trim", "tojson", "int", "float", "abs", "round",
               "reverse", "sort", "unique", "join", "default('d')", "items", "dictsort", "capitalize", "title", "lower"]
    tests = ["defined", "none", "string", "number", "integer", "iterable", "mapping", "odd", "sequence", "true",
             "false", "boolean", "float"]

    def expr(depth):
        r = rng.random()
        if depth > 2 or r < 0.3:
            return rng.choice(values)
        if r < 0.6:
            return "(%s %s %s)" % (expr(depth + 1), rng.choice(ops), expr(depth + 1))
        if r < 0.75:
            return "(%s|%s)" % (expr(depth + 1), rng.choice(filters))
        if r < 0.85:
            return "(%s is %s%s)" % (expr(depth + 1), rng.choice(["", "not "]), rng.choice(tests))
        if r < 0.92:
            return "(%s if %s else %s)" % (expr(depth + 1), expr(depth + 1), expr(depth + 1))
        return "(not %s)" % expr(depth + 1)

    return [["{{ %s }}" % expr(0), {}] for _ in range(n)]


def main():
    seam = sys.argv[1]
    if len(sys.argv) > 3 and sys.argv[2] == "--whitespace-fuzz":
        snippets = whitespace_fuzz(int(sys.argv[3]))
    elif len(sys.argv) > 3 and sys.argv[2] == "--expression-fuzz":
        snippets = expression_fuzz(int(sys.argv[3]))
    else:
        snippets = json.load(open(sys.argv[2])) if len(sys.argv) > 2 else SNIPPETS
    n_diff = 0
    with tempfile.TemporaryDirectory() as tmp:
        open(os.path.join(tmp, "tokenizer_config.json"), "w").write("{}")
        for i, (template, variables) in enumerate(snippets):
            path = os.path.join(tmp, f"t{i}.jinja")
            open(path, "w").write(template)
            line = json.dumps({"messages": variables.pop("messages", []), "kwargs": variables}) + "\n"
            variables_for_py = json.loads(line)
            out = subprocess.run([seam, "chat-template", "--tokenizer", tmp, "--chat-template", path,
                                  "--fixed-time", "2026-07-26T00:00:00"], input=line, capture_output=True, text=True)
            try:
                ours = json.loads(out.stdout.split("\n")[0]) if out.stdout else {"error": out.stderr.strip()}
            except json.JSONDecodeError:
                ours = {"error": out.stdout}
            py_vars = dict(variables_for_py["kwargs"])
            theirs = python_render(template, {**py_vars, "messages": variables_for_py["messages"]})
            same = ("text" in ours and ours.get("text") == theirs.get("text")) or ("error" in ours and "error" in theirs)
            if not same:
                n_diff += 1
                print(f"DIFF #{i}: {template!r}\n  jinja2: {theirs}\n  seam:   {ours}")
    print(f"{len(snippets) - n_diff}/{len(snippets)} snippets agree")


if __name__ == "__main__":
    main()
