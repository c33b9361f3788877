// Cairo painter: draws a Scene into PNG, SVG or PDF files with cairo's own surfaces (the headless output path).
#pragma once

#include <optional>
#include <string>

#include "runtime/core/status.hpp"
#include "viz/scene.hpp"

typedef struct _cairo cairo_t;

namespace tl::viz {

enum class ImageFormat { png, svg, pdf };

const char* image_format_name(ImageFormat format);
std::optional<ImageFormat> parse_image_format(const std::string& name);  // "png", "svg", "pdf"
// The format named by the file's extension (case-insensitive), or an error naming the ones we write.
Result<ImageFormat> image_format_from_path(const std::string& path);

struct PaintOptions {
  double scale = 1;  // PNG only: pixels per scene unit (2 for crisp text on high-DPI screens)
};

// Paints into an existing cairo context (scene units = the context's user units).
void paint_scene(cairo_t* cr, const Scene& scene);

// Writes `scene` to `path`; the format comes from `format` or else from the extension.
Status write_scene(const Scene& scene, const std::string& path, std::optional<ImageFormat> format = std::nullopt,
                   const PaintOptions& options = {});

}  // namespace tl::viz
