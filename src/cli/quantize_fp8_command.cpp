// seam quantize-fp8: writes an FP8 checkpoint of a float model folder in one of the formats
// seam loads (model/fp8_export.h).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "cli/commands.h"
#include "core/error.h"
#include "model/fp8_export.h"

namespace seam::cli {

int quantize_fp8_command(int argc, char** argv) {
  CLI::App app("seam quantize-fp8: an FP8 checkpoint of a float model folder", "seam quantize-fp8");
  std::string src, dst, format = "ct-channel";
  Fp8ExportOptions opt;
  std::string names;
  for (const auto& [n, f] : fp8_export_formats()) names += (names.empty() ? "" : " | ") + n;
  app.add_option("--model-path", src, "float model folder (one model.safetensors)")->required();
  app.add_option("--out", dst, "output folder")->required();
  app.add_option("--format", format, names);
  app.add_option("--input-scale", opt.input_scale, "static activation scale of the static formats (default 8/448)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  bool found = false;
  for (const auto& [n, f] : fp8_export_formats())
    if (n == format) opt.format = f, found = true;
  SEAM_CHECK(found, "--format: '", format, "' is not one of ", names);
  export_fp8_checkpoint(src, dst, opt);
  std::printf("wrote %s (%s)\n", dst.c_str(), format.c_str());
  return 0;
}

}  // namespace seam::cli
