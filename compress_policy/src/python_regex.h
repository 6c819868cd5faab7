// pattern_dict keys are Python regular expressions (re.fullmatch in the dfloat11 loader), so
// module paths are escaped exactly as Python's re.escape() does.
#pragma once

#include <string>
#include <string_view>

namespace df11::app {

// Python 3.7+ re.escape(): a backslash before each of ()[]{}?*+-|^$\.&~# and the whitespace
// characters \t\n\r\v\f and space; every other character (letters, digits, '_', non-ASCII)
// is kept as is.
std::string python_regex_escape(std::string_view text);

}  // namespace df11::app
