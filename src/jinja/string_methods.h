// Python's str methods on UTF-8 strings (whitespace and case by Unicode code
// point), shared by the str methods a template calls and the filters.
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace seam::jinja {

// strip/lstrip/rstrip: `chars` unset strips whitespace (str.isspace), else any of its code points.
std::string py_strip(const std::string& s, const std::optional<std::string>& chars, bool left, bool right);
// split/rsplit: `sep` unset splits on runs of whitespace and drops empty parts; maxsplit < 0: no limit.
std::vector<std::string> py_split(const std::string& s, const std::optional<std::string>& sep, int64_t maxsplit,
                                  bool from_right);
std::vector<std::string> py_splitlines(const std::string& s, bool keepends);
// The result is checked against `max_size` (the output size limit) before it is built: replacing
// '' (between every character) with a long string multiplies the sizes of the two.
std::string py_replace(const std::string& s, const std::string& old, const std::string& repl, int64_t count,
                       size_t max_size);
std::string py_title(const std::string& s);       // str.title()
std::string py_capitalize(const std::string& s);  // str.capitalize()
// Python's str.find in code points (-1 when absent); start/end as code point indices.
int64_t py_find(const std::string& s, const std::string& sub, bool from_right);
int64_t py_count(const std::string& s, const std::string& sub);
// center (left and right), rjust (left), ljust (right): `s` padded with `fill` (one code point) to
// `width` code points. The width comes from the template, so the padded size is checked against
// `max_size` (the output size limit) before it is allocated: 'x'.center(10**12) fails.
std::string py_center(const std::string& s, int64_t width, bool left, bool right, const std::string& fill,
                      size_t max_size);
// `s` repeated n times (none for n <= 0): padding with a fill of any code point.
std::string py_repeat(const std::string& s, int64_t n);

}  // namespace seam::jinja
