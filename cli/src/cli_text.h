// Small pieces of the command line's text: plurals, "did you mean", the progress line and
// the terminal's width.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "df11/count_text.h"  // count_of

namespace df11::app {

// Names as people count: digit runs compare as numbers ("layers.9" < "layers.10"), the rest
// bytewise.
bool natural_less(std::string_view a, std::string_view b);

// The candidate closest to `word` by edit distance, if it is close enough to be a likely typo
// (at most a third of the word's length, at least 1, at most 3 edits); else the one candidate
// `word` abbreviates ("--out" for "--output"; two letters at least); empty otherwise.
std::string closest_match(std::string_view word, const std::vector<std::string>& candidates);

// One line of the progress bar, at most `columns - 1` characters wide (the last column stays
// free so that no terminal wraps it): "label [####....]  42%  1.2 GB/2.5 GB  1.1 GB/s  ETA 3s".
// Parts are dropped from the right as the width shrinks, then the bar narrows; the label and
// percentage stay down to 20 columns.
std::string progress_line(std::string_view label, uint64_t done, uint64_t total, double seconds,
                          int columns);

// Columns of the terminal on `fd` (TIOCGWINSZ), else $COLUMNS, else 80.
int terminal_columns(int fd);

}  // namespace df11::app
