#include "grammar/json_schema_to_grammar.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "core/error.h"
#include "grammar/decimal_range.h"
#include "grammar/integer_range.h"
#include "grammar/json_text.h"
#include "grammar/regex_length.h"
#include "grammar/regex_to_grammar.h"
#include "grammar/schema_all_of.h"
#include "grammar/schema_disjointness.h"
#include "grammar/schema_common.h"
#include "grammar/string_formats.h"

namespace seam::grammar {

namespace {

using json = nlohmann::ordered_json;

// Keywords that constrain instances in ways the grammar does not express.
const std::set<std::string> kUnsupported = {"patternProperties",
                                            "propertyNames",
                                            "minProperties",
                                            "maxProperties",
                                            "dependencies",
                                            "dependentRequired",
                                            "dependentSchemas",
                                            "unevaluatedProperties",
                                            "unevaluatedItems",
                                            "if",
                                            "then",
                                            "else",
                                            "not",
                                            "contains",
                                            "minContains",
                                            "maxContains",
                                            "multipleOf",
                                            "$dynamicRef",
                                            "$recursiveRef",
                                            "additionalItems",
                                            "contentSchema"};

class SchemaConverter {
 public:
  SchemaConverter(const json& root, const JsonSchemaOptions& o) : root_(root), o_(o) {}

  Grammar run() {
    g_.add_rule("root", seq({ws(), convert(root_, "#"), ws()}));
    return std::move(g_);
  }

  Grammar any_object() {
    g_.add_rule("root", seq({ws(), any_rule("object"), ws()}));
    return std::move(g_);
  }

 private:
  [[noreturn]] static void unsupported(const std::string& keyword, const std::string& path,
                                       const std::string& why = "") {
    schema_unsupported(keyword, path, why);
  }
  [[noreturn]] static void invalid(const std::string& path, const std::string& what) { schema_invalid(path, what); }

  // Whitespace between tokens: none in compact mode (spaces come only after , and :).
  Expr ws() { return o_.any_whitespace ? ref(ws_rule()) : empty(); }
  Expr space() { return o_.any_whitespace ? ref(ws_rule()) : optional(literal(" ")); }
  Expr comma() { return seq({ws(), literal(","), space()}); }
  Expr colon() { return seq({ws(), literal(":"), space()}); }
  std::string ws_rule() {
    if (!g_.has_rule("ws")) g_.add_rule("ws", star(char_class({{' ', ' '}, {'\t', '\t'}, {'\n', '\n'}, {'\r', '\r'}})));
    return "ws";
  }

  // Rules of the generic JSON grammar (any value), added on first use.
  Expr any_rule(const std::string& what) {
    const std::string name = "json_" + what;
    if (g_.has_rule(name)) return ref(name);
    if (what == "value") {
      g_.add_rule(name, empty());  // placeholder so that recursion finds the name
      Expr body = choice({any_rule("object"), any_rule("array"), any_rule("string"), any_rule("number"),
                          literal("true"), literal("false"), literal("null")});
      set_rule(name, std::move(body));
    } else if (what == "object") {
      g_.add_rule(name, empty());
      Expr member = seq({any_rule("string"), colon(), any_rule("value")});
      set_rule(name,
               seq({literal("{"), ws(), optional(seq({member, star(seq({comma(), member}))})), ws(), literal("}")}));
    } else if (what == "array") {
      g_.add_rule(name, empty());
      Expr v = any_rule("value");
      set_rule(name, seq({literal("["), ws(), optional(seq({v, star(seq({comma(), v}))})), ws(), literal("]")}));
    } else if (what == "string") {
      g_.add_rule(name, seq({literal("\""), star(json_any_string_char()), literal("\"")}));
    } else if (what == "number") {
      g_.add_rule(name, number_expr());
    } else if (what == "integer") {
      g_.add_rule(name, integer_range(std::nullopt, std::nullopt));
    }
    return ref(name);
  }

  void set_rule(const std::string& name, Expr body) {
    if (Rule* r = g_.find_rule(name)) r->body = std::move(body);
  }

  static Expr number_expr() {
    const Expr digits = plus(char_class({{'0', '9'}}));
    Expr intpart = choice({literal("0"), seq({char_class({{'1', '9'}}), star(char_class({{'0', '9'}}))})});
    return seq(
        {optional(literal("-")), std::move(intpart), optional(seq({literal("."), digits})),
         optional(
             seq({char_class({{'e', 'e'}, {'E', 'E'}}), optional(char_class({{'+', '+'}, {'-', '-'}})), digits}))});
  }

  // ---- dispatch ----

  Expr convert(const json& s, const std::string& path) {
    // Each level of a schema is a level of this recursion; the text's own nesting is bounded
    // (k_max_json_depth) but $refs chain past it: a chain of 20,000 $defs each referring to the
    // next overflowed the stack of the compiling thread.
    struct Depth {
      int& d;
      explicit Depth(int& x) : d(++x) {}
      ~Depth() { --d; }
    } depth(depth_);
    if (depth_ > kMaxConvertDepth)
      unsupported("$ref", path, "schemas nested deeper than " + std::to_string(kMaxConvertDepth) +
                                     " levels, counting each reference followed, are not supported");
    if (s.is_boolean()) {
      if (s.get<bool>()) return any_rule("value");
      invalid(path, "the schema 'false' matches nothing");
    }
    if (!s.is_object()) invalid(path, "a schema must be an object or a boolean");
    for (const auto& [k, v] : s.items())
      if (kUnsupported.count(k)) unsupported(k, path);
    if (s.contains("$ref")) return convert_ref(s, path);
    // const / enum beside a type (or const beside an enum) accept only the values that are
    // also of that type (in that enum): {"enum": [3, "a"], "type": "integer"} is 3 alone.
    if (s.contains("const")) {
      check_only(s, path, "const", {"const", "type", "enum"});
      const json& c = s["const"];
      if (!value_has_type(s, c, path)) invalid(path, "its const is not of its type");
      if (s.contains("enum") && (!s["enum"].is_array() || std::find(s["enum"].begin(), s["enum"].end(), c) == s["enum"].end()))
        invalid(path, "its const is not in its enum");
      return literal(c.dump());
    }
    if (s.contains("enum")) {
      check_only(s, path, "enum", {"enum", "type"});
      const json& e = s["enum"];
      if (!e.is_array() || e.empty()) invalid(path + "/enum", "expected a non-empty array");
      std::vector<Expr> alts;
      for (const json& v : e)
        if (value_has_type(s, v, path)) alts.push_back(literal(v.dump()));
      if (alts.empty()) invalid(path, "no value of its enum is of its type");
      return choice(std::move(alts));
    }
    for (const char* k : {"anyOf", "oneOf"}) {
      if (!s.contains(k)) continue;
      check_only(s, path, k, {k});
      const json& list = s[k];
      if (!list.is_array() || list.empty()) invalid(path + "/" + k, "expected a non-empty array");
      if (std::string(k) == "oneOf") check_disjoint(list, path);
      std::vector<Expr> alts;
      for (size_t i = 0; i < list.size(); ++i)
        alts.push_back(convert(list[i], path + "/" + k + "/" + std::to_string(i)));
      return choice(std::move(alts));
    }
    if (s.contains("allOf")) {
      const json& list = s["allOf"];
      if (!list.is_array() || list.empty()) invalid(path + "/allOf", "expected a non-empty array");
      // One schema alone is that schema; several (or keywords beside it) are merged into one.
      if (list.size() == 1 && only_annotations_besides(s, "allOf")) return convert(list[0], path + "/allOf/0");
      return convert(merge_all_of(s, root_, path, all_of_budget_), path + "/allOf");
    }
    std::vector<std::string> types;
    if (s.contains("type")) {
      types = schema_type_names(s["type"], path);
    } else {
      types = infer_types(s);
      if (types.empty()) return any_rule("value");
    }
    std::vector<Expr> alts;
    for (const std::string& t : types) alts.push_back(convert_typed(s, t, path));
    return choice(std::move(alts));
  }

  // The keywords of s other than `allowed` and annotations are an error (a
  // combination the converter would otherwise drop).
  static void check_only(const json& s, const std::string& path, const std::string& main,
                         const std::set<std::string>& allowed) {
    for (const auto& [k, v] : s.items()) {
      if (allowed.count(k) || is_schema_annotation(k)) continue;
      if (is_known_keyword(k)) unsupported(k, path, "not supported beside '" + main + "'");
    }
  }

  // Whether the JSON value v is of s's "type" (true when s has none). An integer is a number;
  // a number with no fraction (2.0) is an integer, as JSON Schema counts it.
  static bool value_has_type(const json& s, const json& v, const std::string& path) {
    if (!s.contains("type")) return true;
    const std::vector<std::string> types = schema_type_names(s["type"], path);
    const bool integral = v.is_number_integer() || (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>() &&
                                                    std::isfinite(v.get<double>()));
    for (const std::string& name : types) {
      if ((name == "null" && v.is_null()) || (name == "boolean" && v.is_boolean()) ||
          (name == "string" && v.is_string()) || (name == "array" && v.is_array()) ||
          (name == "object" && v.is_object()) || (name == "number" && v.is_number()) || (name == "integer" && integral))
        return true;
    }
    return false;
  }

  static bool only_annotations_besides(const json& s, const std::string& main) {
    for (const auto& [k, v] : s.items())
      if (k != main && !is_schema_annotation(k)) return false;
    return true;
  }

  static bool is_known_keyword(const std::string& k) {
    static const std::set<std::string> known = {"type",
                                                "properties",
                                                "required",
                                                "additionalProperties",
                                                "items",
                                                "prefixItems",
                                                "minItems",
                                                "maxItems",
                                                "uniqueItems",
                                                "enum",
                                                "const",
                                                "anyOf",
                                                "oneOf",
                                                "allOf",
                                                "$ref",
                                                "pattern",
                                                "minLength",
                                                "maxLength",
                                                "format",
                                                "minimum",
                                                "maximum",
                                                "exclusiveMinimum",
                                                "exclusiveMaximum"};
    return known.count(k) > 0;
  }

  static std::vector<std::string> infer_types(const json& s) {
    std::vector<std::string> t;
    auto any = [&](std::initializer_list<const char*> ks) {
      for (const char* k : ks)
        if (s.contains(k)) return true;
      return false;
    };
    if (any({"properties", "required", "additionalProperties"})) t.push_back("object");
    if (any({"items", "prefixItems", "minItems", "maxItems", "uniqueItems"})) t.push_back("array");
    if (any({"pattern", "minLength", "maxLength", "format"})) t.push_back("string");
    if (any({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})) t.push_back("number");
    return t;
  }

  Expr convert_typed(const json& s, const std::string& type, const std::string& path) {
    if (type == "object") return convert_object(s, path);
    if (type == "array") return convert_array(s, path);
    if (type == "string") return convert_string(s, path);
    if (type == "integer") return convert_integer(s, path);
    if (type == "number") return convert_number(s, path);
    if (type == "boolean") return choice({literal("true"), literal("false")});
    if (type == "null") return literal("null");
    invalid(path + "/type", "unknown type '" + type + "'");
  }

  void check_disjoint(const json& list, const std::string& path) const {
    for (size_t i = 0; i < list.size(); ++i)
      for (size_t j = i + 1; j < list.size(); ++j)
        if (!schemas_disjoint(list[i], list[j], root_))
          unsupported("oneOf", path,
                      "alternatives " + std::to_string(i) + " and " + std::to_string(j) +
                          " may both match and exclusivity is not enforced (disjoint types, consts or a "
                          "required discriminator property are; use anyOf otherwise)");
  }

  // ---- $ref ----

  Expr convert_ref(const json& s, const std::string& path) {
    check_only(s, path, "$ref", {"$ref"});
    if (!s["$ref"].is_string()) invalid(path + "/$ref", "expected a string");
    const std::string target = s["$ref"].get<std::string>();
    if (target.empty() || target[0] != '#')
      unsupported("$ref", path, "only local references ('#...') are supported, not '" + target + "'");
    const auto known = ref_rules_.find(target);
    if (known != ref_rules_.end()) return ref(known->second);
    const json* node = &root_;
    std::string pointer = target.substr(1);
    if (!pointer.empty() && pointer[0] != '/')
      unsupported("$ref", path, "anchors ('" + target + "') are not supported");
    size_t at = 1;
    while (at <= pointer.size() && !pointer.empty()) {
      size_t end = pointer.find('/', at);
      if (end == std::string::npos) end = pointer.size();
      // RFC 6901 unescaping in one pass ("~1" is '/', "~0" is '~', so "~01" is "~1"); no
      // string::replace, whose inlined copy trips GCC 12's -Wrestrict false positive.
      std::string token;
      for (size_t i = at; i < end; ++i) {
        if (pointer[i] == '~' && i + 1 < end && (pointer[i + 1] == '0' || pointer[i + 1] == '1')) {
          token += pointer[++i] == '1' ? '/' : '~';
        } else {
          token += pointer[i];
        }
      }
      if (node->is_object() && node->contains(token)) {
        node = &(*node)[token];
      } else if (node->is_array() && !token.empty() && token.size() <= 9 &&
                 token.find_first_not_of("0123456789") == std::string::npos && std::stoul(token) < node->size()) {
        node = &(*node)[std::stoul(token)];
      } else {
        invalid(path + "/$ref", "'" + target + "' points to nothing");
      }
      at = end + 1;
    }
    std::string name = "ref";
    for (char c : target.substr(1)) name += (std::isalnum(static_cast<unsigned char>(c)) ? c : '_');
    name = g_.fresh_name(name);
    ref_rules_[target] = name;
    g_.add_rule(name, empty());  // named before its body: a recursive reference finds it
    Expr body = convert(*node, target);
    set_rule(name, std::move(body));
    return ref(name);
  }

  // ---- objects ----

  Expr property(const std::string& name, const json& schema, const std::string& path) {
    std::string key = "\"";  // appended: `"\"" + std::string&&` trips GCC 12's -Wrestrict false positive
    key += json_escape(name);
    key += '"';
    return seq({literal(key), colon(), convert(schema, path)});
  }

  Expr convert_object(const json& s, const std::string& path) {
    std::vector<std::pair<std::string, const json*>> props;
    std::set<std::string> names;
    if (s.contains("properties")) {
      const json& p = s["properties"];
      if (!p.is_object()) invalid(path + "/properties", "expected an object");
      for (const auto& [k, v] : p.items()) {
        props.push_back({k, &v});
        names.insert(k);
      }
    }
    std::set<std::string> required;
    if (s.contains("required")) {
      const json& r = s["required"];
      if (!r.is_array()) invalid(path + "/required", "expected an array of names");
      for (const json& n : r) {
        if (!n.is_string()) invalid(path + "/required", "expected an array of names");
        required.insert(n.get<std::string>());
      }
    }
    // additionalProperties: nullptr = none allowed, else their schema.
    const json any_schema = true;
    const json* extra = o_.strict_properties ? nullptr : &any_schema;
    if (s.contains("additionalProperties")) {
      const json& a = s["additionalProperties"];
      if (a.is_boolean())
        extra = a.get<bool>() ? &any_schema : nullptr;
      else
        extra = &a;
    }
    for (const std::string& r : required) {
      if (names.count(r)) continue;
      if (extra == nullptr)
        invalid(path + "/required",
                "'" + r + "' is required but not in 'properties' and additional properties are not allowed");
      // A required property known only through additionalProperties: listed explicitly.
      props.push_back({r, extra});
      names.insert(r);
    }
    const std::string ppath = path + "/properties/";
    std::vector<Expr> kv;
    std::vector<bool> req;
    for (const auto& [name, schema] : props) {
      kv.push_back(property(name, *schema,
                            names.count(name) && schema != extra ? ppath + name : path + "/additionalProperties"));
      req.push_back(required.count(name) > 0);
    }
    // Additional members: a key that is none of the listed names, then a value.
    std::optional<Expr> extra_kv;
    if (extra != nullptr) {
      Expr key = seq({literal("\""), key_not_in(std::vector<std::string>(names.begin(), names.end())), literal("\"")});
      extra_kv = seq({std::move(key), colon(), convert(*extra, path + "/additionalProperties")});
    }
    // rest(i): members i.. after at least one was written; first(i): none written yet.
    const size_t n = kv.size();
    std::vector<Expr> rest(n + 1);
    rest[n] = extra_kv ? star(seq({comma(), *extra_kv})) : empty();
    for (size_t i = n; i-- > 0;) {
      Expr m = seq({comma(), kv[i]});
      rest[i] = rule_for("obj_rest", seq({req[i] ? std::move(m) : optional(std::move(m)), rest[i + 1]}));
    }
    Expr first = extra_kv ? optional(seq({*extra_kv, rest[n]})) : empty();
    for (size_t i = n; i-- > 0;) {
      Expr with = seq({kv[i], rest[i + 1]});
      first = req[i] ? std::move(with) : rule_for("obj_first", choice({std::move(with), std::move(first)}));
    }
    return seq({literal("{"), ws(), std::move(first), ws(), literal("}")});
  }

  // Large shared pieces go into rules, so that nested choices do not copy them.
  Expr rule_for(const std::string& stem, Expr body) {
    if (body.kind == Expr::Kind::kEmpty || body.kind == Expr::Kind::kRef) return body;
    const std::string name = g_.fresh_name(stem);
    g_.add_rule(name, std::move(body));
    return ref(name);
  }

  // The contents of a JSON string whose decoded value is none of `names`:
  // it differs from each at its first character that is not a prefix of one,
  // written with canonical escapes up to there (so no escape can spell a name).
  Expr key_not_in(const std::vector<std::string>& names) {
    std::vector<std::u32string> cps;
    for (const std::string& n : names) cps.push_back(decode_utf8(n));
    return not_in(cps, 0);
  }

  Expr not_in(const std::vector<std::u32string>& names, int depth) {
    if (names.empty()) return star(json_any_string_char());
    if (depth > 256) throw Error("JSON Schema: property names are too long");
    std::vector<Expr> alts;
    bool has_empty = false;
    std::map<char32_t, std::vector<std::u32string>> by_first;
    for (const std::u32string& n : names) {
      if (n.empty())
        has_empty = true;
      else
        by_first[n[0]].push_back(n.substr(1));
    }
    if (!has_empty) alts.push_back(empty());
    std::vector<CodeRange> firsts;
    for (const auto& [c, tails] : by_first) firsts.push_back({c, c});
    alts.push_back(seq({json_string_char(char_class(firsts, true).ranges), star(json_any_string_char())}));
    for (const auto& [c, tails] : by_first) alts.push_back(seq({json_string_char({{c, c}}), not_in(tails, depth + 1)}));
    return rule_for("key", choice(std::move(alts)));
  }

  static std::u32string decode_utf8(const std::string& s) {
    std::u32string out;
    for (size_t i = 0; i < s.size();) {
      const unsigned char c = static_cast<unsigned char>(s[i]);
      const int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : 4;
      char32_t cp = n == 1 ? c : c & (0x7F >> n);
      for (int k = 1; k < n && i + k < s.size(); ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
      out.push_back(cp);
      i += n;
    }
    return out;
  }

  // ---- arrays ----

  static std::optional<int> count_keyword(const json& s, const char* k, const std::string& path) {
    if (!s.contains(k)) return std::nullopt;
    const json& v = s[k];
    if (!v.is_number_integer() || v.get<int64_t>() < 0) invalid(path + "/" + k, "expected a non-negative integer");
    if (v.get<int64_t>() > 10000) unsupported(k, path, "counts over 10000 are not supported");
    return static_cast<int>(v.get<int64_t>());
  }

  Expr convert_array(const json& s, const std::string& path) {
    if (s.contains("uniqueItems") && s["uniqueItems"] == true) unsupported("uniqueItems", path);
    const std::optional<int> min_items = count_keyword(s, "minItems", path);
    const std::optional<int> max_items = count_keyword(s, "maxItems", path);
    if (min_items && max_items && *min_items > *max_items) invalid(path, "minItems is over maxItems");
    const json any_schema = true;
    if (s.contains("prefixItems")) {
      const json& p = s["prefixItems"];
      if (!p.is_array()) invalid(path + "/prefixItems", "expected an array");
      const int n = static_cast<int>(p.size());
      const json* rest = &any_schema;  // the items after the tuple (absent: any)
      if (s.contains("items")) {
        if (s["items"].is_array()) unsupported("items", path, "a list of schemas beside prefixItems");
        rest = &s["items"];
      }
      const bool closed = *rest == false;
      const int hi = max_items ? *max_items : (closed ? n : kUnbounded);
      // A tuple is written whole unless minItems allows fewer (JSON Schema would take any prefix;
      // a model asked for a tuple is asked for all of it).
      const int lo = min_items ? *min_items : std::min(n, hi == kUnbounded ? n : hi);
      if (closed && lo > n) invalid(path, "minItems is over the tuple's length with \"items\": false");
      if (hi == 0) return seq({literal("["), ws(), literal("]")});
      // after(i): what follows the i-th element (1-based) once written.
      std::optional<Expr> extra_item;
      if (!closed && (hi == kUnbounded || hi > n)) extra_item = rule_for("item", convert(*rest, path + "/items"));
      Expr after = empty();
      if (extra_item)
        after = repeat(seq({comma(), *extra_item}), std::max(lo - n, 0), hi == kUnbounded ? kUnbounded : hi - n);
      for (int i = std::min(n, hi == kUnbounded ? n : hi) - 1; i >= 1; --i) {
        Expr next = seq({comma(), convert(p[static_cast<size_t>(i)], path + "/prefixItems/" + std::to_string(i)), after});
        after = i >= lo ? optional(std::move(next)) : std::move(next);
      }
      Expr body = n > 0 ? seq({convert(p[0], path + "/prefixItems/0"), after}) : empty();
      if (n == 0 && extra_item)  // prefixItems: [] is the plain items case
        body = seq({*extra_item, repeat(seq({comma(), *extra_item}), std::max(lo - 1, 0), hi == kUnbounded ? kUnbounded : hi - 1)});
      if (lo == 0) body = optional(std::move(body));
      return seq({literal("["), ws(), std::move(body), ws(), literal("]")});
    }
    const json* item_schema = &any_schema;
    if (s.contains("items")) {
      const json& it = s["items"];
      if (it.is_array()) unsupported("items", path, "a list of schemas (use prefixItems)");
      if (it == false) return seq({literal("["), ws(), literal("]")});
      item_schema = &it;
    }
    const int lo = min_items.value_or(0);
    const int hi = max_items ? *max_items : kUnbounded;
    if (hi == 0) return seq({literal("["), ws(), literal("]")});
    const Expr item = rule_for("item", convert(*item_schema, path + "/items"));
    Expr body = seq({item, repeat(seq({comma(), item}), std::max(lo - 1, 0), hi == kUnbounded ? kUnbounded : hi - 1)});
    if (lo == 0) body = optional(std::move(body));
    return seq({literal("["), ws(), std::move(body), ws(), literal("]")});
  }

  // ---- strings ----

  Expr convert_string(const json& s, const std::string& path) {
    const std::optional<int> min_len = count_keyword(s, "minLength", path);
    const std::optional<int> max_len = count_keyword(s, "maxLength", path);
    if (min_len && max_len && *min_len > *max_len) invalid(path, "minLength is over maxLength");
    std::string pattern;
    bool anchored_from_format = false;
    if (s.contains("format")) {
      if (!s["format"].is_string()) invalid(path + "/format", "expected a string");
      const std::string f = s["format"].get<std::string>();
      pattern = string_format_regex(f);
      if (pattern.empty()) unsupported("format", path, "format '" + f + "' is not supported");
      anchored_from_format = true;
      if (s.contains("pattern")) unsupported("pattern", path, "not supported together with 'format'");
    }
    if (s.contains("pattern")) {
      if (!s["pattern"].is_string()) invalid(path + "/pattern", "expected a string");
      pattern = s["pattern"].get<std::string>();
    }
    if (!pattern.empty() || anchored_from_format) {
      const RegexAst ast = parse_regex(pattern);
      if (min_len || max_len) {
        // Lengths the pattern's own shape already keeps need nothing more (a date's 10
        // characters under maxLength 64); else the exact intersection (regex_length.h).
        LengthRange len = regex_length_range(ast.root);
        if (!ast.anchored_start || !ast.anchored_end) len.max = kUnbounded;  // a search: any characters around
        const int lo = min_len.value_or(0), hi = max_len ? *max_len : kUnbounded;
        const bool kept = lo <= len.min && (hi == kUnbounded || (len.max != kUnbounded && len.max <= hi));
        if (!kept) {
          LengthBoundedPattern b = length_bounded_pattern(ast, lo, hi, g_);
          if (b.status == LengthBoundedPattern::Status::kTooLarge)
            unsupported(min_len ? "minLength" : "maxLength", path, "beside 'pattern' / 'format': " + b.detail);
          if (b.status == LengthBoundedPattern::Status::kEmpty) invalid(path, b.detail);
          return seq({literal("\""), std::move(b.expr), literal("\"")});
        }
      }
      // JSON Schema's pattern is a search: unanchored ends take any characters.
      std::vector<Expr> parts{literal("\"")};
      if (!ast.anchored_start) parts.push_back(star(json_any_string_char()));
      parts.push_back(regex_node_to_expr(ast.root, /*json_string=*/true));
      if (!ast.anchored_end) parts.push_back(star(json_any_string_char()));
      parts.push_back(literal("\""));
      return seq(std::move(parts));
    }
    if (!min_len && !max_len) return any_rule("string");
    return seq({literal("\""), repeat(json_any_string_char(), min_len.value_or(0), max_len ? *max_len : kUnbounded),
                literal("\"")});
  }

  // ---- numbers ----

  struct Bounds {
    std::optional<double> lo, hi;
    bool lo_exclusive = false, hi_exclusive = false;
  };

  static Bounds bounds(const json& s, const std::string& path) {
    Bounds b;
    auto number = [&](const char* k) {
      if (!s[k].is_number()) invalid(path + "/" + k, "expected a number");
      return s[k].get<double>();
    };
    if (s.contains("minimum")) b.lo = number("minimum");
    if (s.contains("maximum")) b.hi = number("maximum");
    for (const char* k : {"exclusiveMinimum", "exclusiveMaximum"}) {
      if (!s.contains(k)) continue;
      const bool is_min = k[9] == 'M' && k[10] == 'i';
      if (s[k].is_boolean()) {  // draft 4: modifies minimum / maximum
        (is_min ? b.lo_exclusive : b.hi_exclusive) = s[k].get<bool>();
        continue;
      }
      const double v = number(k);
      if (is_min) {
        if (!b.lo || v >= *b.lo) b.lo = v, b.lo_exclusive = true;
      } else {
        if (!b.hi || v <= *b.hi) b.hi = v, b.hi_exclusive = true;
      }
    }
    return b;
  }

  Expr convert_integer(const json& s, const std::string& path) {
    const Bounds b = bounds(s, path);
    if (!b.lo && !b.hi) return any_rule("integer");
    constexpr double kLimit = 1e15;  // exact in a double
    std::optional<int64_t> lo, hi;
    if (b.lo) {
      if (std::fabs(*b.lo) > kLimit) unsupported("minimum", path, "bounds beyond 1e15 are not supported");
      lo = static_cast<int64_t>(b.lo_exclusive ? std::floor(*b.lo) + 1 : std::ceil(*b.lo));
    }
    if (b.hi) {
      if (std::fabs(*b.hi) > kLimit) unsupported("maximum", path, "bounds beyond 1e15 are not supported");
      hi = static_cast<int64_t>(b.hi_exclusive ? std::ceil(*b.hi) - 1 : std::floor(*b.hi));
    }
    if (lo && hi && *lo > *hi) invalid(path, "no integer lies within minimum and maximum");
    return integer_range(lo, hi);
  }

  Expr convert_number(const json& s, const std::string& path) {
    const Bounds b = bounds(s, path);
    if (!b.lo && !b.hi) return any_rule("number");
    return decimal_range(NumberBounds{b.lo, b.hi, b.lo_exclusive, b.hi_exclusive}, path);
  }

  const json& root_;
  JsonSchemaOptions o_;
  Grammar g_;
  std::map<std::string, std::string> ref_rules_;  // $ref target -> rule name
  static constexpr int kMaxConvertDepth = 512;
  int depth_ = 0;  // convert()'s current depth
  AllOfBudget all_of_budget_;                      // merge_all_of's, for the whole schema
};

}  // namespace

Grammar json_schema_to_grammar(const nlohmann::ordered_json& schema, const JsonSchemaOptions& options) {
  return SchemaConverter(schema, options).run();
}

Grammar json_schema_to_grammar(std::string_view schema_text, const JsonSchemaOptions& options) {
  nlohmann::ordered_json schema;
  try {
    schema = nlohmann::ordered_json::parse(schema_text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("JSON Schema is not valid JSON: ") + e.what());
  }
  return json_schema_to_grammar(schema, options);
}

Grammar json_object_grammar(const JsonSchemaOptions& options) {
  return SchemaConverter(nlohmann::ordered_json::object(), options).any_object();
}

}  // namespace seam::grammar
