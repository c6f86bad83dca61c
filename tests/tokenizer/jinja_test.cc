// Expected strings are what Jinja2 3.1, configured as transformers configures
// it (tests/tokenizer/reference/render_chat.py), renders.
#include "tokenizer/jinja/template.h"

#include <gtest/gtest.h>

namespace skrull::jinja {
namespace {

std::string Render(const std::string& source, ValueDict vars = {}) {
  auto t = Template::Parse(source);
  if (!t.ok()) return "PARSE ERROR: " + t.status().message();
  auto out = (*t)->Render(vars);
  if (!out.ok()) return "ERROR: " + out.status().message();
  return out->text;
}

Value Messages() {
  return Value::FromJson(nlohmann::ordered_json::parse(
      R"([{"role": "user", "content": "hi"}, {"role": "assistant", "content": " yo "}])"));
}

TEST(Jinja, TrimBlocksAndLstripBlocksAsTransformers) {
  EXPECT_EQ(Render("{% if true %}\n  x\n{% endif %}\n"), "  x\n");
  EXPECT_EQ(Render("a\n    {% if true %}b{% endif %}\nc"), "a\nbc");
  EXPECT_EQ(Render("a  {%- if true -%}  b  {%- endif %}"), "ab");
  EXPECT_EQ(Render("{{ 'x' }}\n{{ 'y' }}"), "x\ny");  // no trim after }}
  EXPECT_EQ(Render("a {# note #}\nb"), "a b");
  EXPECT_EQ(Render("x\n"), "x");  // one trailing newline dropped
}

TEST(Jinja, LoopVariablesAndFilters) {
  EXPECT_EQ(Render("{% for m in messages %}{{ loop.index0 }}{{ loop.first }}{{ loop.last }}"
                   "{{ loop.length }}{{ m.role[0] }};{% endfor %}",
                   {{"messages", Messages()}}),
            "0TrueFalse2u;1FalseTrue2a;");
  EXPECT_EQ(Render("{{ messages[::-1] | map(attribute='role') | join(',') }}",
                   {{"messages", Messages()}}),
            "assistant,user");
  EXPECT_EQ(Render("{% for m in messages if m.role == 'assistant' %}[{{ m.content|trim }}]"
                   "{% else %}none{% endfor %}",
                   {{"messages", Messages()}}),
            "[yo]");
  EXPECT_EQ(Render("{% for i in range(5) %}{% if i == 3 %}{% break %}{% endif %}{{ i }}"
                   "{% endfor %}"),
            "012");
}

TEST(Jinja, NamespaceSurvivesLoopScope) {
  EXPECT_EQ(Render("{% set ns = namespace(n=0) %}{% set x = 1 %}{% for i in [1, 2, 3] %}"
                   "{% set ns.n = ns.n + i %}{% set x = 5 %}{% endfor %}{{ ns.n }},{{ x }}"),
            "6,1");
}

TEST(Jinja, PythonStringMethods) {
  EXPECT_EQ(Render("{{ '<think>a</think>\\n\\nb'.split('</think>')[-1].lstrip('\\n') }}"), "b");
  EXPECT_EQ(Render("{{ ' a b  '.split() }}|{{ 'a,b'.split(',', 1) }}"), "['a', 'b']|['a', 'b']");
  EXPECT_EQ(Render("{{ 'abc'.startswith(('x', 'a')) }}{{ 'user'.title() }}{{ 'ABC'.lower() }}"),
            "TrueUserabc");
  EXPECT_EQ(Render("{{ '\\n\\nx\\n'.strip('\\n') }}|{{ 'aXbX'.replace('X', '-') }}"), "x|a-b-");
}

TEST(Jinja, ValuesPrintAsPython) {
  EXPECT_EQ(Render("{{ none }} {{ true }} {{ 1.0 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 / 2 }}"),
            "None True 1.0 3 -4 3.5");
  EXPECT_EQ(Render("{{ {'a': [1, 'x', none]} }}"), "{'a': [1, 'x', None]}");
  EXPECT_EQ(Render("{{ {'a': 1, 'b': 'é'} | tojson }}|{{ [1, 2] | tojson(indent=2) }}"),
            "{\"a\": 1, \"b\": \"é\"}|[\n  1,\n  2\n]");
  EXPECT_EQ(Render("{{ undefined_name }}|{{ undefined_name is defined }}"), "|False");
}

TEST(Jinja, ErrorsNameTheLine) {
  EXPECT_EQ(Render("a\n{{ raise_exception('roles must alternate') }}"),
            "ERROR: line 2: raise_exception: roles must alternate");
  EXPECT_EQ(Render("{{ 'a' + 1 }}"),
            "ERROR: line 1: unsupported operand type(s) for +: 'str' and 'int'");
  EXPECT_EQ(Render("{% if x %}"), "PARSE ERROR: unexpected end of template: missing {% endif %}");
  EXPECT_EQ(Render("{% include 'x' %}"),
            "PARSE ERROR: line 1: the tag {% include %} is not supported by this chat-template "
            "interpreter");
  EXPECT_EQ(Render("{{ x.y.z }}"), "ERROR: line 1: 'x' is undefined");
  EXPECT_EQ(Render("{{ m.missing.z }}", {{"m", Value::Dict({})}}),
            "ERROR: line 1: 'dict object' has no attribute 'missing'");
}

TEST(Jinja, LimitsStopRunawayTemplates) {
  auto t = Template::Parse(
      "{% for i in range(1000) %}{% for j in range(1000) %}{% endfor %}"
      "{% endfor %}");
  ASSERT_TRUE(t.ok());
  RenderOptions options;
  options.limits.max_steps = 10000;
  auto out = (*t)->Render({}, options);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().message(),
            "line 1: the rendering took over 10000 steps (spec.data.templateMaxSteps; a step is "
            "one expression, one item or 16 bytes of work)");
}

TEST(Jinja, ProvenanceFollowsSubstrings) {
  TaggedString content;
  content.text = "<think>r</think>\n\nanswer";
  content.spans = {{0, static_cast<uint32_t>(content.text.size()), 7}};
  auto t = Template::Parse("[{{ c.split('</think>')[-1].lstrip('\\n') }}]");
  ASSERT_TRUE(t.ok());
  auto out = (*t)->Render({{"c", Value::String(content)}});
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->text, "[answer]");
  ASSERT_EQ(out->spans.size(), 1u);
  EXPECT_EQ(out->spans[0].begin, 1u);
  EXPECT_EQ(out->spans[0].end, 7u);
  EXPECT_EQ(out->spans[0].tag, 7);
}

}  // namespace
}  // namespace skrull::jinja
