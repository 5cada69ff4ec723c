#include "grammar/string_formats.h"

#include <initializer_list>
#include <string_view>

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

// The pieces joined in order. Regexes here are built with cat, not chains of operator+: GCC 12
// warns of a false overlap (-Wrestrict) in `"(" + std::string&&`, an insert at the front.
std::string cat(std::initializer_list<std::string_view> parts) {
  std::string out;
  for (std::string_view p : parts) out.append(p);
  return out;
}

std::string ipv4_regex() {
  const std::string octet = "(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])";
  return cat({"(", octet, "\\.){3}", octet});
}

// RFC 3986's IPv6address (RFC 4291's text forms, the last 32 bits possibly as IPv4; no zone).
std::string ipv6_regex() {
  const std::string h16 = "[0-9A-Fa-f]{1,4}";
  const std::string ls32 = cat({"(", h16, ":", h16, "|", ipv4_regex(), ")"});
  auto groups = [&](int n) { return cat({"(", h16, ":){", std::to_string(n), "}"}); };
  // ((h16:){0,k}h16)? : up to k + 1 groups before the "::"
  auto before = [&](int k) { return cat({"((", h16, ":){0,", std::to_string(k), "}", h16, ")?"}); };
  return cat({"(", groups(6), ls32,                           // 8 groups, no "::"
              "|::", groups(5), ls32,                         //
              "|(", h16, ")?::", groups(4), ls32,             //
              "|", before(1), "::", groups(3), ls32,          //
              "|", before(2), "::", groups(2), ls32,          //
              "|", before(3), "::", h16, ":", ls32,           //
              "|", before(4), "::", ls32,                     //
              "|", before(5), "::", h16,                      //
              "|", before(6), "::)"});
}

// RFC 1123 host names: letters, digits and inner hyphens, labels of at most 63 characters, at
// most 253 in all, never the dotted-decimal form of an address (#.#.#.#). Kept by the shape
// rather than counted: a first label of up to 63, at most 7 more of up to 25 each (63 + 7 * 26 =
// 245), the last label beginning with a letter (so no all-numeric form) -- stricter than the RFC,
// never looser.
std::string hostname_regex() {
  auto label = [](std::string_view first, int max) {
    return cat({first, "([A-Za-z0-9-]{0,", std::to_string(max - 2), "}[A-Za-z0-9])?"});
  };
  const std::string any = "[A-Za-z0-9]", letter = "[A-Za-z]";
  return cat({"(", label(letter, 63), "|", label(any, 63), "(\\.", label(any, 25), "){0,6}\\.", label(letter, 25), ")"});
}

// RFC 3339 Appendix A's ISO 8601 durations: P[nY[nM[nD]]|nM[nD]|nD][T(nH[nM[nS]]|nM[nS]|nS)], or PnW.
std::string duration_regex() {
  const std::string n = "[0-9]+";
  const std::string date = cat({"(", n, "Y(", n, "M(", n, "D)?)?|", n, "M(", n, "D)?|", n, "D)"});
  const std::string time = cat({"T(", n, "H(", n, "M(", n, "S)?)?|", n, "M(", n, "S)?|", n, "S)"});
  return cat({"P(", n, "W|", date, "(", time, ")?|", time, ")"});
}

// RFC 3986's URI (absolute, with an optional fragment) and, with `relative`, the relative
// reference's part after the scheme would be. Hosts are reg-names (IPv4 is one); bracketed IP
// literals are not produced.
std::string uri_part(bool relative) {
  // Class contents; each class below ends with "-" (unreserved's hyphen), where it is a literal.
  const std::string unreserved = "A-Za-z0-9._~", sub_delims = "!$&'()*+,;=";
  const std::string pct = "%[0-9A-Fa-f]{2}";
  auto chars = [&](std::string_view extra) { return cat({"([", unreserved, sub_delims, extra, "-]|", pct, ")"}); };
  const std::string pchar = chars(":@");
  const std::string authority = cat({"(", chars(":"), "*@)?", chars(""), "*(:[0-9]*)?"});
  const std::string path_abempty = cat({"(/", pchar, "*)*"});
  const std::string path_absolute = cat({"/(", pchar, "+(/", pchar, "*)*)?"});
  const std::string rest = relative ? cat({chars("@"), "+(/", pchar, "*)*"})  // path-noscheme
                                    : cat({pchar, "+(/", pchar, "*)*"});      // path-rootless
  const std::string tail = cat({"(\\?", chars(":@/?"), "*)?(#", chars(":@/?"), "*)?"});
  return cat({"(//", authority, path_abempty, "|", path_absolute, "|", rest, "|)", tail});
}

std::string uri_regex() { return cat({"[A-Za-z][A-Za-z0-9+.-]*:", uri_part(false)}); }

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
  if (format == "ipv4") return anchored(ipv4_regex());
  if (format == "ipv6") return anchored(ipv6_regex());
  if (format == "hostname") return anchored(hostname_regex());
  if (format == "duration") return anchored(duration_regex());
  if (format == "uri") return anchored(uri_regex());
  if (format == "uri-reference") return anchored(cat({"(", uri_regex(), "|", uri_part(true), ")"}));
  return "";
}

}  // namespace seam::grammar
