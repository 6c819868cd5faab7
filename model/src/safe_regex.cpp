#include "df11/safe_regex.h"

#include <algorithm>
#include <set>

#include "df11/utf8.h"

namespace df11::app {
namespace {

using CharSet = SafeRegex::CharSet;
using State = SafeRegex::State;

constexpr uint32_t kInfinite = UINT32_MAX;
// Text bytes that are not UTF-8 become code points above Unicode (one per byte value), so
// that no literal matches them and '.' does.
constexpr uint32_t kNotUtf8Base = 0x110000;
constexpr uint32_t kUniverseEnd = kNotUtf8Base + 0xff;  // inclusive

using Ranges = std::vector<std::pair<uint32_t, uint32_t>>;  // inclusive, any order

// Sorted, merged.
Ranges normalized(Ranges r) {
  std::sort(r.begin(), r.end());
  Ranges out;
  for (const auto& [lo, hi] : r) {
    if (!out.empty() && lo <= out.back().second + 1) {
      out.back().second = std::max(out.back().second, hi);
    } else {
      out.emplace_back(lo, hi);
    }
  }
  return out;
}

// Everything in [0, kUniverseEnd] that `r` does not cover.
Ranges complement(const Ranges& r) {
  Ranges out;
  uint32_t next = 0;
  for (const auto& [lo, hi] : normalized(r)) {
    if (lo > next) out.emplace_back(next, lo - 1);
    next = hi + 1;
  }
  if (next <= kUniverseEnd) out.emplace_back(next, kUniverseEnd);
  return out;
}

CharSet make_set(const Ranges& r) {
  CharSet set;
  for (const auto& [lo, hi] : normalized(r)) {
    for (uint32_t cp = lo; cp <= hi && cp < 128; ++cp)
      set.ascii[cp / 64] |= uint64_t{1} << (cp % 64);
    if (hi >= 128) set.ranges.emplace_back(std::max<uint32_t>(lo, 128), hi);
  }
  return set;
}

// The ASCII classes \d \w \s (Python's \s also has U+001C..U+001F, which str.isspace() counts).
Ranges class_ranges(uint32_t letter) {
  Ranges r;
  switch (letter | 0x20) {  // lowercase
    case 'd':
      r = {{'0', '9'}};
      break;
    case 'w':
      r = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
      break;
    default:  // 's'
      r = {{'\t', '\r'}, {0x1c, 0x20}};
      break;
  }
  return letter >= 'a' ? r : complement(r);
}

struct Node {
  enum Kind { kEmpty, kChar, kSet, kBegin, kEnd, kConcat, kAlt, kRepeat };
  Kind kind = kEmpty;
  uint32_t value = 0;         // kChar: code point; kSet: index into the set list
  uint32_t min = 0, max = 0;  // kRepeat
  std::vector<Node> children;
};

// One escape or literal inside or outside a class: a code point, or a class (\d ...).
struct Item {
  bool is_class = false;
  uint32_t cp = 0;
  Ranges ranges;
};

// Recursive descent over Python's grammar; recursion only for nested groups, at most
// Max_Group_Depth deep.
class Parser {
 public:
  Parser(std::vector<uint32_t> cps, std::vector<size_t> offsets, std::vector<CharSet>* sets)
      : cps_(std::move(cps)), offsets_(std::move(offsets)), sets_(sets) {}

  Status parse(Node* out) {
    DF11_RETURN_IF_ERROR(parse_alternation(0, out));
    if (!at_end()) return error("unbalanced parenthesis");  // a ')' with no '('
    return Status::ok();
  }

 private:
  bool at_end() const { return pos_ >= cps_.size(); }
  uint32_t peek(size_t ahead = 0) const {
    return pos_ + ahead < cps_.size() ? cps_[pos_ + ahead] : kInfinite;
  }
  uint32_t next() { return cps_[pos_++]; }
  Status error(const std::string& what) const { return error_at(pos_, what); }
  Status error_at(size_t pos, const std::string& what) const {
    return Status(ErrorCode::kBadConfig,
                  what + " at offset " + std::to_string(offsets_[std::min(pos, cps_.size())]));
  }

  Status parse_alternation(int depth, Node* out) {
    Node alt;
    alt.kind = Node::kAlt;
    for (;;) {
      Node seq;
      DF11_RETURN_IF_ERROR(parse_sequence(depth, &seq));
      alt.children.push_back(std::move(seq));
      if (peek() != '|') break;
      next();
    }
    *out = alt.children.size() == 1 ? std::move(alt.children.front()) : std::move(alt);
    return Status::ok();
  }

  Status parse_sequence(int depth, Node* out) {
    Node seq;
    seq.kind = Node::kConcat;
    bool last_is_anchor = false, last_is_repeat = false;
    while (!at_end() && peek() != '|' && peek() != ')') {
      const uint32_t c = peek();
      const size_t at = pos_;
      if (c == '*' || c == '+' || c == '?' || c == '{') {
        uint32_t min = 0, max = kInfinite;
        if (c == '{') {
          bool is_repeat = false;
          DF11_RETURN_IF_ERROR(parse_braces(&is_repeat, &min, &max));
          if (!is_repeat) {  // Python: a '{' that starts no repeat is a literal
            seq.children.push_back(char_node(next()));
            last_is_anchor = last_is_repeat = false;
            continue;
          }
        } else {
          next();
          if (c == '+') min = 1;
          if (c == '?') max = 1;
        }
        if (seq.children.empty() || last_is_anchor) return error_at(at, "nothing to repeat");
        if (last_is_repeat) return error_at(at, "multiple repeat");
        if (peek() == '+') return error_at(at, "possessive quantifiers are not supported");
        if (peek() == '?') next();  // lazy: the same full matches
        Node repeat;
        repeat.kind = Node::kRepeat;
        repeat.min = min;
        repeat.max = max;
        repeat.children.push_back(std::move(seq.children.back()));
        seq.children.back() = std::move(repeat);
        last_is_repeat = true;
        continue;
      }
      Node atom;
      DF11_RETURN_IF_ERROR(parse_atom(depth, &atom));
      last_is_anchor = c == '^' || c == '$';  // not "(^)": Python repeats a group of anchors
      last_is_repeat = false;
      seq.children.push_back(std::move(atom));
    }
    if (seq.children.empty()) {
      *out = Node{};
    } else if (seq.children.size() == 1) {
      *out = std::move(seq.children.front());
    } else {
      *out = std::move(seq);
    }
    return Status::ok();
  }

  // At '{': a repeat {m} {m,} {,n} {m,n} {,} (Python's rules), or not a repeat (position
  // unchanged).
  Status parse_braces(bool* is_repeat, uint32_t* min, uint32_t* max) {
    const size_t start = pos_;
    next();
    std::string lo, hi;
    while (peek() >= '0' && peek() <= '9') lo += static_cast<char>(next());
    bool comma = false;
    if (peek() == ',') {
      next();
      comma = true;
      while (peek() >= '0' && peek() <= '9') hi += static_cast<char>(next());
    }
    if (peek() != '}' || (lo.empty() && !comma)) {  // "{}", "{x", "{1,2": literal '{'
      pos_ = start;
      *is_repeat = false;
      return Status::ok();
    }
    next();
    auto bound = [&](std::string digits, uint32_t* v) -> Status {
      digits.erase(0, std::min(digits.find_first_not_of('0'), digits.size() - 1));
      if (digits.size() > 4 || std::stoul(digits) > kMaxRepeatBound) {
        return error("repeat bound " + digits.substr(0, 12) + " above Max_Repeat_Bound " +
                     std::to_string(kMaxRepeatBound));
      }
      *v = static_cast<uint32_t>(std::stoul(digits));
      return Status::ok();
    };
    *min = 0;
    *max = kInfinite;
    if (!lo.empty()) DF11_RETURN_IF_ERROR(bound(lo, min));
    if (!comma) {
      *max = *min;
    } else if (!hi.empty()) {
      DF11_RETURN_IF_ERROR(bound(hi, max));
    }
    if (*max < *min) return error("min repeat greater than max repeat");
    *is_repeat = true;
    return Status::ok();
  }

  Node char_node(uint32_t cp) {
    Node n;
    n.kind = Node::kChar;
    n.value = cp;
    return n;
  }

  Node set_node(const Ranges& r) {
    Node n;
    n.kind = Node::kSet;
    n.value = static_cast<uint32_t>(sets_->size());
    sets_->push_back(make_set(r));
    return n;
  }

  Status parse_atom(int depth, Node* out) {
    const uint32_t c = next();
    switch (c) {
      case '(':
        return parse_group(depth, out);
      case '[':
        return parse_class(out);
      case '.':
        *out = set_node(complement({{'\n', '\n'}}));
        return Status::ok();
      case '^':
        out->kind = Node::kBegin;
        return Status::ok();
      case '$':
        out->kind = Node::kEnd;
        return Status::ok();
      case '\\': {
        Item item;
        DF11_RETURN_IF_ERROR(parse_escape(/*in_class=*/false, &item));
        *out = item.is_class ? set_node(item.ranges) : char_node(item.cp);
        return Status::ok();
      }
      default:
        *out = char_node(c);
        return Status::ok();
    }
  }

  // After '('.
  Status parse_group(int depth, Node* out) {
    if (depth + 1 > kMaxGroupDepth) {
      return error("groups nested deeper than Max_Group_Depth " + std::to_string(kMaxGroupDepth));
    }
    if (peek() == '?') {
      next();
      const uint32_t kind = at_end() ? 0 : next();
      if (kind == 'P' && peek() == '<') {
        next();
        DF11_RETURN_IF_ERROR(parse_group_name());
      } else if (kind != ':') {
        return error(
            "'(?' extensions other than (?:...) and (?P<name>...) are not supported "
            "(lookaround, flags, backreferences, comments)");
      }
    }
    DF11_RETURN_IF_ERROR(parse_alternation(depth + 1, out));
    if (peek() != ')') return error("missing ), unterminated subpattern");
    next();
    return Status::ok();
  }

  // A Python identifier, then '>'; names are unique.
  Status parse_group_name() {
    std::vector<uint32_t> name;
    while (!at_end() && peek() != '>') name.push_back(next());
    if (at_end()) return error("missing >, unterminated name");
    next();
    const auto word = [](uint32_t c) {
      return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
             (c >= '0' && c <= '9') || c >= 0x80;
    };
    if (name.empty() || (name[0] >= '0' && name[0] <= '9') ||
        !std::all_of(name.begin(), name.end(), word)) {
      return error("bad character in group name");
    }
    if (!group_names_.insert(name).second) return error("redefinition of group name");
    return Status::ok();
  }

  // After '['.
  Status parse_class(Node* out) {
    bool negate = false;
    if (peek() == '^') {
      next();
      negate = true;
    }
    Ranges ranges;
    for (bool first = true;; first = false) {
      if (at_end()) return error("unterminated character set");
      const uint32_t c = next();
      if (c == ']' && !first) break;
      Item lo;
      DF11_RETURN_IF_ERROR(class_item(c, &lo));
      if (peek() == '-' && peek(1) != ']' && peek(1) != kInfinite) {
        next();
        Item hi;
        DF11_RETURN_IF_ERROR(class_item(next(), &hi));
        if (lo.is_class || hi.is_class || lo.cp > hi.cp) return error("bad character range");
        ranges.emplace_back(lo.cp, hi.cp);
      } else if (lo.is_class) {
        ranges.insert(ranges.end(), lo.ranges.begin(), lo.ranges.end());
      } else {
        ranges.emplace_back(lo.cp, lo.cp);
      }
    }
    *out = set_node(negate ? complement(ranges) : ranges);
    return Status::ok();
  }

  Status class_item(uint32_t c, Item* item) {
    if (c == '\\') return parse_escape(/*in_class=*/true, item);
    item->cp = c;
    return Status::ok();
  }

  // After '\'.
  Status parse_escape(bool in_class, Item* item) {
    if (at_end()) return error("bad escape (end of pattern)");
    const uint32_t c = next();
    switch (c) {
      case 'd':
      case 'D':
      case 'w':
      case 'W':
      case 's':
      case 'S':
        item->is_class = true;
        item->ranges = class_ranges(c);
        return Status::ok();
      case 't':
        item->cp = '\t';
        return Status::ok();
      case 'n':
        item->cp = '\n';
        return Status::ok();
      case 'r':
        item->cp = '\r';
        return Status::ok();
      case 'f':
        item->cp = '\f';
        return Status::ok();
      case 'v':
        item->cp = '\v';
        return Status::ok();
      case 'a':
        item->cp = 0x07;
        return Status::ok();
      case 'b':
        if (in_class) {
          item->cp = 0x08;  // backspace inside a class, as in Python
          return Status::ok();
        }
        return error("\\b (word boundary) is not supported");
      case 'x':
        return hex_escape(2, item);
      case 'u':
        return hex_escape(4, item);
      case 'U':
        return hex_escape(8, item);
      default:
        break;
    }
    if (c >= '0' && c <= '9') return error("backreferences and octal escapes are not supported");
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
      // \A \Z \B \N{...} exist in Python but are outside the subset; other letters are
      // errors in Python too.
      return error(std::string("escape \\") + static_cast<char>(c) + " is not supported");
    }
    item->cp = c;  // \. \- \\ \# \  and any non-ASCII character: itself
    return Status::ok();
  }

  Status hex_escape(int digits, Item* item) {
    uint32_t v = 0;
    for (int k = 0; k < digits; ++k) {
      const uint32_t h = peek();
      uint32_t d = 0;
      if (h >= '0' && h <= '9') {
        d = h - '0';
      } else if ((h | 0x20) >= 'a' && (h | 0x20) <= 'f') {
        d = (h | 0x20) - 'a' + 10;
      } else {
        return error("incomplete hexadecimal escape");
      }
      next();
      v = v * 16 + d;
    }
    if (v > 0x10ffff) return error("bad escape: code point above U+10FFFF");
    item->cp = v;
    return Status::ok();
  }

  std::vector<uint32_t> cps_;
  std::vector<size_t> offsets_;  // byte offset of each code point; back() = pattern size
  std::vector<CharSet>* sets_;
  std::set<std::vector<uint32_t>> group_names_;
  size_t pos_ = 0;
};

// Thompson construction, built back to front: emit(node, next) makes the states that match
// `node` and continue at `next`, and returns the entry state. No patch lists; recursion
// follows the AST, whose depth the parser bounds.
class Compiler {
 public:
  explicit Compiler(std::vector<State>* states) : states_(states) {}

  Result<uint32_t> emit(const Node& n, uint32_t next) {
    switch (n.kind) {
      case Node::kEmpty:
        return next;
      case Node::kChar:
        return add(State::kChar, n.value, next);
      case Node::kSet:
        return add(State::kSet, n.value, next);
      case Node::kBegin:
        return add(State::kBegin, 0, next);
      case Node::kEnd:
        return add(State::kEnd, 0, next);
      case Node::kConcat: {
        uint32_t entry = next;
        for (auto it = n.children.rbegin(); it != n.children.rend(); ++it) {
          DF11_ASSIGN_OR_RETURN(entry, emit(*it, entry));
        }
        return entry;
      }
      case Node::kAlt: {
        DF11_ASSIGN_OR_RETURN(uint32_t entry, emit(n.children.back(), next));
        for (size_t k = n.children.size() - 1; k-- > 0;) {
          DF11_ASSIGN_OR_RETURN(const uint32_t branch, emit(n.children[k], next));
          DF11_ASSIGN_OR_RETURN(entry, add(State::kSplit, 0, branch, entry));
        }
        return entry;
      }
      case Node::kRepeat:
        return emit_repeat(n, next);
    }
    return Status(ErrorCode::kInternal, "regex: unknown node");
  }

 private:
  Result<uint32_t> emit_repeat(const Node& n, uint32_t next) {
    const Node& body = n.children.front();
    uint32_t entry = next;
    if (n.max == kInfinite) {
      // body*: a split that loops through the body or leaves.
      DF11_ASSIGN_OR_RETURN(const uint32_t loop, add(State::kSplit, 0, 0, next));
      DF11_ASSIGN_OR_RETURN(const uint32_t body_entry, emit(body, loop));
      (*states_)[loop].out = body_entry;
      entry = loop;
    } else {
      // (max - min) optional copies: body? body? ... (the same full matches as nesting).
      for (uint32_t k = n.min; k < n.max; ++k) {
        DF11_ASSIGN_OR_RETURN(const uint32_t body_entry, emit(body, entry));
        DF11_ASSIGN_OR_RETURN(entry, add(State::kSplit, 0, body_entry, entry));
      }
    }
    for (uint32_t k = 0; k < n.min; ++k) {
      DF11_ASSIGN_OR_RETURN(entry, emit(body, entry));
    }
    return entry;
  }

  Result<uint32_t> add(State::Kind kind, uint32_t value, uint32_t out, uint32_t out1 = 0) {
    if (states_->size() >= kMaxNfaStates) {
      return Status(ErrorCode::kBadConfig, "more than Max_Nfa_States " +
                                               std::to_string(kMaxNfaStates) +
                                               " automaton states (repeats expand their body)");
    }
    states_->push_back(State{kind, value, out, out1});
    return static_cast<uint32_t>(states_->size() - 1);
  }

  std::vector<State>* states_;
};

}  // namespace

bool SafeRegex::CharSet::contains(uint32_t cp) const {
  if (cp < 128) return (ascii[cp / 64] >> (cp % 64)) & 1;
  auto it = std::upper_bound(ranges.begin(), ranges.end(), std::make_pair(cp, UINT32_MAX));
  return it != ranges.begin() && cp <= std::prev(it)->second;
}

Result<SafeRegex> SafeRegex::compile(std::string_view pattern) {
  if (pattern.size() > kMaxPatternBytes) {
    return Status(ErrorCode::kBadConfig, std::to_string(pattern.size()) +
                                             " bytes, more than Max_Pattern_Bytes " +
                                             std::to_string(kMaxPatternBytes));
  }
  std::vector<uint32_t> cps;
  std::vector<size_t> offsets;
  for (size_t i = 0; i < pattern.size();) {
    uint32_t cp = 0;
    const size_t n = utf8_decode(pattern, i, &cp);
    if (n == 0) {
      return Status(ErrorCode::kBadConfig, "not UTF-8 at offset " + std::to_string(i));
    }
    cps.push_back(cp);
    offsets.push_back(i);
    i += n;
  }
  offsets.push_back(pattern.size());
  SafeRegex re;
  try {
    Node root;
    DF11_RETURN_IF_ERROR(Parser(std::move(cps), std::move(offsets), &re.sets_).parse(&root));
    Compiler compiler(&re.states_);
    re.states_.push_back(State{State::kMatch, 0, 0, 0});
    DF11_ASSIGN_OR_RETURN(re.start_, compiler.emit(root, 0));
  } catch (const std::bad_alloc&) {
    return Status(ErrorCode::kResourceLimit, "out of memory compiling a regular expression");
  }
  return re;
}

bool SafeRegex::full_match(std::string_view text) const {
  std::vector<uint32_t> cps;
  cps.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    uint32_t cp = 0;
    const size_t n = utf8_decode(text, i, &cp);
    if (n == 0) {
      cps.push_back(kNotUtf8Base + static_cast<uint8_t>(text[i]));
      ++i;
    } else {
      cps.push_back(cp);
      i += n;
    }
  }
  const size_t end = cps.size();
  // Pike-style simulation without captures: the set of states reachable after each character,
  // each state at most once per step (`mark`), epsilon moves followed with an explicit stack.
  std::vector<size_t> mark(states_.size(), SIZE_MAX);
  std::vector<uint32_t> current, following, stack;
  auto add = [&](std::vector<uint32_t>& list, uint32_t s, size_t pos) {
    stack.push_back(s);
    while (!stack.empty()) {
      const uint32_t t = stack.back();
      stack.pop_back();
      if (mark[t] == pos) continue;
      mark[t] = pos;
      const State& st = states_[t];
      switch (st.kind) {
        case State::kSplit:
          stack.push_back(st.out1);
          stack.push_back(st.out);
          break;
        case State::kBegin:
          if (pos == 0) stack.push_back(st.out);
          break;
        case State::kEnd:  // Python's $: at the end, or before a '\n' that ends the text
          if (pos == end || (pos + 1 == end && cps[pos] == '\n')) stack.push_back(st.out);
          break;
        default:
          list.push_back(t);
      }
    }
  };
  add(current, start_, 0);
  for (size_t i = 0; i < end && !current.empty(); ++i) {
    following.clear();
    for (const uint32_t s : current) {
      const State& st = states_[s];
      const bool ok = st.kind == State::kChar  ? st.value == cps[i]
                      : st.kind == State::kSet ? sets_[st.value].contains(cps[i])
                                               : false;
      if (ok) add(following, st.out, i + 1);
    }
    current.swap(following);
  }
  return std::any_of(current.begin(), current.end(),
                     [&](uint32_t s) { return states_[s].kind == State::kMatch; });
}

}  // namespace df11::app
