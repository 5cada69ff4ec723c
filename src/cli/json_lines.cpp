#include "cli/json_lines.h"

#include <istream>
#include <ostream>

namespace seam::cli {

int for_each_line(std::istream& in, std::ostream& err, const std::function<void(const std::string& line)>& handle,
                  const std::function<void(const std::exception& e)>& on_error) {
  std::string line;
  long line_no = 0;
  long n_bad = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      handle(line);
    } catch (const std::exception& e) {
      ++n_bad;
      err << "line " << line_no << ": " << e.what() << '\n' << std::flush;
      if (on_error) on_error(e);
    }
  }
  return n_bad == 0 ? 0 : 1;
}

}  // namespace seam::cli
