#include "grammar/string_formats.h"

namespace seam::grammar {

namespace {

std::string date_regex() {
  const std::string year = "[0-9]{4}";
  // Leap years: divisible by 4 but not by 100 unless by 400.
  const std::string leap = "([0-9]{2}(0[48]|[2468][048]|[13579][26])|(0[48]|[2468][048]|[13579][26])00)";
  const std::string month_day =
      "((0[13578]|1[02])-(0[1-9]|[12][0-9]|3[01])|(0[469]|11)-(0[1-9]|[12][0-9]|30)|02-(0[1-9]|1[0-9]|2[0-8]))";
  return "(" + year + "-" + month_day + "|" + leap + "-02-29)";
}

std::string time_regex() {
  return "([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\\.[0-9]+)?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])";
}

// "^" + body + "$", appended in order: `"^" + std::string&&` (an insert at 0) trips
// GCC 12's -Wrestrict false positive.
std::string anchored(const std::string& body) {
  std::string out;
  out.reserve(body.size() + 2);
  out += '^';
  out += body;
  out += '$';
  return out;
}

}  // namespace

std::string string_format_regex(const std::string& format) {
  if (format == "date") return anchored(date_regex());
  if (format == "time") return anchored(time_regex());
  if (format == "date-time") return anchored(date_regex() + "T" + time_regex());
  if (format == "email") {
    const std::string atom = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+";
    const std::string label = "[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?";
    return "^" + atom + "(\\." + atom + ")*@" + label + "(\\." + label + ")+$";
  }
  if (format == "uuid") return "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$";
  if (format == "ipv4") {
    const std::string octet = "(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])";
    return "^(" + octet + "\\.){3}" + octet + "$";
  }
  return "";
}

}  // namespace seam::grammar
