#include "inspect_table.h"

#include <algorithm>
#include <cstdio>

namespace df11::app {

void TextTable::print(std::ostream& out, size_t indent) const {
  std::vector<size_t> width(columns_.size());
  for (size_t c = 0; c < columns_.size(); ++c) width[c] = columns_[c].title.size();
  for (const auto& row : rows_) {
    for (size_t c = 0; c < std::min(row.size(), columns_.size()); ++c) {
      width[c] = std::max(width[c], row[c].size());
    }
  }
  const auto line = [&](const std::vector<std::string>& cells) {
    std::string text(indent, ' ');
    for (size_t c = 0; c < columns_.size(); ++c) {
      const std::string cell = c < cells.size() ? cells[c] : "";
      const std::string pad(width[c] - cell.size(), ' ');
      if (c > 0) text += "  ";
      text += columns_[c].align == Align::kLeft ? cell + pad : pad + cell;
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    out << text << "\n";
  };
  std::vector<std::string> titles;
  for (const Column& c : columns_) titles.push_back(c.title);
  line(titles);
  size_t total = indent;
  for (size_t c = 0; c < width.size(); ++c) total += width[c] + (c > 0 ? 2 : 0);
  for (const auto& row : rows_) {
    if (row.empty()) {
      out << std::string(indent, ' ') << std::string(total - indent, '-') << "\n";
    } else {
      line(row);
    }
  }
}

std::string group_digits(uint64_t value) {
  std::string digits = std::to_string(value);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string fixed(double value, int decimals) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

std::string percent(double fraction) { return fixed(100.0 * fraction, 2) + "%"; }

}  // namespace df11::app
