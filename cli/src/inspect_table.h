// A text table with aligned columns for `df11 inspect`: numbers right-aligned, names left.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace df11::app {

class TextTable {
 public:
  enum class Align { kLeft, kRight };
  struct Column {
    std::string title;
    Align align = Align::kRight;
  };

  explicit TextTable(std::vector<Column> columns) : columns_(std::move(columns)) {}
  // Cells beyond the column count are dropped; missing cells are blank.
  void add_row(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }
  void add_separator() { rows_.emplace_back(); }
  // Title row, then rows; columns two spaces apart; `indent` spaces before each line.
  void print(std::ostream& out, size_t indent = 0) const;

 private:
  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;  // empty row: a separator line
};

// 1234567 -> "1,234,567".
std::string group_digits(uint64_t value);
// printf-style fixed decimals: fixed(0.66512, 4) -> "0.6651".
std::string fixed(double value, int decimals);
// 0.0123 -> "1.23%".
std::string percent(double fraction);

}  // namespace df11::app
