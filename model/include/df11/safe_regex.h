// pattern_dict keys are Python regular expressions read from an untrusted config.json.
// std::regex backtracks: "(a*)*b" takes exponential time, and long inputs overflow its
// recursion. SafeRegex compiles the subset of Python's syntax that pattern_dict keys use
// (spec 7.3) into a Thompson NFA and simulates it: time O(text length x states), memory
// O(states), and no recursion that depends on the pattern beyond Max_Group_Depth nested
// groups or on the text at all.
//
// Supported, with Python's meaning (re.fullmatch, no flags):
//   literals (UTF-8 text matched by code point); '.' (anything but '\n'); ^ and $ (as Python
//   without MULTILINE: $ also matches before a final '\n');
//   escapes: \ before any ASCII character that is not a letter or digit (\. \- \# \\ ...),
//   \t \n \r \f \v \a, \xHH, \uHHHH, \UHHHHHHHH, and the classes \d \D \w \W \s \S;
//   classes [...]: ranges, leading ^ for negation, ']' first or '-' first/last as literals,
//   the escapes above and \b (backspace);
//   groups ( ), (?: ), (?P<name> ); alternation |;
//   quantifiers * + ? {m} {m,} {,n} {m,n} and their lazy forms (*? ...: laziness cannot
//   change whether a full match exists); a '{' that does not start a repeat is a literal.
// \d \w \s are ASCII here (Python's also match other Unicode digits, letters and spaces);
// module paths are ASCII in practice. Everything else Python accepts (backreferences,
// lookaround, inline flags, \b \B \A \Z, possessive quantifiers, (?#...), \N{...}, octal
// escapes) is refused, never guessed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "df11/status.h"

namespace df11::app {

// spec 7.3 limits on one pattern_dict key.
inline constexpr size_t kMaxPatternBytes = 4096;   // Max_Pattern_Bytes
inline constexpr size_t kMaxNfaStates = 65'536;    // Max_Nfa_States
inline constexpr uint32_t kMaxRepeatBound = 1000;  // Max_Repeat_Bound ({m,n}: m, n <= this)
inline constexpr int kMaxGroupDepth = 100;         // Max_Group_Depth (nested groups)

class SafeRegex {
 public:
  // kBadConfig "<what is wrong> at offset <byte>" for a pattern outside the subset, one that
  // Python itself would reject, or one over a limit. Callers prefix the file and the key.
  static Result<SafeRegex> compile(std::string_view pattern);

  // re.fullmatch(pattern, text) is not None. Bytes of `text` that are not UTF-8 are each one
  // character that only '.' and negated classes match.
  bool full_match(std::string_view text) const;

  size_t state_count() const { return states_.size(); }

  // Internal representation, public for the compiler in safe_regex.cpp.
  struct CharSet {
    uint64_t ascii[2] = {0, 0};  // membership of code points 0..127 (negation folded in)
    std::vector<std::pair<uint32_t, uint32_t>> ranges;  // code points >= 128: sorted, inclusive
    bool contains(uint32_t cp) const;
  };
  struct State {
    enum Kind : uint8_t { kChar, kSet, kSplit, kBegin, kEnd, kMatch };
    Kind kind = kMatch;
    uint32_t value = 0;  // kChar: code point; kSet: index into sets_
    uint32_t out = 0;    // next state (kChar, kSet, kBegin, kEnd, first branch of kSplit)
    uint32_t out1 = 0;   // second branch of kSplit
  };

 private:
  std::vector<State> states_;
  std::vector<CharSet> sets_;
  uint32_t start_ = 0;
};

}  // namespace df11::app
