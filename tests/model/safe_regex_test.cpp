// SafeRegex (pattern_dict keys, spec 7.3): Python's meaning for the supported subset, the keys
// df11 writes match exactly what std::regex matched, everything else is refused, and
// pathological patterns run in linear time.
#include "df11/safe_regex.h"

#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

#include "df11/grouping.h"
#include "df11/loader_check.h"
#include "df11/model_config.h"
#include "python_regex.h"

namespace df11::app {
namespace {

bool matches(const std::string& pattern, const std::string& text) {
  auto re = SafeRegex::compile(pattern);
  EXPECT_TRUE(re.is_ok()) << pattern << ": " << re.status().to_string();
  return re.is_ok() && re->full_match(text);
}

// Expected results are Python 3's re.fullmatch(pattern, text) is not None.
TEST(SafeRegex, PythonSemantics) {
  struct Case {
    const char* pattern;
    const char* text;
    bool match;
  };
  const Case cases[] = {
      {"lm_head", "lm_head", true},
      {"lm_head", "lm_head2", false},
      {"lm_head", "lm_hea", false},
      {"", "", true},
      {"", "a", false},
      {"model\\.layers\\.\\d+", "model.layers.17", true},
      {"model\\.layers\\.\\d+", "model.layers.", false},
      {"model\\.layers\\.\\d+", "model.layers.1.mlp", false},
      {"model\\.layers\\.\\d+", "modelXlayers.1", false},
      {"model\\.layers\\.(?:0|5|7)", "model.layers.5", true},
      {"model\\.layers\\.(?:0|5|7)", "model.layers.57", false},
      {"model.layers", "modelXlayers", true},  // unescaped '.'
      {".", "\n", false},
      {".", "\xc3\xa9", true},  // one code point
      {"..", "\xc3\xa9", false},
      {"\xc3\xa9+", "\xc3\xa9\xc3\xa9", true},
      {"[^a]", "\n", true},
      {"a|", "", true},
      {"a|", "a", true},
      {"(|a)b", "b", true},
      {"a{", "a{", true},  // a '{' that starts no repeat is a literal
      {"a{1", "a{1", true},
      {"a{}", "a{}", true},
      {"a{x}", "a{x}", true},
      {"a{2}", "aa", true},
      {"a{2}", "aaa", false},
      {"a{2,}", "aaaaa", true},
      {"a{2,}", "a", false},
      {"a{,2}", "", true},
      {"a{,2}", "aaa", false},
      {"a{1,3}", "aaa", true},
      {"a{,}", "aaaa", true},
      {"a{0}", "", true},
      {"a{002}", "aa", true},
      {"a*?", "aaa", true},
      {"a+?", "", false},
      {"a??b", "ab", true},
      {"a{1,2}?", "aa", true},
      {"^a", "a", true},
      {"a^", "a", false},
      {"a$", "a", true},
      {"a$", "a\n", false},
      {"a$\n", "a\n", true},  // $ also matches before a final newline
      {"a$$", "a", true},
      {"[]a]", "]", true},
      {"[^]a]", "b", true},
      {"[^]a]", "]", false},
      {"[a-]", "-", true},
      {"[-a]", "-", true},
      {"[\\d-]", "-", true},
      {"[a\\-z]", "-", true},
      {"[a\\-z]", "b", false},
      {"[a-c]", "b", true},
      {"[a-c]", "d", false},
      {"[\\w.]+", "model.layers_3", true},
      {"[\\D]", "a", true},
      {"[\\D]", "3", false},
      {"[.$^(]+", ".$^(", true},
      {"[\\b]", "\b", true},
      {"\\W", "-", true},
      {"\\S\\s\\S", "a\tb", true},
      {"\\s", "\x1c", true},  // Python's str.isspace()
      {"\\x41\\u00e9\\U0001F600", "A\xc3\xa9\xf0\x9f\x98\x80", true},
      {"\\t\\n\\r\\f\\v\\a", "\t\n\r\f\v\a", true},
      {"\\ \\#\\-\\&\\~\\.\\\\", " #-&~.\\", true},
      {"(?P<name>a)b", "ab", true},
      {"(?:ab)+", "abab", true},
      {"(?:ab)+", "aba", false},
      {"(a*)*", "aaaa", true},
      {"(a*)*b", "aaaa", false},
      {"(a|aa)*c", "aaaaac", true},
      {"()*", "", true},
      {"(^)*a", "a", true},
      {"]}", "]}", true},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(matches(c.pattern, c.text), c.match) << "'" << c.pattern << "' on '" << c.text << "'";
  }
  // Bytes that are not UTF-8 are characters no literal matches.
  EXPECT_TRUE(matches("a.b",
                      "a\xff"
                      "b"));
  EXPECT_FALSE(matches("a\\xffb",
                       "a\xff"
                       "b"));
}

void expect_refused(const std::string& pattern, const std::string& why) {
  auto re = SafeRegex::compile(pattern);
  ASSERT_FALSE(re.is_ok()) << pattern;
  EXPECT_EQ(re.status().code(), ErrorCode::kBadConfig) << pattern;
  EXPECT_NE(re.status().message().find(why), std::string::npos)
      << pattern << ": " << re.status().message();
}

TEST(SafeRegex, PythonErrorsAreErrors) {
  expect_refused("*a", "nothing to repeat at offset 0");
  expect_refused("a|*", "nothing to repeat at offset 2");
  expect_refused("^*", "nothing to repeat");
  expect_refused("{1}", "nothing to repeat");
  expect_refused("a**", "multiple repeat at offset 2");
  expect_refused("a{2}{3}", "multiple repeat");
  expect_refused("(ab", "missing ), unterminated subpattern");
  expect_refused("ab)", "unbalanced parenthesis at offset 2");
  expect_refused("[ab", "unterminated character set");
  expect_refused("[a-", "unterminated character set");
  expect_refused("[b-a]", "bad character range");
  expect_refused("[\\d-z]", "bad character range");
  expect_refused("a{3,2}", "min repeat greater than max repeat");
  expect_refused("\\q", "escape \\q is not supported");
  expect_refused("a\\", "bad escape (end of pattern)");
  expect_refused("\\x4", "incomplete hexadecimal escape");
  expect_refused("\\U00110000", "above U+10FFFF");
  expect_refused("(?P<1a>x)", "bad character in group name");
  expect_refused("(?P<n>a)(?P<n>b)", "redefinition of group name");
  expect_refused("(?P<n", "unterminated name");
  expect_refused("a\xff", "not UTF-8 at offset 1");
}

TEST(SafeRegex, OutsideTheSubsetIsRefused) {
  for (const char* p : {"(?=a)a", "(?!b)a", "(?<=a)b", "(?i)a", "(?#note)a", "(?P=n)", "(?>a)"}) {
    expect_refused(p, "extensions other than (?:...) and (?P<name>...) are not supported");
  }
  expect_refused("(a)\\1", "backreferences and octal escapes are not supported");
  expect_refused("\\0", "backreferences and octal escapes");
  expect_refused("[\\1]", "backreferences and octal escapes");
  expect_refused("\\bword", "\\b (word boundary) is not supported");
  expect_refused("\\Aa", "escape \\A is not supported");
  expect_refused("a\\Z", "escape \\Z is not supported");
  expect_refused("\\N{DIGIT ONE}", "escape \\N is not supported");
  expect_refused("a*+", "possessive quantifiers are not supported");
}

TEST(SafeRegex, Limits) {
  ASSERT_TRUE(SafeRegex::compile(std::string(kMaxPatternBytes, 'a')).is_ok());
  expect_refused(std::string(kMaxPatternBytes + 1, 'a'), "more than Max_Pattern_Bytes 4096");
  ASSERT_TRUE(SafeRegex::compile("a{1000}").is_ok());
  expect_refused("a{1001}", "repeat bound 1001 above Max_Repeat_Bound 1000");
  expect_refused("a{0,99999999999999999999}", "above Max_Repeat_Bound");
  expect_refused("(?:a{1000}){1000}", "more than Max_Nfa_States 65536");
  expect_refused("((((a{100}){100}){100}){100})", "more than Max_Nfa_States");
  const std::string deep_ok =
      std::string(kMaxGroupDepth, '(') + "a" + std::string(kMaxGroupDepth, ')');
  EXPECT_TRUE(matches(deep_ok, "a"));
  const std::string deep =
      std::string(kMaxGroupDepth + 1, '(') + std::string(kMaxGroupDepth + 1, ')');
  expect_refused(deep, "groups nested deeper than Max_Group_Depth 100");
  // The deepest a Max_Pattern_Bytes pattern can ask for: refused quickly, no stack overflow.
  expect_refused(std::string(kMaxPatternBytes, '('), "nested deeper");
}

// Patterns that make a backtracking matcher take exponential time, on inputs long enough to
// make that visible. About 0.15 s in a Release build and 1.2 s under ASan; a backtracking
// matcher would not finish the first pattern in a lifetime, so the test's ctest timeout tells
// them apart (no wall-clock bound here, which a loaded machine could miss).
TEST(SafeRegex, PathologicalPatternsRunInBoundedTime) {
  const std::string as(5000, 'a');
  EXPECT_FALSE(matches("(a*)*b", as));
  EXPECT_FALSE(matches("(a|a)*b", as));
  EXPECT_FALSE(matches("(a|aa)*b", as));
  EXPECT_FALSE(matches("(.*)*x", as));
  EXPECT_FALSE(matches("(a+)+b", as));
  EXPECT_TRUE(matches("(a*)*", as));
  EXPECT_FALSE(matches("(?:(?:a*)*)*(?:(?:a*)*)*c", as));
  // The classic: a?^n a^n on a^n (n = 1000, the largest repeat allowed).
  EXPECT_TRUE(matches("(?:a?){1000}a{1000}", std::string(1000, 'a')));
  EXPECT_FALSE(matches("(?:a?){1000}a{1000}", std::string(999, 'a')));
  // A key near Max_Nfa_States on a long module path.
  EXPECT_FALSE(matches("(?:(?:.?){1000}){30}x", std::string(500, 'y')));
}

TEST(SafeRegex, CompiledStatesAreBounded) {
  auto re = SafeRegex::compile("model\\.layers\\.\\d+");
  ASSERT_TRUE(re.is_ok());
  EXPECT_EQ(re->state_count(), 17u);  // spec 7.3 quotes this count
}

TensorEntry bf16(const std::string& name) { return TensorEntry{name, Dtype::kBF16, {8, 8}, 64}; }

// What df11's pattern_dict keys (grouping.cpp) match must not change with the matcher: compare
// with std::regex (ECMAScript), which shares Python's meaning for these keys.
TEST(SafeRegex, Df11KeysMatchWhatStdRegexMatched) {
  std::vector<TensorEntry> tensors{bf16("model.embed_tokens.weight"), bf16("lm_head.weight"),
                                   bf16("model.embed tokens#1.weight"),
                                   bf16("transformer.wte-embed.weight"),
                                   bf16("a+b(c)[d]{e}^$|?*.embed.weight")};
  const std::vector<std::string> subs{"self_attn.q_proj", "mlp.up_proj"};
  for (int l = 0; l < 14; ++l) {
    // Blocks 3 and 11 list their members in another order: alternation keys.
    std::vector<std::string> order = subs;
    if (l == 3 || l == 11) std::swap(order[0], order[1]);
    for (const std::string& sub : order) {
      tensors.push_back(bf16("model.layers." + std::to_string(l) + "." + sub + ".weight"));
      tensors.push_back(bf16("transformer.h." + std::to_string(l) + "." + sub + ".weight"));
    }
  }
  const Grouping g = derive_groups(tensors, GroupBy::kBlock);
  const auto dict = derive_pattern_dict(g.groups, std::vector<bool>(g.groups.size(), true));
  ASSERT_GE(dict.size(), 8u) << dict.dump(2);

  std::vector<std::string> paths{"",
                                 "lm_head",
                                 "lm_headx",
                                 "model.lm_head",
                                 "model.embed_tokens",
                                 "model.embed_tokensx",
                                 "modelXembed_tokens",
                                 "model.embed tokens#1",
                                 "model.embed tokens#",
                                 "transformer.wte-embed",
                                 "a+b(c)[d]{e}^$|?*.embed",
                                 "ab(c)[d]{e}^$|?*.embed",
                                 "model.layers.",
                                 "model.layers.x",
                                 "model.layers.0x",
                                 "model.layers.01",
                                 "model.layers.3.mlp",
                                 "Model.layers.3",
                                 "transformer.h.",
                                 "transformer.h.0.attn"};
  for (const GroupSpec& spec : g.groups) paths.push_back(spec.name);
  for (int l = 0; l < 130; ++l) {
    paths.push_back("model.layers." + std::to_string(l));
    paths.push_back("transformer.h." + std::to_string(l));
  }
  int compared = 0;
  for (const auto& [key, value] : dict.items()) {
    auto safe = SafeRegex::compile(key);
    ASSERT_TRUE(safe.is_ok()) << key << ": " << safe.status().to_string();
    std::regex ecma;
    try {
      ecma = std::regex(key, std::regex::ECMAScript);
    } catch (const std::regex_error&) {
      // libstdc++ refuses some identity escapes Python accepts ("\ "): check the meaning
      // instead: an escaped module path matches exactly itself.
      for (const std::string& path : paths) {
        EXPECT_EQ(safe->full_match(path), python_regex_escape(path) == key) << key << " " << path;
      }
      continue;
    }
    for (const std::string& path : paths) {
      EXPECT_EQ(safe->full_match(path), std::regex_match(path, ecma)) << key << " on " << path;
      ++compared;
    }
  }
  EXPECT_GT(compared, 1000);
}

TEST(LoaderPatterns, MembersAndExclusiveKeys) {
  const nlohmann::ordered_json dict = {{"model\\.layers\\.\\d+", {"mlp.up_proj", "mlp.down_proj"}},
                                       {"lm_head", nlohmann::ordered_json::array()},
                                       {"model\\.layers\\.1\\d", {"x"}}};
  auto patterns = LoaderPatterns::compile(dict, "config.json");
  ASSERT_TRUE(patterns.is_ok()) << patterns.status().to_string();
  auto names = patterns->member_names("model.layers.3");
  ASSERT_TRUE(names.is_ok());
  EXPECT_EQ(*names, (std::vector<std::string>{"model.layers.3.mlp.up_proj.weight",
                                              "model.layers.3.mlp.down_proj.weight"}));
  EXPECT_EQ(*patterns->member_names("lm_head"), std::vector<std::string>{"lm_head.weight"});
  EXPECT_NE(patterns->member_names("model.layers.12").status().message().find("both match it"),
            std::string::npos);
  EXPECT_NE(patterns->member_names("lm_head2").status().message().find("no pattern_dict key"),
            std::string::npos);
}

TEST(LoaderPatterns, HostileConfigsAreRefusedWithTheKey) {
  auto bad = LoaderPatterns::compile({{"model\\.layers\\.(\\d+", nlohmann::ordered_json::array()}},
                                     "config.json");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_EQ(bad.status().code(), ErrorCode::kBadConfig);
  EXPECT_NE(bad.status().message().find(
                "config.json: pattern_dict key 'model\\.layers\\.(\\d+': missing ), unterminated"),
            std::string::npos)
      << bad.status().message();
  // Huge keys: refused by length, the key cut in the message.
  const std::string huge(100000, 'a');
  auto long_key = LoaderPatterns::compile({{huge, nlohmann::ordered_json::array()}}, "config.json");
  ASSERT_FALSE(long_key.is_ok());
  EXPECT_NE(long_key.status().message().find("Max_Pattern_Bytes"), std::string::npos);
  EXPECT_LT(long_key.status().message().size(), 400u);
  // Many keys, each within its limits, too many automaton states together.
  nlohmann::ordered_json many = nlohmann::ordered_json::object();
  // (Keys built with += : GCC 12 warns (-Wrestrict) on "literal" + std::to_string().)
  for (int k = 0; k < 2000; ++k) {
    std::string key = "k";
    key += std::to_string(k) + "a{1000}";
    many[key] = {"x"};
  }
  auto total = LoaderPatterns::compile(many, "config.json");
  ASSERT_FALSE(total.is_ok());
  EXPECT_NE(total.status().message().find("Max_Pattern_Dict_States"), std::string::npos);
  // More than Max_Pattern_Dict_Keys keys: refused before any is compiled.
  nlohmann::ordered_json config;
  config["dfloat11_config"]["pattern_dict"] = nlohmann::ordered_json::object();
  for (size_t k = 0; k <= kMaxPatternDictKeys; ++k) {
    std::string key = "k";
    key += std::to_string(k);
    config["dfloat11_config"]["pattern_dict"][key] = nlohmann::ordered_json::array();
  }
  auto read = read_pattern_dict(config.dump(), "config.json");
  ASSERT_FALSE(read.is_ok());
  EXPECT_NE(read.status().message().find("more than Max_Pattern_Dict_Keys 10000"),
            std::string::npos);
}

}  // namespace
}  // namespace df11::app
