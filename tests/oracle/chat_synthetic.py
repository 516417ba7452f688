"""Small templates written here, each exercising one corner of jinja2's semantics as transformers
renders chat templates (whitespace control, Python's number and string printing, scoping, filters,
tests, methods, undefined values, errors). chat_oracle.py renders each with transformers' own
compiled environment over CONTEXT and records the output or the error; the C++ tests must agree.

`beyond` marks a template that jinja2 renders but that uses a construct outside the subset the
engine implements: the engine must refuse it (an error), never render something else.
"""

CONTEXT = {
    "s": "héllo wörld",
    "sp": "  \t spaced \u3000 ",
    "l": [1, 2, 3, 4],
    "d": {"a": 1, "items": "I", "é": "ü", "nested": {"k": [1, 2.5, None, True]}},
    "users": [{"name": "ann", "age": 31, "admin": True}, {"name": "bob", "age": 25, "admin": False},
              {"name": "cy", "age": 40}],
    "x": 1,
    "n": None,
    "m": {"content": None, "role": "tool"},
}

MESSAGES = [
    {"role": "system", "content": "sys"},
    {"role": "user", "content": "hi"},
    {"role": "assistant", "content": "hello", "tool_calls": [{"type": "function",
                                                              "function": {"name": "f", "arguments": {"b": 2, "a": [1]}}}]},
    {"role": "user", "content": "bye"},
]

CASES = [
    # ---- whitespace control (trim_blocks, lstrip_blocks, -, +), newlines ----
    ("ws_trim_lstrip", "{% if true %}\n  x\n{% endif %}\ny\n"),
    ("ws_lines", "  {% if true %}a{% endif %}  \n  {{ 'v' }}  \n   {% for i in l %}{{ i }}{% endfor %}\nend"),
    ("ws_comments", "a  {#- c -#}  b\n{# c #}\nz\n  {# indented comment #}\nw"),
    ("ws_plus", "{%+ if true %}  x{% endif %}\n  {%+ if true %}y{% endif %}"),
    ("ws_minus", "x\n    {%- if true -%}\n   y   \n{%- endif %}\n\n{{- ' a ' -}}\n\n{{ 'b' }}"),
    ("ws_newlines", "line1\r\nline2\rline3\n{{ 'v' }}\r\n"),
    ("ws_loop_lines", "{% for i in range(3) %}\n{{ i }}\n{% endfor %}\n"),
    ("ws_tab_set", "\t {% set v = 1 %}\n{{ v }}"),
    ("ws_mid_line", "text {% if true %}\n  in\n  {% endif %} after"),
    ("ws_unicode_space", "a\u3000\u00a0{%- if true %}b{% endif %}"),
    ("ws_trailing_two_newlines", "x\n\n"),
    # ---- numbers and operators ----
    ("arith", "{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % -3 }} {{ -7 % 3 }} {{ 2 ** 10 }} {{ 10 / 4 }} {{ 1 + 2 * 3 - 4 }} "
              "{{ 2 ** 3 ** 2 }} {{ -2 ** 2 }} {{ 7.5 // 2 }} {{ -7.5 % 2 }} {{ 1e3 }} {{ 0.1 + 0.2 }} {{ 1 / 3 }} {{ 2 ** -1 }}"),
    ("float_repr", "{{ 1e16 }} {{ 1e15 }} {{ 123456789.0 }} {{ 0.0001 }} {{ 0.00001 }} {{ -0.0 }} {{ 1.5e-7 }} {{ 3.0 }} "
                   "{{ 2.5e300 }} {{ 1e-320 }} {{ 10 ** 15 }} {{ 2 ** 62 }} {{ 1 / 7 }}"),
    ("integers", "{{ 0x1F }} {{ 0b101 }} {{ 0o17 }} {{ 1_000 }} {{ 00 }} {{ 1_0.5 }} {{ 1E3 }} {{ 5e-1 }}"),
    ("strings_ops", "{{ 'ab' ~ 1 ~ none ~ true ~ 1.5 }} {{ 'x' * 3 }} {{ 3 * 'y' }} {{ 'a' + 'b' }} {{ \"it's\" }} "
                    "{{ [1] * 2 }} {{ [1] + [2] }} {{ (1,) + (2,) }} {{ 'x' * 0 }}|{{ 'x' * -1 }}|"),
    ("compare", "{{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ 'a' < 'b' }} {{ 'B' < 'a' }} {{ [1, 2] < [1, 3] }} {{ 1 == 1.0 }} "
                "{{ true == 1 }} {{ (1, 2) == [1, 2] }} {{ none == none }} {{ {'a': 1, 'b': 2} == {'b': 2, 'a': 1} }} "
                "{{ 1 != 1.0 }} {{ 'é' > 'e' }} {{ 2 >= 2.0 }}"),
    ("membership", "{{ 'a' in 'cat' }} {{ 2 in [1, 2] }} {{ 'k' in {'k': 1} }} {{ 'x' not in 'abc' }} {{ 'z' in undefined_thing }} "
                   "{{ {'a': 1} in [{'a': 1}] }} {{ 1.0 in [1] }} {{ '' in 'x' }}"),
    ("logic", "{{ 0 or 'x' }} {{ '' and 'y' }} {{ 'a' and 'b' }} {{ none or [] or 'last' }} {{ not 0 }} {{ not not 'x' }} "
              "{{ not x is defined }} {{ not (1 == 2) }}"),
    ("conditional", "{{ 'y' if true else 'n' }} {{ 'y' if false else 'n' }} [{{ 'y' if false }}] {{ 1 if 0 else 2 if 0 else 3 }}"),
    # ---- access ----
    ("subscripts", "{{ s[1] }} {{ s[-1] }} {{ s[1:3] }} {{ s[::-1] }} {{ s[::2] }} {{ l[1:] }} {{ l[:-1] }} {{ l[-2:] }} "
                   "[{{ l[5] }}|{{ s[10] }}|{{ s[100] }}] {{ l[::-2] }} {{ s[-100:100] }} {{ l.0 }} {{ l[1:3:1] }} {{ l[3:1] }}"),
    ("attr_item", "{{ d.a }} {{ d['a'] }} {{ d.items is defined }} {{ d['items'] }} {{ d.get('a') }} {{ d.get('zz', 'dflt') }} "
                  "{{ d.missing is defined }} {{ n.x is defined }} {{ d['é'] }} {{ d.nested.k[1] }} {{ d['nested']['k'][-1] }} "
                  "{{ users[0].name }} {{ users[5] is defined }} {{ m.content is none }} {{ m.missing is defined }}"),
    ("repr", "{{ [1, 'a', none, true, 1.5, {'k': (1,)}, ('x', 'y')] }} {{ {'a': [\"it's\", 'q\"'], 1: 2} }} "
             "{{ ['tab\\there', 'nl\\n', '\\x00', 'é', '\\u00a0', '\\u200b', '🙂', 'both\\'\"', '\\\\'] }} {{ (1,) }} {{ () }}"),
    ("repr_context", "{{ messages }} {{ d }} {{ users[2] }}"),
    ("dict_views", "{% for k in d %}{{ k }},{% endfor %} {{ d.keys()|list }} {{ d.values()|list }} {{ d.items()|list }} "
                   "{{ d.items() }} {{ d.keys() }} {{ d.values()|length }}"),
    ("dict_literals", "{{ dict(a=1, b=2) }} {{ dict([('x', 1)]) }} {{ {'a': 1, 'a': 2} }} {{ {1: 'i', true: 'b'} }} "
                      "{{ dict(d, z=0)|length }} {{ {'a': {'b': 1}} }}"),
    ("ranges", "{{ range(3)|list }} {{ range(1, 10, 3)|list }} {{ range(5, 0, -2)|list }} {{ range(3) }} {{ range(0) }} "
               "{{ range(2, 8, 3) }} {{ range(3)|length }} {{ range(4)[1] }}"),
    # ---- scoping, namespaces, loops, macros ----
    ("namespace", "{% set ns = namespace(count=0, names=[]) %}{% for v in ['a', 'b'] %}{% set ns.count = ns.count + 1 %}"
                  "{% set ns.names = ns.names + [v] %}{% endfor %}{{ ns.count }} {{ ns.names }} {{ ns }} {{ ns.nope is defined }} "
                  "{% set ns2 = namespace(d) %}{{ ns2.a }} {{ ns2['a'] }}"),
    ("scoping", "{% set v = 0 %}{% for i in [1, 2] %}{{ v }}{% set v = i %}{{ v }}{% endfor %}{{ v }}"
                "{% if true %}{% set y = 5 %}{% endif %}{{ y }}{% for i in [1] %}{% set inner = 1 %}{% endfor %}{{ inner is defined }}"),
    ("loop_vars", "{% for c in 'abc' %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}"
                  "{{ loop.last }}{{ loop.length }}{{ loop.previtem }}{{ loop.nextitem }}{{ loop.cycle('x', 'y') }}{{ loop.depth }}|"
                  "{% endfor %}{{ loop is defined }}"),
    ("loop_control", "{% for v in range(10) if v is odd %}{% if v > 6 %}{% break %}{% endif %}{% if v == 3 %}{% continue %}{% endif %}"
                     "{{ v }}:{{ loop.index }}/{{ loop.length }} {% else %}none{% endfor %}{% for v in [] %}{{ v }}{% else %}empty{% endfor %}"),
    ("unpacking", "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}{% for k, v in d|items %}{{ k }}{% endfor %}"
                  "{% set a, b = 1, 2 %}{{ a }}{{ b }}{% for a, b in [[1, 2], (3, 4)] %}{{ a + b }}{% endfor %}"),
    ("nested_loops", "{% for a in [1, 2] %}{% set outer = loop %}{% for b in 'xy' %}{{ outer.index }}{{ loop.index }}{{ a }}{{ b }} "
                     "{% endfor %}{% endfor %}"),
    ("macros", "{% macro greet(name, punct='!') %}Hello {{ name }}{{ punct }}{% endmacro %}{{ greet('A') }} {{ greet('B', '?') }} "
               "{{ greet(punct='.', name='C') }}{% macro r(k) %}{% if k > 0 %}{{ k }}{{ r(k - 1) }}{% endif %}{% endmacro %} {{ r(3) }}"
               "{% macro noarg(a) %}[{{ a is defined }}]{% endmacro %}{{ noarg() }}{% macro dflt(a, b=a ~ '!') %}{{ b }}{% endmacro %}{{ dflt('z') }}"),
    ("macro_closure", "{% macro show() %}{{ v }}{% endmacro %}{% set v = 1 %}{{ show() }}{% set v = 2 %}{{ show() }}"),
    ("set_block", "{% set block %}  inner {{ 1 + 1 }}  {% endset %}[{{ block }}]{% set t | trim | upper %}  shout  {% endset %}[{{ t }}]"
                  "{% set ns = namespace() %}{% set ns.b %}nb{% endset %}{{ ns.b }}"),
    ("filter_block", "{% filter upper %}hello {{ 'world' }}{% endfilter %}{% filter trim %}  t  {% endfilter %}"),
    ("print_with", "{% print 'p', 1 %}{% with a = 1, b = 2 %}{{ a + b }}{% endwith %}{{ a is defined }}"),
    ("generation", "{% for msg in messages %}{% if msg.role == 'assistant' %}{% generation %}{{ msg.content }}{% endgeneration %}"
                   "{% else %}[{{ msg.content }}]{% endif %}{% endfor %}"),
    # ---- filters ----
    ("filters_text", "{{ '  x  '|trim }}|{{ 'xxhixx'|trim('x') }}|{{ 'Hello World'|lower }}|{{ 'hi'|upper }}|"
                     "{{ 'hello world-foo(bar'|title }}|{{ 'hELLO'|capitalize }}|{{ 'aaa'|replace('a', 'b', 2) }}|{{ none|string }}|"
                     "{{ 5|string }}|{{ undefined_x|default('d') }}|{{ ''|default('e', true) }}|{{ 0|default('f') }}|{{ sp|trim }}|"
                     "{{ 'a'|safe }}|{{ 1.5|replace('.', ',') }}"),
    ("filters_numbers", "{{ '42'|int }} {{ '42.9'|int }} {{ 'x'|int(7) }} {{ 3.9|int }} {{ '0x1A'|int(0, 16) }} {{ ' 12 '|int }} "
                        "{{ '1.5'|float }} {{ 'abc'|float }} {{ -3|abs }} {{ 2.675|round(2) }} {{ 2.5|round }} {{ 3.5|round }} "
                        "{{ 3.14159|round(2, 'floor') }} {{ 7|round }} {{ true|int }} {{ '-7'|int }} {{ '1_000'|int }}"),
    ("filters_sequences", "{{ [3, 1, 2]|sort }} {{ ['b', 'A', 'c']|sort }} {{ ['b', 'A', 'c']|sort(case_sensitive=true) }} "
                          "{{ [3, 1, 2]|sort(reverse=true) }} {{ users|sort(attribute='age')|map(attribute='name')|join(',') }} "
                          "{{ [1, 2, 3]|sum }} {{ users|sum(attribute='age') }} {{ [1, 2, 2, 3, 1]|unique|list }} {{ [4, 2, 8]|max }} "
                          "{{ ['b', 'a']|min }} {{ 'abc'|list }} {{ 'abc'|reverse }} {{ [1, 2, 3]|reverse|list }} {{ [1, 2, 3]|first }} "
                          "{{ [1, 2, 3]|last }} {{ 'xyz'|first }} {{ {'a': 1}|first }} {{ []|first is defined }} {{ users|max(attribute='age') }}"),
    ("filters_select", "{{ users|selectattr('age', 'gt', 30)|map(attribute='name')|list }} {{ users|rejectattr('admin')|map(attribute='name')|join('/') }} "
                       "{{ [0, 1, 2, '', none]|select|list }} {{ [1, 2, 3, 4]|reject('even')|list }} {{ ['a', 'b']|map('upper')|list }} "
                       "{{ users|map(attribute='missing', default='?')|list }} {{ users|selectattr('admin', 'equalto', true)|list|length }} "
                       "{{ messages|selectattr('role', 'equalto', 'user')|list|length }} {{ [1, 2, 3]|select('gt', 1)|list }}"),
    ("generators_once", "{% set g = [1, 2, 3]|select %}{{ g|list }}{{ g|list }}{{ ([1]|select) is iterable }} {{ ([1]|map('string')) is sequence }}"),
    ("lengths", "{{ 'héllo'|length }} {{ [1, 2]|length }} {{ {'a': 1}|length }} {{ undefined_y|length }} {{ '🙂'|count }} {{ range(7)|length }}"),
    ("joins", "{{ [1, 'a', none]|join(', ') }} {{ users|join(', ', attribute='name') }} {{ ', '.join(['x', 'y']) }} {{ 'abc'|join('-') }}"),
    ("tojson", "{{ d|tojson }}|{{ d|tojson(indent=2) }}|{{ d|tojson(sort_keys=true) }}|{{ d|tojson(separators=(',', ':')) }}|"
               "{{ d|tojson(ensure_ascii=true) }}|{{ 'é\\n\"\\x01\\u2028/'|tojson }}|{{ [1.0, 1e100, -0.0, 5]|tojson }}|{{ {}|tojson(indent=4) }}|"
               "{{ {'a': []}|tojson(indent='\\t') }}|{{ d|tojson(4) }}|{{ {'🙂': '🙂'}|tojson(ensure_ascii=true) }}|"
               "{{ {1: 'i', none: 'n', true: 't', 2.5: 'f'}|tojson }}|{{ messages|tojson }}|{{ (1, 2)|tojson }}|{{ d|tojson(indent=0) }}"),
    ("indent", "{{ 'a\\nb\\n\\nc'|indent }}|{{ 'a\\nb'|indent(2, true) }}|{{ 'a\\n\\nb'|indent('>', blank=true) }}|{{ ''|indent }}"),
    ("attr_filter", "{{ d|attr('items') is defined }} {{ d|attr('a') is defined }} {{ users[0]|attr('name') is defined }}"),
    # ---- methods ----
    ("str_methods", "{{ sp.strip() }}|{{ sp.lstrip() }}|{{ sp.rstrip() }}|{{ 'a,b,,c'.split(',') }}|{{ ' a  b '.split() }}|"
                    "{{ 'a b c'.split(' ', 1) }}|{{ 'a b c'.rsplit(' ', 1) }}|{{ '  a b  '.split(none, 1) }}|{{ '  a b  '.rsplit(none, 1) }}|"
                    "{{ 'abc'.startswith('ab') }}|{{ 'abc'.endswith(('x', 'c')) }}|{{ 'Hello'.upper() }}|{{ 'Hello'.lower() }}|"
                    "{{ 'hello world'.title() }}|{{ 'aXa'.replace('a', 'b') }}|{{ 'hello'.find('l') }}|{{ 'hello'.rfind('l') }}|"
                    "{{ 'hello'.count('l') }}|{{ '<think>x</think>y'.split('</think>')[-1] }}|{{ '\\n\\nx\\n'.strip('\\n') }}|"
                    "{{ 'prefix-x'.removeprefix('prefix-') }}|{{ 'x.json'.removesuffix('.json') }}|{{ 'a\\nb\\r\\nc'.splitlines() }}|"
                    "{{ 'héllo'.find('l') }}|{{ 'ab'.replace('', '-') }}|{{ ' '.isspace() }}|{{ 'aB'.capitalize() }}"),
    ("string_literals", "{{ 'tab:\\t nl:\\n oct:\\101 hex:\\x41 uni:\\u00e9 big:\\U0001F642 keep:\\d bs:\\\\ q:\\' ' }}|{{ \"dq:\\\"\" }}|"
                        "{{ 'adj' 'acent' }}|{{ 'line\\\ncontinued' }}|{{ '\\é' }}"),
    # ---- tests ----
    ("tests", "{{ 1 is odd }}{{ 2 is even }}{{ 9 is divisibleby 3 }}{{ none is none }}{{ x is defined }}{{ undefined_z is undefined }}"
              "{{ 'a' is string }}{{ 1 is number }}{{ true is number }}{{ true is integer }}{{ 1.0 is float }}{{ {} is mapping }}"
              "{{ [] is sequence }}{{ 'a' is iterable }}{{ 5 is iterable }}{{ true is boolean }}{{ false is false }}{{ 1 is true }}"
              "{{ 'ab' is lower }}{{ 'AB' is upper }}{{ 3 is gt 2 }}{{ 3 is ge(3) }}{{ 2 is lt 1 }}{{ 'a' is in 'cat' }}"
              "{{ 1 is eq 1.0 }}{{ 1 is ne 2 }}{{ range is callable }}{{ undefined_q is callable }}{{ none is callable }}"
              "{{ d.items() is sequence }}{{ 3.0 is odd }}{{ m.content is iterable }}{{ m.content is mapping }}{{ 'x' is not string }}"),
    ("undefined", "[{{ u }}] {{ u is defined }} {{ u|length }} {{ u|default('x') }} {{ u == u }} {{ u != 1 }} "
                  "{% for v in u %}no{% else %}empty{% endfor %} {{ 'a' ~ u ~ 'b' }} {{ u|list }} [{{ u|join }}] [{{ u|trim }}] "
                  "{{ u is none }} {{ u is string }} [{{ u|string }}] {{ 'c' in u }} {{ u|first is defined }} {{ [u] }}"),
    ("strftime", "{{ strftime_now('%Y-%m-%d %H:%M:%S %a %A %b %B %d %j %p %I %y %e %% %F %T %D %u %w') }}"),
    ("messages_json", "{% for msg in messages %}{{ msg.role }}:{{ msg|tojson }}\n{% endfor %}{{ messages[2].tool_calls[0].function.arguments|tojson }}"),
    ("context_defaults", "{{ tools }} {{ documents }} {{ add_generation_prompt }} {{ bos_token is defined }} {{ tools is none }}"),
    # ---- errors jinja2 raises (the engine must fail too) ----
    ("error_undefined_attr", "{{ u.attr }}"),
    ("error_undefined_add", "{{ u + 1 }}"),
    ("error_add_types", "{{ 1 + 'a' }}"),
    ("error_division", "{{ 1 / 0 }}"),
    ("error_length_none", "{{ none|length }}"),
    ("error_raise", "{{ raise_exception('custom refusal: ' ~ messages|length) }}"),
    ("error_iterate_int", "{% for v in 5 %}{% endfor %}"),
    ("error_order_types", "{{ [1] < 'a' }}"),
    ("error_generator_length", "{% set g = ([1]|select) %}{{ g|length }}"),
    ("error_tojson_undefined", "{{ u|tojson }}"),
    ("error_namespace_target", "{% set notns = 1 %}{% set notns.a = 2 %}"),
    ("error_unpack", "{% set a, b = [1, 2, 3] %}"),
    ("error_range_too_big", "{{ range(1000000)|length }}"),
    ("error_call_string", "{{ 'abc'() }}"),
    # ---- valid jinja2 outside the subset: the engine must refuse ----
    ("beyond_str_format", "{{ '{}-{}'.format(1, 2) }}", True),
    ("beyond_percent_format", "{{ '%s!' % 'x' }}", True),
    ("beyond_upper_non_ascii", "{{ 'straße'|upper }}", True),
    ("beyond_dictsort", "{{ d|dictsort }}", True),
    ("beyond_call_block", "{% macro m() %}{{ caller() }}{% endmacro %}{% call m() %}x{% endcall %}", True),
    ("beyond_recursive_loop", "{% for v in [[1], [2]] recursive %}{{ v }}{% endfor %}", True),
    ("beyond_big_int", "{{ 2 ** 64 }}", True),
    ("beyond_big_int_filter", "{{ 1e20|int }}", True),
    ("beyond_lazy_loop_filter", "{% set ns = namespace(done=false) %}{% for m in messages if not ns.done %}{{ m.role }}"
                                "{% set ns.done = true %}{% endfor %}", True),
]
